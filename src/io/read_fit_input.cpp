// read_fit_input: the rabbit fit tensor (docs/input-reader.md "Datasets") into FitInputData, with the
// validation checklist of docs/input-reader.md "Validation checklist". Order: structure and dtypes first
// (metadata only), then shapes, then values. This unit holds the sequence, the shared checks, the
// requested bin range (docs/input-reader.md "Ranged reads") and the notes on other objects; the
// parts of the file are read by the units listed in fit_input_reader.hpp.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <string>

#include "fit_input_reader.hpp"
#include "rabbit/core/error.hpp"
#include "rabbit/core/logging.hpp"

namespace rabbit {
namespace io {

using h5::DatasetInfo;
using h5::shape_to_string;

std::string unravel(int64_t flat, const std::vector<int64_t>& shape) {
  std::vector<int64_t> idx(shape.size(), 0);
  for (size_t d = shape.size(); d-- > 0;) {
    if (shape[d] > 0) {
      idx[d] = flat % shape[d];
      flat /= shape[d];
    }
  }
  return shape_to_string(idx);
}

std::string format_double(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

FitInputReader::FitInputReader(const std::string& filename, const FitInputReadOptions& options)
    : r_(filename), range_(options.bins), logk_bins_(options.logk_bins), keep_float32_(options.keep_float32) {
  d_.filename = filename;
  if (range_ && logk_bins_)
    throw InputError(filename + ": a ranged read holds the logk of its bins; logk_bins is for full reads");
}

int64_t FitInputReader::logk_row_end() const {
  return logk_bins_ ? std::clamp<int64_t>(*logk_bins_, row_begin_, row_end_) : row_end_;
}

std::pair<int64_t, int64_t> FitInputReader::masked_logk_rows() const {
  if (!logk_bins_ || d_.ranged) return {row_end_, row_end_};
  return {d_.nbins, row_end_};
}

FitInputData FitInputReader::read() {
  check_structure();
  read_names();
  read_meta();
  read_observations();
  read_constraint_weights();
  if (d_.sparse) {
    read_sparse_tensors();
  } else {
    read_dense_tensors();
  }
  read_mc_stat();
  read_beta_variations();
  read_external_terms();
  note_other_objects();
  derive_channels();
  check_names();
  return std::move(d_);
}

// docs/input-reader.md "Ranged reads": called once nbins is known from 'hdata_obs', before any
// per-bin array is read.
void FitInputReader::set_observed_range() {
  obs_begin_ = 0;
  obs_end_ = d_.nbins;
  if (range_) {
    const auto [b0, b1] = *range_;
    if (b0 < 0 || b1 < b0 || b1 > d_.nbins) {
      fail_file("bin range [" + std::to_string(b0) + ", " + std::to_string(b1) +
                ") is not a range of the observed bins [0, " + std::to_string(d_.nbins) + ")");
    }
    obs_begin_ = b0;
    obs_end_ = b1;
  }
  d_.ranged = range_.has_value();
  d_.bin_begin = obs_begin_;
  d_.bin_end = obs_end_;
  if (logk_bins_ && (*logk_bins_ < 0 || *logk_bins_ > d_.nbins))
    fail_file("logk bins [0, " + std::to_string(*logk_bins_) + ") are not a range of the observed bins [0, " +
              std::to_string(d_.nbins) + ")");
  d_.logk_end = logk_bins_ ? *logk_bins_ : -1;
}

void FitInputReader::require_dataset(const std::string& path) const {
  if (!r_.exists(path)) fail_file("missing dataset '" + path + "'");
  if (!r_.is_dataset(path)) fail_file("'" + path + "' must be a dataset, found a group");
}

DatasetInfo FitInputReader::float_info(const std::string& path) const {
  DatasetInfo info = r_.info(path);
  if (info.type_class != h5::TypeClass::floating) {
    fail(path, "must be floating point (float32/float64), found " + info.type_description());
  }
  return info;
}
DatasetInfo FitInputReader::int_info(const std::string& path) const {
  DatasetInfo info = r_.info(path);
  if (info.type_class != h5::TypeClass::integer) {
    fail(path, "must be integer, found " + info.type_description());
  }
  return info;
}

void FitInputReader::expect_shape(const DatasetInfo& info, const std::vector<int64_t>& expected,
                                  const std::string& meaning) const {
  if (info.shape != expected) {
    fail(info.path, "has shape " + info.shape_string() + ", expected " + shape_to_string(expected) + " (" +
                        meaning + ")");
  }
}

namespace {

// Multi-index of entry i of a slab that starts at `axis_begin` along `axis` of `shape`.
std::string slab_position(int64_t i, std::vector<int64_t> shape, int axis, int64_t axis_begin, int64_t n) {
  if (shape.empty()) return unravel(i, shape);
  int64_t others = 1;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (static_cast<int>(d) != axis) others *= shape[d];
  }
  shape[static_cast<size_t>(axis)] = others > 0 ? n / others : 0;
  // Unravel in slab coordinates, then shift the axis to file coordinates.
  std::vector<int64_t> idx(shape.size(), 0);
  for (size_t d = shape.size(); d-- > 0;) {
    if (shape[d] > 0) {
      idx[d] = i % shape[d];
      i /= shape[d];
    }
  }
  idx[static_cast<size_t>(axis)] += axis_begin;
  return h5::shape_to_string(idx);
}

}  // namespace

template <class T>
void FitInputReader::check_finite(const std::string& path, const T* p, int64_t n,
                                  const std::vector<int64_t>& shape, int axis, int64_t axis_begin) const {
  int64_t bad = 0, first = -1;
  for (int64_t i = 0; i < n; ++i) {
    if (!std::isfinite(p[i])) {
      if (first < 0) first = i;
      ++bad;
    }
  }
  if (bad > 0) {
    fail(path, "contains " + std::to_string(bad) + " NaN/Inf values (first at " +
                   slab_position(first, shape, axis, axis_begin, n) + ")");
  }
}

template void FitInputReader::check_finite(const std::string&, const double*, int64_t,
                                           const std::vector<int64_t>&, int, int64_t) const;
template void FitInputReader::check_finite(const std::string&, const float*, int64_t,
                                           const std::vector<int64_t>&, int, int64_t) const;

void FitInputReader::check_non_negative(const std::string& path, const double* p, int64_t n,
                                        const std::vector<int64_t>& shape, int axis,
                                        int64_t axis_begin) const {
  for (int64_t i = 0; i < n; ++i) {
    if (p[i] < 0) {
      fail(path, "has a negative entry " + format_double(p[i]) + " at " +
                     slab_position(i, shape, axis, axis_begin, n));
    }
  }
}

std::vector<double> FitInputReader::read_checked(const DatasetInfo& info) const {
  std::vector<double> v = r_.read_doubles(info);
  check_finite(info.path, v.data(), info.size, info.shape);
  return v;
}

std::vector<double> FitInputReader::read_slab_checked(const DatasetInfo& info, int axis, int64_t begin,
                                                      int64_t end) const {
  std::vector<double> v(static_cast<size_t>(h5::Reader::slab_size(info, axis, begin, end)));
  r_.read_doubles_slab(info, axis, begin, end, v.data());
  check_finite(info.path, v.data(), static_cast<int64_t>(v.size()), info.shape, axis, begin);
  return v;
}

std::vector<float> FitInputReader::read_float_slab_checked(const DatasetInfo& info, int axis, int64_t begin,
                                                           int64_t end) const {
  std::vector<float> v(static_cast<size_t>(h5::Reader::slab_size(info, axis, begin, end)));
  r_.read_floats_slab(info, axis, begin, end, v.data());
  check_finite(info.path, v.data(), static_cast<int64_t>(v.size()), info.shape, axis, begin);
  return v;
}

// ---------------------------------------------------------------- docs/input-reader.md "Validation
// checklist" items 2-3
void FitInputReader::check_structure() {
  for (const char* name : {"hprocs", "hsignals", "hsysts", "hsystsnoconstraint", "hsystgroups",
                           "hsystgroupidxs", "hconstraintweights", "hdata_obs"}) {
    require_dataset(name);
  }
  if (!r_.exists("hnoiidxs") && !r_.exists("hnoigroupidxs")) {
    fail_file("missing dataset 'hnoiidxs' (nor legacy 'hnoigroupidxs')");
  }
  d_.sparse = !r_.exists("hnorm");
  if (d_.sparse) {
    if (!r_.exists("hnorm_sparse")) fail_file("neither 'hnorm' nor 'hnorm_sparse' present");
    for (const char* g : {"hnorm_sparse", "hlogk_sparse"}) {
      if (!r_.exists(g)) fail_file(std::string("missing group '") + g + "' (sparse file: 'hnorm' is absent)");
      if (!r_.is_group(g) || !r_.is_dataset(std::string(g) + "/indices") ||
          !r_.is_dataset(std::string(g) + "/values")) {
        fail_file(std::string("'") + g + "' must be a group with 'indices' and 'values'");
      }
    }
  } else {
    require_dataset("hnorm");
    require_dataset("hlogk");
  }
  if (r_.exists("hsumw2")) {
    if (!r_.exists("hsumw")) fail_file("'hsumw2' present but 'hsumw' missing");
  } else if (!r_.exists("hkstat")) {
    fail_file("missing dataset 'hsumw2' (and no legacy 'hkstat')");
  }
}

// ---------------------------------------------------------------- docs/input-reader.md "File structure and
// storage conventions" legacy / unknown
void FitInputReader::note_other_objects() {
  static const std::set<std::string> known = {"hprocs",
                                              "hsignals",
                                              "hsysts",
                                              "hsystsnoconstraint",
                                              "hsystgroups",
                                              "hsystgroupidxs",
                                              "hnoiidxs",
                                              "hnoigroupidxs",
                                              "hpseudodatanames",
                                              "hconstraintweights",
                                              "hdata_obs",
                                              "hdata_var",
                                              "hpseudodata",
                                              "hpseudodatavar",
                                              "hdata_cov_inv",
                                              "hsumw",
                                              "hsumw2",
                                              "hkstat",
                                              "hnorm",
                                              "hlogk",
                                              "hnorm_sparse",
                                              "hlogk_sparse",
                                              "hbetavariations",
                                              "external_terms",
                                              "meta"};
  static const std::set<std::string> legacy = {
      "hsystsnoprofile", "hnoigroups",        "hexternal_term_names",   "hnorm_folds",
      "hlogk_folds",     "hlogk_folds_delta", "hmcstat_folded_syst_idx"};
  for (const std::string& name : r_.children("/")) {
    if (known.count(name)) continue;
    if (name == "hsystsnoprofile") {
      const auto noprofile = r_.read_strings(name);
      if (!noprofile.empty()) {
        log().warn(
            "{}: 'hsystsnoprofile' lists {} nuisances; noprofile nuisances are treated as "
            "ordinary constrained nuisances (as rabbit does)",
            d_.filename, noprofile.size());
      }
    } else if (name == "auxiliary") {
      log().debug("{}: 'auxiliary' group not read (no parameter model of rabbit-cpp uses it)", d_.filename);
    } else if (legacy.count(name)) {
      log().debug("{}: ignoring legacy object '{}'", d_.filename, name);
    } else {
      log().debug("{}: ignoring unknown object '{}'", d_.filename, name);
    }
  }
}

}  // namespace io

FitInputData read_fit_input(const std::string& filename, const FitInputReadOptions& options) {
  io::FitInputReader reader(filename, options);
  FitInputData data = reader.read();
  const std::string held =
      data.ranged ? "bins [" + std::to_string(data.bin_begin) + ", " + std::to_string(data.bin_end) + ") of "
                  : "";
  log().info("read {}: {}{} bins ({} masked), {} processes, {} systematics, {} tensor{}{}", filename, held,
             data.nbinsfull, data.nbinsmasked, data.nproc, data.nsyst, data.sparse ? "sparse" : "dense",
             data.symmetric_tensor ? ", symmetric" : ", asymmetric", data.has_meta ? "" : ", no meta");
  if (data.logk_float32) log().info("{}: logk held as float32, as stored (--tensorPrecision)", filename);
  return data;
}

FitInputData with_double_logk(const FitInputData& in) {
  FitInputData out = in;
  if (!in.logk_float32) return out;
  out.logk.assign(in.logk_f32.begin(), in.logk_f32.end());
  out.logk_sparse.values.assign(in.logk_sparse.values_f32.begin(), in.logk_sparse.values_f32.end());
  out.logk_f32 = {};
  out.logk_sparse.values_f32 = {};
  out.logk_float32 = false;
  return out;
}

int64_t FitInputData::pseudodata_index(const std::string& name) const {
  for (size_t i = 0; i < pseudodatanames.size(); ++i) {
    if (pseudodatanames[i] == name) return static_cast<int64_t>(i);
  }
  std::string valid;
  for (const auto& n : pseudodatanames) valid += (valid.empty() ? "" : ", ") + n;
  throw OptionError("--pseudoData: unknown pseudodata set '" + name + "' in " + filename +
                    " (valid: " + (valid.empty() ? "none, the file has no pseudodata" : valid) + ")");
}

}  // namespace rabbit
