// read_fit_input: the rabbit fit tensor (docs/input-reader.md "Datasets") into FitInputData, with the
// validation checklist of docs/input-reader.md "Validation checklist". Order: structure and dtypes first (metadata only), then shapes,
// then values.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <set>
#include <string>
#include <unordered_set>

#include "rabbit/core/error.hpp"
#include "rabbit/core/logging.hpp"
#include "rabbit/io/fit_input_data.hpp"
#include "rabbit/io/hdf5_reader.hpp"
#include "rabbit/io/meta_info.hpp"
#include "rabbit/io/pickle.hpp"

namespace rabbit {
namespace {

using h5::DatasetInfo;
using h5::Reader;
using h5::shape_to_string;

// Rows of sparse index arrays read per block: bounds the temporary to 16 MiB.
constexpr int64_t kIndexBlockRows = int64_t{1} << 20;

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

class FitInputReader {
 public:
  explicit FitInputReader(const std::string& filename) : r_(filename) { d_.filename = filename; }

  FitInputData read() {
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

 private:
  // ---------------------------------------------------------------- helpers
  [[noreturn]] void fail(const std::string& object, const std::string& what) const { r_.fail(object, what); }
  [[noreturn]] void fail_file(const std::string& what) const { r_.fail_file(what); }

  void require_dataset(const std::string& path) const {
    if (!r_.exists(path)) fail_file("missing dataset '" + path + "'");
    if (!r_.is_dataset(path)) fail_file("'" + path + "' must be a dataset, found a group");
  }

  DatasetInfo float_info(const std::string& path) const {
    DatasetInfo info = r_.info(path);
    if (info.type_class != h5::TypeClass::floating) {
      fail(path, "must be floating point (float32/float64), found " + info.type_description());
    }
    return info;
  }
  DatasetInfo int_info(const std::string& path) const {
    DatasetInfo info = r_.info(path);
    if (info.type_class != h5::TypeClass::integer) {
      fail(path, "must be integer, found " + info.type_description());
    }
    return info;
  }

  void expect_shape(const DatasetInfo& info, const std::vector<int64_t>& expected,
                    const std::string& meaning) const {
    if (info.shape != expected) {
      fail(info.path, "has shape " + info.shape_string() + ", expected " + shape_to_string(expected) +
                          " (" + meaning + ")");
    }
  }

  void check_finite(const std::string& path, const double* p, int64_t n,
                    const std::vector<int64_t>& shape) const {
    int64_t bad = 0, first = -1;
    for (int64_t i = 0; i < n; ++i) {
      if (!std::isfinite(p[i])) {
        if (first < 0) first = i;
        ++bad;
      }
    }
    if (bad > 0) {
      fail(path, "contains " + std::to_string(bad) + " NaN/Inf values (first at " +
                     unravel(first, shape) + ")");
    }
  }

  void check_non_negative(const std::string& path, const double* p, int64_t n,
                          const std::vector<int64_t>& shape) const {
    for (int64_t i = 0; i < n; ++i) {
      if (p[i] < 0) fail(path, "has a negative entry " + format_double(p[i]) + " at " + unravel(i, shape));
    }
  }

  std::vector<double> read_checked(const DatasetInfo& info) const {
    std::vector<double> v = r_.read_doubles(info);
    check_finite(info.path, v.data(), info.size, info.shape);
    return v;
  }

  // ---------------------------------------------------------------- docs/input-reader.md "Validation checklist" items 2-3
  void check_structure() {
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

  // ---------------------------------------------------------------- docs/input-reader.md "Name and index lists"
  void read_names() {
    d_.procs = r_.read_strings("hprocs");
    d_.signals = r_.read_strings("hsignals");
    d_.systs = r_.read_strings("hsysts");
    d_.systsnoconstraint = r_.read_strings("hsystsnoconstraint");
    d_.systgroups = r_.read_strings("hsystgroups");
    d_.systgroupidxs = r_.read_ragged_ints("hsystgroupidxs");
    d_.nproc = static_cast<int64_t>(d_.procs.size());
    d_.nsyst = static_cast<int64_t>(d_.systs.size());
    d_.nsignals = static_cast<int64_t>(d_.signals.size());
    d_.nsystnoconstraint = static_cast<int64_t>(d_.systsnoconstraint.size());
    if (d_.systgroupidxs.size() != d_.systgroups.size()) {
      fail("hsystgroupidxs", "has " + std::to_string(d_.systgroupidxs.size()) + " entries, 'hsystgroups' has " +
                                 std::to_string(d_.systgroups.size()));
    }
    for (size_t g = 0; g < d_.systgroupidxs.size(); ++g) {
      for (int64_t i : d_.systgroupidxs[g]) {
        if (i < 0 || i >= d_.nsyst) {
          fail("hsystgroupidxs", "[" + std::to_string(g) + "] contains index " + std::to_string(i) +
                                     (i < 0 ? " < 0" : " >= nsyst=" + std::to_string(d_.nsyst)));
        }
      }
    }
    if (r_.exists("hnoiidxs")) {
      d_.noiidxs = r_.read_ints(int_info("hnoiidxs"));
    } else {
      // Legacy: concatenated member indices of the NOI groups; de-duplicate keeping order.
      log().debug("{}: 'hnoiidxs' absent, using legacy 'hnoigroupidxs'", d_.filename);
      std::vector<int64_t> raw;
      const DatasetInfo info = r_.info("hnoigroupidxs");
      if (info.type_class == h5::TypeClass::vlen) {
        for (auto& g : r_.read_ragged_ints("hnoigroupidxs")) raw.insert(raw.end(), g.begin(), g.end());
      } else {
        raw = r_.read_ints(int_info("hnoigroupidxs"));
      }
      std::unordered_set<int64_t> seen;
      for (int64_t i : raw) {
        if (seen.insert(i).second) d_.noiidxs.push_back(i);
      }
    }
    const std::string noi_name = r_.exists("hnoiidxs") ? "hnoiidxs" : "hnoigroupidxs";
    std::unordered_set<int64_t> seen;
    for (size_t k = 0; k < d_.noiidxs.size(); ++k) {
      const int64_t i = d_.noiidxs[k];
      if (i < 0 || i >= d_.nsyst) {
        fail(noi_name, "[" + std::to_string(k) + "] = " + std::to_string(i) + " outside [0, nsyst=" +
                           std::to_string(d_.nsyst) + ")");
      }
      if (!seen.insert(i).second) fail(noi_name, "index " + std::to_string(i) + " appears twice");
    }
    if (r_.exists("hpseudodatanames")) d_.pseudodatanames = r_.read_strings("hpseudodatanames");
  }

  // ---------------------------------------------------------------- docs/input-reader.md "The meta pickle"
  void read_meta() {
    if (!r_.exists("meta")) {
      log().debug("{}: no 'meta': using rabbit's defaults (one channel, asymmetric logk)", d_.filename);
      return;
    }
    if (!r_.is_group("meta")) {
      log().warn("{}: 'meta' is a dataset (legacy narf meta layout): ignored, using the defaults", d_.filename);
      return;
    }
    try {
      if (!r_.has_attribute("meta", "narf_h5py_pickle_protocol_version")) {
        throw pickle::DecodeError("meta: attribute 'narf_h5py_pickle_protocol_version' missing");
      }
      const auto version = r_.read_int_attribute("meta", "narf_h5py_pickle_protocol_version");
      if (version.size() != 1 || version[0] != 1) {
        throw pickle::DecodeError("meta: unsupported narf_h5py_pickle_protocol_version " +
                                  (version.empty() ? std::string("(empty)") : std::to_string(version[0])) +
                                  " (expected 1)");
      }
      if (!r_.is_dataset("meta/pickle_data")) throw pickle::DecodeError("meta: 'meta/pickle_data' missing");
      d_.meta_pickle = r_.read_bytes(r_.info("meta/pickle_data"));
      const pickle::ValuePtr root = pickle::parse(d_.meta_pickle);
      io::MetaInfo meta = io::interpret_meta(*root);
      d_.has_meta = true;
      d_.symmetric_tensor = meta.symmetric_tensor;
      d_.systematic_type = meta.systematic_type;
      meta_channels_ = std::move(meta.channels);
      have_meta_channels_ = true;
    } catch (const pickle::DecodeError& e) {
      // docs/input-reader.md "The meta pickle": a meta that cannot be decoded falls back to the no-meta defaults.
      log().warn("{}: {}; falling back to the defaults without meta (one channel, asymmetric logk, "
                 "log_normal)", d_.filename, e.what());
      d_.has_meta = false;
      d_.symmetric_tensor = false;
      d_.systematic_type = SystematicType::log_normal;
      meta_channels_.clear();
      have_meta_channels_ = false;
    } catch (const InputError& e) {
      const std::string what = e.what();
      if (what.rfind(d_.filename + ":", 0) == 0) throw;
      throw InputError(d_.filename + ": " + what);
    }
  }

  // ---------------------------------------------------------------- docs/input-reader.md "Observations"
  void read_observations() {
    const DatasetInfo obs = float_info("hdata_obs");
    if (obs.rank() != 1) fail("hdata_obs", "must be 1-D [nbins], found shape " + obs.shape_string());
    d_.nbins = obs.size;
    d_.data_obs.resize(d_.nbins);
    r_.read_doubles(obs, d_.data_obs.data());
    check_finite("hdata_obs", d_.data_obs.data(), d_.nbins, obs.shape);
    const int64_t negative = (d_.data_obs.array() < 0).count();
    if (negative > 0) {
      // The reader cannot know the fit type; a Poisson fit must refuse negative observations.
      log().warn("{}: 'hdata_obs' has {} negative entries (invalid for Poisson fits)", d_.filename, negative);
    }
    if (r_.exists("hdata_var")) {
      const DatasetInfo var = float_info("hdata_var");
      expect_shape(var, {d_.nbins}, "[nbins]");
      Eigen::VectorXd v(d_.nbins);
      r_.read_doubles(var, v.data());
      check_finite("hdata_var", v.data(), d_.nbins, var.shape);
      check_non_negative("hdata_var", v.data(), d_.nbins, var.shape);
      d_.data_var = std::move(v);
    }
    if (r_.exists("hdata_cov_inv")) {
      const DatasetInfo cov = float_info("hdata_cov_inv");
      expect_shape(cov, {d_.nbins, d_.nbins}, "[nbins, nbins]");
      Eigen::MatrixXd m(d_.nbins, d_.nbins);
      // Stored row-major; reading into the column-major buffer gives the transpose, undone in place.
      r_.read_doubles(cov, m.data());
      check_finite("hdata_cov_inv", m.data(), cov.size, cov.shape);
      m.transposeInPlace();
      d_.data_cov_inv = std::move(m);
    }
    const int64_t npseudo = static_cast<int64_t>(d_.pseudodatanames.size());
    d_.pseudodata.resize(d_.nbins, 0);
    if (r_.exists("hpseudodata")) {
      const DatasetInfo pd = float_info("hpseudodata");
      expect_shape(pd, {d_.nbins, npseudo}, "[nbins, len(hpseudodatanames)]");
      d_.pseudodata = read_row_major(pd, d_.nbins, npseudo);
      warn_non_finite("hpseudodata", d_.pseudodata);
      if (r_.exists("hpseudodatavar")) {
        const DatasetInfo pv = float_info("hpseudodatavar");
        expect_shape(pv, {d_.nbins, npseudo}, "same as 'hpseudodata'");
        d_.pseudodatavar = read_row_major(pv, d_.nbins, npseudo);
        warn_non_finite("hpseudodatavar", *d_.pseudodatavar);
      }
    } else if (npseudo > 0) {
      log().warn("{}: 'hpseudodatanames' lists {} sets but 'hpseudodata' is missing; pseudodata unavailable",
                 d_.filename, npseudo);
      d_.pseudodatanames.clear();
    }
  }

  Eigen::MatrixXd read_row_major(const DatasetInfo& info, int64_t rows, int64_t cols) const {
    Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> m(rows, cols);
    r_.read_doubles(info, m.data());
    return m;
  }

  void warn_non_finite(const std::string& path, const Eigen::MatrixXd& m) const {
    // Only an error when the pseudodata set is used; the reader does not know that.
    if (!m.allFinite()) log().warn("{}: '{}' contains NaN/Inf values", d_.filename, path);
  }

  // ---------------------------------------------------------------- docs/input-reader.md "Constraint weights"
  void read_constraint_weights() {
    const DatasetInfo cw = float_info("hconstraintweights");
    expect_shape(cw, {d_.nsyst}, "[nsyst]");
    d_.constraintweights.resize(d_.nsyst);
    r_.read_doubles(cw, d_.constraintweights.data());
    check_finite("hconstraintweights", d_.constraintweights.data(), d_.nsyst, cw.shape);
    check_non_negative("hconstraintweights", d_.constraintweights.data(), d_.nsyst, cw.shape);
  }

  // ---------------------------------------------------------------- docs/input-reader.md "Dense model tensors"
  std::vector<int64_t> logk_shape(int64_t nbinsfull) const {
    return d_.symmetric_tensor ? std::vector<int64_t>{nbinsfull, d_.nproc, d_.nsyst}
                               : std::vector<int64_t>{nbinsfull, d_.nproc, 2, d_.nsyst};
  }

  void set_nbinsfull(int64_t nbinsfull, const std::string& source) {
    if (nbinsfull < d_.nbins) {
      fail(source, "covers " + std::to_string(nbinsfull) + " bins, fewer than nbins=" +
                       std::to_string(d_.nbins) + " of 'hdata_obs'");
    }
    d_.nbinsfull = nbinsfull;
    d_.nbinsmasked = nbinsfull - d_.nbins;
  }

  void read_dense_tensors() {
    const DatasetInfo norm = float_info("hnorm");
    if (norm.rank() != 2 || norm.shape[1] != d_.nproc) {
      fail("hnorm", "has shape " + norm.shape_string() + ", expected [nbinsfull, nproc=" +
                        std::to_string(d_.nproc) + "]");
    }
    set_nbinsfull(norm.shape[0], "hnorm");
    const DatasetInfo logk = float_info("hlogk");
    const std::vector<int64_t> expected = logk_shape(d_.nbinsfull);
    if (logk.shape != expected) {
      const int64_t n = std::accumulate(expected.begin(), expected.end(), int64_t{1}, std::multiplies<>());
      fail("hlogk", "has shape " + logk.shape_string() + " (" + std::to_string(logk.size) +
                        " elements), expected " + std::to_string(n) + " for " +
                        (d_.symmetric_tensor ? "a symmetric" : "an asymmetric") + " tensor " +
                        shape_to_string(expected) + " (meta symmetric_tensor=" +
                        (d_.symmetric_tensor ? "true" : "false") +
                        (d_.has_meta ? "" : ", no meta") + "; is the flag wrong?)");
    }
    d_.norm = read_checked(norm);
    warn_negative_norm(d_.norm.data(), nullptr, static_cast<int64_t>(d_.norm.size()));
    d_.logk.resize(static_cast<size_t>(logk.size));
    r_.read_doubles(logk, d_.logk.data());
    check_finite("hlogk", d_.logk.data(), logk.size, logk.shape);
  }

  void warn_negative_norm(const double* values, const int64_t* flat_index, int64_t n) const {
    int64_t count = 0, where = -1;
    double min = 0;
    for (int64_t i = 0; i < n; ++i) {
      if (values[i] < 0) {
        ++count;
        if (values[i] < min) {
          min = values[i];
          where = flat_index ? flat_index[i] : i;
        }
      }
    }
    if (count > 0) {
      const int64_t bin = where / std::max<int64_t>(d_.nproc, 1);
      const int64_t proc = where % std::max<int64_t>(d_.nproc, 1);
      log().warn("{}: '{}' has {} negative entries (min {} at bin {}, process '{}'); legal only with "
                 "allow_negative_expectation", d_.filename, d_.sparse ? "hnorm_sparse/values" : "hnorm",
                 count, format_double(min), bin, proc < d_.nproc ? d_.procs[static_cast<size_t>(proc)] : "?");
    }
  }

  // ---------------------------------------------------------------- docs/input-reader.md "Sparse model tensors"
  struct SparseGroup {
    std::vector<int64_t> dense_shape;
    DatasetInfo indices;
    DatasetInfo values;
    int64_t nnz = 0;
  };

  SparseGroup open_sparse(const std::string& group) const {
    SparseGroup g;
    if (!r_.has_attribute(group, "dense_shape")) fail(group, "attribute 'dense_shape' missing");
    g.dense_shape = r_.read_int_attribute(group, "dense_shape");
    if (g.dense_shape.size() != 2 || g.dense_shape[0] < 0 || g.dense_shape[1] < 0) {
      fail(group, "attribute 'dense_shape' " + shape_to_string(g.dense_shape) + " must be two non-negative ints");
    }
    g.indices = int_info(group + "/indices");
    g.values = float_info(group + "/values");
    g.nnz = g.values.size;
    if (g.values.rank() != 1) fail(g.values.path, "must be 1-D [nnz], found shape " + g.values.shape_string());
    expect_shape(g.indices, {g.nnz, 2}, "[nnz, 2] with nnz = len(values)");
    return g;
  }

  // Streams the (row, col) index pairs block by block, checking bounds and strict row-major order.
  template <typename Visit>
  void scan_indices(const SparseGroup& g, Visit&& visit) const {
    const int64_t rows = g.dense_shape[0], cols = g.dense_shape[1];
    std::vector<int64_t> block;
    int64_t previous = -1;
    const bool whole = g.indices.storage_rank != 1;
    if (whole) block = r_.read_ints(g.indices);
    for (int64_t start = 0; start < g.nnz; start += kIndexBlockRows) {
      const int64_t n = std::min(kIndexBlockRows, g.nnz - start);
      const int64_t* p = nullptr;
      if (whole) {
        p = block.data() + 2 * start;
      } else {
        block.resize(static_cast<size_t>(2 * n));
        r_.read_ints_range(g.indices, 2 * start, 2 * n, block.data());
        p = block.data();
      }
      for (int64_t k = 0; k < n; ++k) {
        const int64_t row = p[2 * k], col = p[2 * k + 1];
        const int64_t m = start + k;
        if (row < 0 || row >= rows || col < 0 || col >= cols) {
          fail(g.indices.path, "row " + std::to_string(m) + " (" + std::to_string(row) + "," +
                                   std::to_string(col) + ") out of bounds for dense_shape " +
                                   shape_to_string(g.dense_shape));
        }
        const int64_t flat = row * cols + col;
        if (flat <= previous) {
          fail(g.indices.path, "not in canonical row-major order at row " + std::to_string(m) +
                                   (flat == previous ? " (duplicate entry)" : ""));
        }
        previous = flat;
        visit(m, row, col, flat);
      }
    }
  }

  void read_sparse_tensors() {
    const SparseGroup norm = open_sparse("hnorm_sparse");
    if (norm.dense_shape[1] != d_.nproc) {
      fail("hnorm_sparse", "dense_shape " + shape_to_string(norm.dense_shape) + " must be [nbinsfull, nproc=" +
                               std::to_string(d_.nproc) + "]");
    }
    set_nbinsfull(norm.dense_shape[0], "hnorm_sparse");
    const SparseGroup logk = open_sparse("hlogk_sparse");
    const std::vector<int64_t> logk_dense{norm.nnz, d_.logk_width()};
    if (logk.dense_shape != logk_dense) {
      fail("hlogk_sparse", "dense_shape " + shape_to_string(logk.dense_shape) + " must be " +
                               shape_to_string(logk_dense) + " = [nnz of hnorm_sparse, " +
                               (d_.symmetric_tensor ? "nsyst" : "2*nsyst") + "] (meta symmetric_tensor=" +
                               (d_.symmetric_tensor ? "true" : "false") + "; is the flag wrong?)");
    }
    if (d_.logk_width() > std::numeric_limits<int32_t>::max()) {
      fail("hlogk_sparse", "more than 2^31 logk columns");
    }
    d_.norm_index.resize(static_cast<size_t>(norm.nnz));
    scan_indices(norm, [&](int64_t m, int64_t, int64_t, int64_t flat) {
      d_.norm_index[static_cast<size_t>(m)] = flat;
    });
    d_.norm = read_checked(norm.values);
    warn_negative_norm(d_.norm.data(), d_.norm_index.data(), norm.nnz);

    // COO (norm entry, column) in row-major order -> CSR over the norm entries.
    SparseLogk& csr = d_.logk_sparse;
    csr.rowptr.assign(static_cast<size_t>(norm.nnz + 1), 0);
    csr.cols.resize(static_cast<size_t>(logk.nnz));
    scan_indices(logk, [&](int64_t m, int64_t row, int64_t col, int64_t) {
      csr.rowptr[static_cast<size_t>(row + 1)]++;
      csr.cols[static_cast<size_t>(m)] = static_cast<int32_t>(col);
    });
    for (int64_t i = 0; i < norm.nnz; ++i) {
      csr.rowptr[static_cast<size_t>(i + 1)] += csr.rowptr[static_cast<size_t>(i)];
    }
    csr.values = read_checked(logk.values);
  }

  // ---------------------------------------------------------------- docs/input-reader.md "Monte-Carlo statistics"
  void read_mc_stat() {
    const std::vector<int64_t> full2{d_.nbinsfull, d_.nproc};
    const std::vector<int64_t> full1{d_.nbinsfull};
    if (r_.exists("hsumw2")) {
      const DatasetInfo sumw = float_info("hsumw");
      const DatasetInfo sumw2 = float_info("hsumw2");
      if (sumw2.shape != full2 && sumw2.shape != full1) {
        fail("hsumw2", "has shape " + sumw2.shape_string() + ", expected " + shape_to_string(full2) +
                           " or legacy " + shape_to_string(full1));
      }
      if (sumw.shape != sumw2.shape) {
        fail("hsumw", "has shape " + sumw.shape_string() + ", 'hsumw2' has " + sumw2.shape_string());
      }
      d_.sumw_per_bin = sumw2.rank() == 1;
      d_.sumw = read_checked(sumw);
      d_.sumw2 = read_checked(sumw2);
      check_non_negative("hsumw2", d_.sumw2.data(), sumw2.size, sumw2.shape);
      return;
    }
    // Legacy hkstat [nbinsfull] = sumw^2/sumw2 per bin: sumw = sum_p norm, sumw2 = sumw^2/kstat.
    const DatasetInfo kstat_info = float_info("hkstat");
    if (kstat_info.rank() == 1 && kstat_info.size == d_.nbins && d_.nbins < d_.nbinsfull) {
      fail("hkstat", "has " + std::to_string(kstat_info.size) + " entries = nbins but the file has " +
                         std::to_string(d_.nbinsmasked) +
                         " masked bins (2025-03-11..17 writer; rabbit cannot read this file either)");
    }
    expect_shape(kstat_info, full1, "[nbinsfull]");
    const std::vector<double> kstat = read_checked(kstat_info);
    check_non_negative("hkstat", kstat.data(), kstat_info.size, kstat_info.shape);
    d_.sumw_per_bin = true;
    d_.sumw.assign(static_cast<size_t>(d_.nbinsfull), 0.0);
    if (d_.sparse) {
      for (size_t k = 0; k < d_.norm.size(); ++k) {
        d_.sumw[static_cast<size_t>(d_.norm_index[k] / d_.nproc)] += d_.norm[k];
      }
    } else {
      for (int64_t b = 0; b < d_.nbinsfull; ++b) {
        double s = 0;
        for (int64_t p = 0; p < d_.nproc; ++p) s += d_.norm[static_cast<size_t>(b * d_.nproc + p)];
        d_.sumw[static_cast<size_t>(b)] = s;
      }
    }
    d_.sumw2.resize(d_.sumw.size());
    for (size_t b = 0; b < d_.sumw.size(); ++b) {
      d_.sumw2[b] = kstat[b] == 0 ? d_.sumw[b] : d_.sumw[b] * d_.sumw[b] / kstat[b];
    }
    log().debug("{}: legacy 'hkstat' converted to per-bin sumw/sumw2", d_.filename);
  }

  // ---------------------------------------------------------------- docs/input-reader.md "Dense model tensors" betavariations
  void read_beta_variations() {
    if (!r_.exists("hbetavariations")) return;
    if (d_.sparse) fail("hbetavariations", "present in a sparse file (only dense files may have it)");
    const DatasetInfo info = float_info("hbetavariations");
    expect_shape(info, {d_.nbinsfull, d_.nbins, d_.nproc}, "[nbinsfull, nbins, nproc]");
    d_.betavariations = read_checked(info);
  }

  // ---------------------------------------------------------------- docs/input-reader.md "External terms"
  void read_external_terms() {
    if (!r_.exists("external_terms")) return;
    if (!r_.is_group("external_terms")) fail_file("'external_terms' must be a group");
    for (const std::string& name : r_.children("external_terms")) {
      const std::string base = "external_terms/" + name;
      if (!r_.is_group(base)) {
        log().debug("{}: ignoring non-group '{}'", d_.filename, base);
        continue;
      }
      ExternalTerm term;
      term.name = name;
      require_dataset(base + "/params");
      term.params = r_.read_strings(base + "/params");
      const auto n = static_cast<int64_t>(term.params.size());
      std::set<std::string> unique(term.params.begin(), term.params.end());
      if (static_cast<int64_t>(unique.size()) != n) fail(base + "/params", "parameter names are not unique");
      if (r_.exists(base + "/grad_values")) {
        const DatasetInfo g = float_info(base + "/grad_values");
        expect_shape(g, {n}, "[n] with n = len(params)");
        Eigen::VectorXd v(n);
        r_.read_doubles(g, v.data());
        check_finite(g.path, v.data(), n, g.shape);
        term.grad_values = std::move(v);
      }
      if (r_.exists(base + "/hess_dense")) {
        const DatasetInfo h = float_info(base + "/hess_dense");
        if (h.shape != std::vector<int64_t>{n, n}) {
          fail(h.path, "is " + h.shape_string() + " but 'params' has " + std::to_string(n) + " names");
        }
        Eigen::MatrixXd m(n, n);
        r_.read_doubles(h, m.data());
        check_finite(h.path, m.data(), h.size, h.shape);
        m.transposeInPlace();
        term.hess = std::move(m);
      } else if (r_.exists(base + "/hess_sparse")) {
        term.hess = read_sparse_hessian(base + "/hess_sparse", n);
        term.hess_was_sparse = true;
      }
      if (!term.grad_values && !term.hess) {
        fail(base, "has neither 'grad_values' nor a Hessian ('hess_dense'/'hess_sparse')");
      }
      // Optional scalars of rabbit PR #147 (h5py scalar datasets); absent ≠ 0 (docs/input-reader.md).
      term.const_value = read_optional_scalar(base + "/const");
      term.lognorm = read_optional_scalar(base + "/lognorm");
      d_.external_terms.push_back(std::move(term));
    }
  }

  std::optional<double> read_optional_scalar(const std::string& path) const {
    if (!r_.exists(path)) return std::nullopt;
    const DatasetInfo info = float_info(path);
    if (info.size != 1) fail(path, "has " + std::to_string(info.size) + " elements, expected one (a scalar)");
    double v = 0.0;
    r_.read_doubles(info, &v);
    check_finite(path, &v, 1, info.shape);
    return v;
  }

  Eigen::MatrixXd read_sparse_hessian(const std::string& group, int64_t n) const {
    if (!r_.is_group(group) || !r_.is_dataset(group + "/indices") || !r_.is_dataset(group + "/values")) {
      fail_file("'" + group + "' must be a group with 'indices' and 'values'");
    }
    const SparseGroup g = open_sparse(group);
    if (g.dense_shape != std::vector<int64_t>{n, n}) {
      fail(group, "dense_shape " + shape_to_string(g.dense_shape) + " but 'params' has " +
                      std::to_string(n) + " names");
    }
    const std::vector<int64_t> idx = r_.read_ints(g.indices);
    const std::vector<double> values = read_checked(g.values);
    std::vector<int64_t> order(static_cast<size_t>(g.nnz));
    std::iota(order.begin(), order.end(), 0);
    bool sorted = true;
    for (int64_t k = 0; k < g.nnz; ++k) {
      const int64_t row = idx[static_cast<size_t>(2 * k)], col = idx[static_cast<size_t>(2 * k + 1)];
      if (row < 0 || row >= n || col < 0 || col >= n) {
        fail(g.indices.path, "row " + std::to_string(k) + " (" + std::to_string(row) + "," +
                                 std::to_string(col) + ") out of bounds for dense_shape " +
                                 shape_to_string(g.dense_shape));
      }
      if (k > 0 && row * n + col <= idx[static_cast<size_t>(2 * k - 2)] * n + idx[static_cast<size_t>(2 * k - 1)]) {
        sorted = false;
      }
    }
    if (!sorted) {
      // Files of 2026-04-07/08 were written unsorted.
      log().warn("{}: '{}' is not in canonical row-major order (2026-04-07/08 writer); sorted on read",
                 d_.filename, g.indices.path);
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
        return idx[static_cast<size_t>(2 * a)] * n + idx[static_cast<size_t>(2 * a + 1)] <
               idx[static_cast<size_t>(2 * b)] * n + idx[static_cast<size_t>(2 * b + 1)];
      });
    }
    Eigen::MatrixXd m = Eigen::MatrixXd::Zero(n, n);
    int64_t previous = -1;
    for (int64_t k : order) {
      const int64_t row = idx[static_cast<size_t>(2 * k)], col = idx[static_cast<size_t>(2 * k + 1)];
      if (row * n + col == previous) fail(g.indices.path, "duplicate entry (" + std::to_string(row) + "," + std::to_string(col) + ")");
      previous = row * n + col;
      m(row, col) = values[static_cast<size_t>(k)];
    }
    return m;
  }

  // ---------------------------------------------------------------- docs/input-reader.md "File structure and storage conventions" legacy / unknown
  void note_other_objects() {
    static const std::set<std::string> known = {
        "hprocs", "hsignals", "hsysts", "hsystsnoconstraint", "hsystgroups", "hsystgroupidxs",
        "hnoiidxs", "hnoigroupidxs", "hpseudodatanames", "hconstraintweights", "hdata_obs",
        "hdata_var", "hpseudodata", "hpseudodatavar", "hdata_cov_inv", "hsumw", "hsumw2", "hkstat",
        "hnorm", "hlogk", "hnorm_sparse", "hlogk_sparse", "hbetavariations", "external_terms", "meta"};
    static const std::set<std::string> legacy = {"hsystsnoprofile", "hnoigroups", "hexternal_term_names",
                                                 "hnorm_folds", "hlogk_folds", "hlogk_folds_delta",
                                                 "hmcstat_folded_syst_idx"};
    for (const std::string& name : r_.children("/")) {
      if (known.count(name)) continue;
      if (name == "hsystsnoprofile") {
        const auto noprofile = r_.read_strings(name);
        if (!noprofile.empty()) {
          log().warn("{}: 'hsystsnoprofile' lists {} nuisances; noprofile nuisances are treated as "
                     "ordinary constrained nuisances (as rabbit does)", d_.filename, noprofile.size());
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

  // ---------------------------------------------------------------- docs/input-reader.md "Per file", "Validation checklist" item 15
  void derive_channels() {
    if (!have_meta_channels_) {
      d_.channels = io::default_channels(d_.nbins, d_.nbinsmasked);
      return;
    }
    d_.channels = std::move(meta_channels_);
    io::assign_channel_ranges(d_.channels);
    int64_t total = 0, unmasked = 0;
    bool seen_masked = false;
    for (const ChannelInfo& ch : d_.channels) {
      if (ch.masked) {
        seen_masked = true;
      } else {
        if (seen_masked) fail_file("meta: non-masked channel '" + ch.name + "' after a masked channel");
        unmasked += ch.nbins();
        if (ch.flow) {
          log().warn("{}: meta: channel '{}' has flow=True but is not masked (rabbit only allows flow on "
                     "masked channels)", d_.filename, ch.name);
        }
      }
      total += ch.nbins();
    }
    if (total != d_.nbinsfull) {
      fail_file("meta: channels cover " + std::to_string(total) + " bins, tensors have nbinsfull=" +
                std::to_string(d_.nbinsfull));
    }
    if (unmasked != d_.nbins) {
      fail_file("meta: non-masked channels cover " + std::to_string(unmasked) +
                " bins, 'hdata_obs' has nbins=" + std::to_string(d_.nbins));
    }
  }

  // ---------------------------------------------------------------- docs/input-reader.md "Validation checklist" item 10
  void check_names() {
    if (d_.signals.size() > d_.procs.size()) {
      fail("hsignals", "has " + std::to_string(d_.signals.size()) + " names, 'hprocs' only " +
                           std::to_string(d_.procs.size()));
    }
    for (size_t i = 0; i < d_.signals.size(); ++i) {
      if (d_.signals[i] != d_.procs[i]) {
        fail_file("'hsignals'[" + std::to_string(i) + "]='" + d_.signals[i] + "' does not match 'hprocs'[" +
                  std::to_string(i) + "]='" + d_.procs[i] + "'");
      }
    }
    auto check_unique = [&](const std::vector<std::string>& names, const std::string& path) {
      std::unordered_set<std::string> seen;
      for (const auto& n : names) {
        if (!seen.insert(n).second) fail(path, "name '" + n + "' appears twice");
      }
    };
    check_unique(d_.procs, "hprocs");
    check_unique(d_.systs, "hsysts");
    check_unique(d_.systgroups, "hsystgroups");
    std::unordered_set<std::string> systs(d_.systs.begin(), d_.systs.end());
    bool prefix = d_.systsnoconstraint.size() <= d_.systs.size();
    for (size_t i = 0; i < d_.systsnoconstraint.size(); ++i) {
      const std::string& n = d_.systsnoconstraint[i];
      if (!systs.count(n)) fail("hsystsnoconstraint", "name '" + n + "' is not in 'hsysts'");
      if (prefix && d_.systs[i] != n) prefix = false;
      const auto it = std::find(d_.systs.begin(), d_.systs.end(), n);
      const double w = d_.constraintweights[std::distance(d_.systs.begin(), it)];
      if (w != 0.0) {
        log().warn("{}: '{}' is listed in 'hsystsnoconstraint' but has constraint weight {}", d_.filename,
                   n, format_double(w));
      }
    }
    if (!prefix) log().warn("{}: 'hsystsnoconstraint' is not the prefix of 'hsysts'", d_.filename);
  }

  Reader r_;
  FitInputData d_;
  std::vector<ChannelInfo> meta_channels_;
  bool have_meta_channels_ = false;
};

}  // namespace

FitInputData read_fit_input(const std::string& filename) {
  FitInputReader reader(filename);
  FitInputData data = reader.read();
  log().info("read {}: {} bins ({} masked), {} processes, {} systematics, {} tensor{}{}", filename,
             data.nbinsfull, data.nbinsmasked, data.nproc, data.nsyst, data.sparse ? "sparse" : "dense",
             data.symmetric_tensor ? ", symmetric" : ", asymmetric",
             data.has_meta ? "" : ", no meta");
  return data;
}

int64_t FitInputData::pseudodata_index(const std::string& name) const {
  for (size_t i = 0; i < pseudodatanames.size(); ++i) {
    if (pseudodatanames[i] == name) return static_cast<int64_t>(i);
  }
  std::string valid;
  for (const auto& n : pseudodatanames) valid += (valid.empty() ? "" : ", ") + n;
  throw OptionError("--pseudoData: unknown pseudodata set '" + name + "' in " + filename + " (valid: " +
                    (valid.empty() ? "none, the file has no pseudodata" : valid) + ")");
}

}  // namespace rabbit
