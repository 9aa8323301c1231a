// TensorWriter: see tensor_writer.hpp, docs/tensor-writer.md, docs/input-reader.md.
#include "rabbit/io/tensor_writer.hpp"

#include <hdf5.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <numeric>

#include <Eigen/LU>

#include "rabbit/core/error.hpp"
#include "rabbit/io/blosc_filters.hpp"
#include "rabbit/io/hdf5_handle.hpp"
#include "rabbit/io/pickle_writer.hpp"

namespace rabbit {

// ---------------------------------------------------------------------------------------------
// axes
namespace axis {
namespace {
AxisInfo make(std::string kind, int64_t size, std::string name, std::string label, bool underflow,
              bool overflow) {
  AxisInfo a;
  a.kind = std::move(kind);
  a.size = size;
  a.name = std::move(name);
  a.label = std::move(label);
  a.underflow = underflow;
  a.overflow = overflow;
  return a;
}
}  // namespace

AxisInfo regular(int64_t bins, double start, double stop, std::string name, bool underflow,
                 bool overflow, std::string label) {
  if (bins <= 0 || !(stop > start))
    throw Error("axis::regular '" + name + "': need bins > 0 and stop > start");
  AxisInfo a = make("regular", bins, std::move(name), std::move(label), underflow, overflow);
  // boost-histogram stores min and delta = stop - start; edges follow its regular::value
  // (docs/input-reader.md "Per axis"), so they match what Python and the reader report bit for bit.
  const double delta = stop - start;
  for (int64_t i = 0; i <= bins; ++i) {
    const double z = static_cast<double>(i) / static_cast<double>(bins);
    a.edges.push_back((1.0 - z) * start + z * (start + delta));
  }
  a.core_class = pickle::core_class_for(a);
  return a;
}

AxisInfo variable(std::vector<double> edges, std::string name, bool underflow, bool overflow,
                  std::string label) {
  if (edges.size() < 2) throw Error("axis::variable '" + name + "': need at least 2 edges");
  for (size_t i = 1; i < edges.size(); ++i)
    if (!(edges[i] > edges[i - 1]))
      throw Error("axis::variable '" + name + "': edges must be strictly increasing");
  AxisInfo a = make("variable", static_cast<int64_t>(edges.size()) - 1, std::move(name),
                    std::move(label), underflow, overflow);
  a.edges = std::move(edges);
  a.core_class = pickle::core_class_for(a);
  return a;
}

AxisInfo integer(int64_t start, int64_t stop, std::string name, bool underflow, bool overflow,
                 std::string label) {
  if (stop <= start) throw Error("axis::integer '" + name + "': need stop > start");
  AxisInfo a = make("integer", stop - start, std::move(name), std::move(label), underflow, overflow);
  for (int64_t v = start; v <= stop; ++v) a.edges.push_back(static_cast<double>(v));
  a.core_class = pickle::core_class_for(a);
  return a;
}

AxisInfo str_category(std::vector<std::string> categories, std::string name, bool overflow,
                      std::string label) {
  if (categories.empty()) throw Error("axis::str_category '" + name + "': no categories");
  AxisInfo a = make("category_str", static_cast<int64_t>(categories.size()), std::move(name),
                    std::move(label), false, overflow);
  a.categories_str = std::move(categories);
  for (int64_t i = 0; i <= a.size; ++i) a.edges.push_back(static_cast<double>(i));  // by convention
  a.core_class = pickle::core_class_for(a);
  return a;
}

AxisInfo int_category(std::vector<int64_t> categories, std::string name, bool overflow,
                      std::string label) {
  if (categories.empty()) throw Error("axis::int_category '" + name + "': no categories");
  AxisInfo a = make("category_int", static_cast<int64_t>(categories.size()), std::move(name),
                    std::move(label), false, overflow);
  a.categories_int = std::move(categories);
  for (int64_t i = 0; i <= a.size; ++i) a.edges.push_back(static_cast<double>(i));  // by convention
  a.core_class = pickle::core_class_for(a);
  return a;
}

AxisInfo boolean(std::string name, std::string label) {
  AxisInfo a = make("boolean", 2, std::move(name), std::move(label), false, false);
  a.edges = {0.0, 1.0, 2.0};
  a.core_class = pickle::core_class_for(a);
  return a;
}

std::vector<double> centers(const AxisInfo& a) {
  if (a.edges.size() != static_cast<size_t>(a.size) + 1)
    throw Error("axis::centers: axis '" + a.name + "' has no edges");
  std::vector<double> c(static_cast<size_t>(a.size));
  for (size_t i = 0; i < c.size(); ++i) c[i] = 0.5 * (a.edges[i] + a.edges[i + 1]);
  return c;
}
}  // namespace axis

// ---------------------------------------------------------------------------------------------
// natural sort (rabbit.common.natural_sort_key)
namespace {
struct NaturalPart {
  bool is_number;
  std::string text;  // lower-cased text, or the digit run without leading zeros
};

std::vector<NaturalPart> natural_key(const std::string& s) {
  // re.split(r"(\d+)") alternates text and digit runs, starting (possibly empty) with text.
  std::vector<NaturalPart> parts;
  std::string text;
  size_t i = 0;
  while (true) {
    text.clear();
    while (i < s.size() && !std::isdigit(static_cast<unsigned char>(s[i])))
      text.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(s[i++]))));
    parts.push_back({false, text});
    if (i >= s.size()) break;
    std::string digits;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) digits.push_back(s[i++]);
    const size_t nz = digits.find_first_not_of('0');
    parts.push_back({true, nz == std::string::npos ? "0" : digits.substr(nz)});
  }
  return parts;
}

int compare_part(const NaturalPart& a, const NaturalPart& b) {
  if (a.is_number) {  // positions alternate identically in both keys
    if (a.text.size() != b.text.size()) return a.text.size() < b.text.size() ? -1 : 1;
  }
  return a.text.compare(b.text) < 0 ? -1 : (a.text == b.text ? 0 : 1);
}
}  // namespace

bool natural_less(const std::string& a, const std::string& b) {
  const auto ka = natural_key(a), kb = natural_key(b);
  for (size_t i = 0; i < std::min(ka.size(), kb.size()); ++i) {
    const int c = compare_part(ka[i], kb[i]);
    if (c != 0) return c < 0;
  }
  return ka.size() < kb.size();
}

std::vector<std::string> natural_sorted(std::vector<std::string> names) {
  std::stable_sort(names.begin(), names.end(), natural_less);
  return names;
}

// ---------------------------------------------------------------------------------------------
// HDF5 helpers
namespace {
constexpr H5Z_filter_t kBlosc2FilterId = 32026;
constexpr double kLogkEpsilon = -6.907755278982137;  // log(1e-3), rabbit's cutoff for sign flips

// Blosc2 (32026) writing goes through the io module's filter registration (blosc_filters.hpp:
// C-Blosc2, PyTables' hdf5-blosc2 payload) or an encode-capable plugin that took precedence.
void require_blosc2_encoder(const std::string& filename) {
  io::ensure_blosc_filters();
  unsigned config = 0;
  if (H5Zfilter_avail(kBlosc2FilterId) <= 0 || H5Zget_filter_info(kBlosc2FilterId, &config) < 0 ||
      !(config & H5Z_FILTER_CONFIG_ENCODE_ENABLED))
    throw ResourceError(filename + ": cannot write Blosc2: HDF5 filter 32026 is not available with an "
                        "encoder (RABBIT_BLOSC_FILTERS=plugin with a decode-only plugin?); use gzip");
}

/// A group without modification times, so that equal content gives equal bytes.
hid_t make_group(hid_t loc, const std::string& name) {
  h5::Handle gcpl(H5Pcreate(H5P_GROUP_CREATE));
  H5Pset_obj_track_times(gcpl, false);
  return H5Gcreate2(loc, name.c_str(), H5P_DEFAULT, gcpl, H5P_DEFAULT);
}

class H5Out {
 public:
  H5Out(std::string filename, Compression compression)
      : filename_(std::move(filename)), compression_(compression) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw ResourceError(filename_ + ": cannot write " + what);
  }

  hid_t check(hid_t id, const std::string& what) const {
    if (id < 0) fail(what);
    return id;
  }
  void check(herr_t rc, const std::string& what, int) const {
    if (rc < 0) fail(what);
  }

  void write_shape_attribute(hid_t dset, const std::vector<int64_t>& shape, const std::string& name,
                             const char* attr_name = "original_shape") const {
    const hsize_t n = shape.size();
    h5::Handle space(check(H5Screate_simple(1, &n, nullptr), name));
    h5::Handle attr(check(H5Acreate2(dset, attr_name, H5T_STD_I64LE, space, H5P_DEFAULT, H5P_DEFAULT),
                          name + " attribute " + attr_name));
    check(H5Awrite(attr, H5T_NATIVE_INT64, shape.data()), name + " attribute " + attr_name, 0);
  }

  /// A flat 1-D numeric dataset with `original_shape` (rabbit's writeFlatInChunks): chunked,
  /// compressed, all-zero chunks left unwritten; empty arrays contiguous without a filter.
  template <typename T>
  void write_flat(hid_t loc, const std::string& name, const std::vector<T>& values,
                  const std::vector<int64_t>& shape, hid_t file_type, hid_t mem_type,
                  size_t max_chunk_bytes, bool compress = true) const {
    const int64_t expected =
        std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<int64_t>());
    if (expected != static_cast<int64_t>(values.size()))
      throw Error("TensorWriter: internal shape mismatch for " + name);
    const hsize_t n = values.size();
    h5::Handle space(check(H5Screate_simple(1, &n, nullptr), name));
    h5::Handle dcpl(check(H5Pcreate(H5P_DATASET_CREATE), name));
    H5Pset_obj_track_times(dcpl, false);  // reproducible files (h5py default too)
    hsize_t chunk = 1;
    if (n > 0) {
      chunk = std::min<hsize_t>(n, std::max<hsize_t>(1, max_chunk_bytes / sizeof(T)));
      check(H5Pset_chunk(dcpl, 1, &chunk), name + " chunking", 0);
      if (compress) add_filter(dcpl, name, sizeof(T), chunk * sizeof(T));
    }
    h5::Handle dset(check(H5Dcreate2(loc, name.c_str(), file_type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT),
                          name));
    for (hsize_t begin = 0; begin < n; begin += chunk) {
      const hsize_t count = std::min(chunk, n - begin);
      const bool all_zero = std::all_of(values.begin() + static_cast<std::ptrdiff_t>(begin),
                                        values.begin() + static_cast<std::ptrdiff_t>(begin + count),
                                        [](T v) { return v == T(0); });
      if (all_zero) continue;
      h5::Handle mem(check(H5Screate_simple(1, &count, nullptr), name));
      h5::Handle file_space(check(H5Dget_space(dset), name));
      check(H5Sselect_hyperslab(file_space, H5S_SELECT_SET, &begin, nullptr, &count, nullptr), name, 0);
      check(H5Dwrite(dset, mem_type, mem, file_space, H5P_DEFAULT, values.data() + begin), name, 0);
    }
    write_shape_attribute(dset, shape, name);
  }

  void write_doubles(hid_t loc, const std::string& name, const std::vector<double>& values,
                     const std::vector<int64_t>& shape, bool as_float32, size_t max_chunk_bytes,
                     bool compress = true) const {
    if (as_float32) {
      std::vector<float> f(values.begin(), values.end());
      write_flat(loc, name, f, shape, H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, max_chunk_bytes, compress);
    } else {
      write_flat(loc, name, values, shape, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, max_chunk_bytes, compress);
    }
  }

  /// A float64 scalar dataset, as h5py's create_dataset(name, data=float) (no filter, no shape attr).
  void write_scalar(hid_t loc, const std::string& name, double value) const {
    h5::Handle space(check(H5Screate(H5S_SCALAR), name));
    h5::Handle dcpl(check(H5Pcreate(H5P_DATASET_CREATE), name));
    H5Pset_obj_track_times(dcpl, false);
    h5::Handle dset(check(H5Dcreate2(loc, name.c_str(), H5T_IEEE_F64LE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT),
                          name));
    check(H5Dwrite(dset, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, &value), name, 0);
  }

  void write_strings(hid_t loc, const std::string& name, const std::vector<std::string>& values) const {
    h5::Handle type(check(H5Tcopy(H5T_C_S1), name));
    H5Tset_size(type, H5T_VARIABLE);
    H5Tset_cset(type, H5T_CSET_UTF8);
    std::vector<const char*> ptrs;
    for (const auto& s : values) ptrs.push_back(s.c_str());
    write_list(loc, name, type, type, ptrs.data(), ptrs.size());
  }

  void write_index_lists(hid_t loc, const std::string& name,
                         const std::vector<std::vector<int32_t>>& lists) const {
    h5::Handle file_type(check(H5Tvlen_create(H5T_STD_I32LE), name));
    h5::Handle mem_type(check(H5Tvlen_create(H5T_NATIVE_INT32), name));
    std::vector<hvl_t> vl;
    for (const auto& l : lists) vl.push_back(hvl_t{l.size(), const_cast<int32_t*>(l.data())});
    write_list(loc, name, file_type, mem_type, vl.data(), vl.size());
  }

  void write_int32(hid_t loc, const std::string& name, const std::vector<int32_t>& values) const {
    write_list(loc, name, H5T_STD_I32LE, H5T_NATIVE_INT32, values.data(), values.size());
  }

  void write_meta(hid_t file, const std::vector<uint8_t>& pickle) const {
    h5::Handle group(check(make_group(file, "meta"), "meta"));
    {
      h5::Handle space(check(H5Screate(H5S_SCALAR), "meta"));
      h5::Handle attr(check(H5Acreate2(group, "narf_h5py_pickle_protocol_version", H5T_STD_I64LE, space,
                                       H5P_DEFAULT, H5P_DEFAULT),
                            "meta attribute"));
      const int64_t version = 1;
      check(H5Awrite(attr, H5T_NATIVE_INT64, &version), "meta attribute", 0);
    }
    const hsize_t n = pickle.size();
    h5::Handle space(check(H5Screate_simple(1, &n, nullptr), "meta/pickle_data"));
    h5::Handle dcpl(check(H5Pcreate(H5P_DATASET_CREATE), "meta/pickle_data"));
    H5Pset_obj_track_times(dcpl, false);
    // Python writes Blosc v1 (32001) here; any filter HDF5 knows is fine for wums (docs/tensor-writer.md "The meta pickle bytes").
    if (compression_ != Compression::none) {
      const hsize_t chunk = std::min<hsize_t>(n, 1048576);
      check(H5Pset_chunk(dcpl, 1, &chunk), "meta/pickle_data", 0);
      check(H5Pset_deflate(dcpl, 4), "meta/pickle_data", 0);
    }
    h5::Handle dset(check(H5Dcreate2(group, "pickle_data", H5T_STD_U8LE, space, H5P_DEFAULT, dcpl,
                                     H5P_DEFAULT),
                          "meta/pickle_data"));
    check(H5Dwrite(dset, H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, pickle.data()),
          "meta/pickle_data", 0);
  }

 private:
  void add_filter(hid_t dcpl, const std::string& name, size_t typesize, size_t chunk_bytes) const {
    if (compression_ == Compression::gzip) {
      check(H5Pset_deflate(dcpl, 4), name + " deflate", 0);
    } else if (compression_ == Compression::blosc2) {
      // Same cd_values as hdf5plugin.Blosc2(cname="lz4", clevel=5) on 1-D chunks.
      const unsigned cd[7] = {1, 0, static_cast<unsigned>(typesize), static_cast<unsigned>(chunk_bytes),
                              5, 1, 1};
      check(H5Pset_filter(dcpl, kBlosc2FilterId, H5Z_FLAG_MANDATORY, 7, cd), name + " blosc2 filter", 0);
    }
  }

  // 1-D list dataset (strings, vlen int lists, int32) compressed with deflate like h5py's
  // compression="gzip"; empty lists contiguous without a filter.
  void write_list(hid_t loc, const std::string& name, hid_t file_type, hid_t mem_type, const void* data,
                  size_t count) const {
    const hsize_t n = count;
    h5::Handle space(check(H5Screate_simple(1, &n, nullptr), name));
    h5::Handle dcpl(check(H5Pcreate(H5P_DATASET_CREATE), name));
    H5Pset_obj_track_times(dcpl, false);  // reproducible files (h5py default too)
    if (n > 0 && compression_ != Compression::none) {
      const hsize_t chunk = std::min<hsize_t>(n, 1024);
      check(H5Pset_chunk(dcpl, 1, &chunk), name, 0);
      check(H5Pset_deflate(dcpl, 4), name, 0);
    }
    h5::Handle dset(check(H5Dcreate2(loc, name.c_str(), file_type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT),
                          name));
    if (n > 0) check(H5Dwrite(dset, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data), name, 0);
  }

  std::string filename_;
  Compression compression_;
};

void check_finite(const std::vector<double>& v, const std::string& what) {
  const auto bad = std::count_if(v.begin(), v.end(), [](double x) { return !std::isfinite(x); });
  if (bad > 0) throw Error("TensorWriter: " + std::to_string(bad) + " NaN or Inf values in " + what);
}
}  // namespace

// ---------------------------------------------------------------------------------------------
// TensorWriter

TensorWriter::TensorWriter(SystematicType systematic_type, bool allow_negative_expectation)
    : systematic_type_(systematic_type), allow_negative_expectation_(allow_negative_expectation) {}

TensorWriter::Channel& TensorWriter::channel(const std::string& name) {
  for (auto& ch : channels_)
    if (ch.info.name == name) return ch;
  throw Error("TensorWriter: channel '" + name + "' not known");
}

void TensorWriter::add_channel(const std::string& name, std::vector<AxisInfo> axes, bool masked,
                               bool flow) {
  if (flow && !masked)
    throw Error("TensorWriter: channel '" + name +
                "': keeping under/overflow bins is only supported for masked channels");
  for (const auto& ch : channels_)
    if (ch.info.name == name) throw Error("TensorWriter: channel '" + name + "' added twice");
  if (axes.empty()) throw Error("TensorWriter: channel '" + name + "' has no axes");
  Channel ch;
  ch.info.name = name;
  ch.info.masked = masked;
  ch.info.flow = flow;
  ch.nbins = 1;
  for (auto& a : axes) {
    if (a.core_class.empty()) a.core_class = pickle::core_class_for(a);
    ch.nbins *= flow ? a.extent() : a.size;
  }
  ch.info.axes = std::move(axes);
  channels_.push_back(std::move(ch));
}

void TensorWriter::add_data(const std::string& channel_name, std::vector<double> values,
                            std::optional<std::vector<double>> variances) {
  Channel& ch = channel(channel_name);
  if (ch.info.masked) throw Error("TensorWriter: channel '" + channel_name + "' is masked and has no data");
  if (ch.data_obs) throw Error("TensorWriter: data for channel '" + channel_name + "' already set");
  if (static_cast<int64_t>(values.size()) != ch.nbins)
    throw Error("TensorWriter: data for channel '" + channel_name + "' has " + std::to_string(values.size()) +
                " bins, channel has " + std::to_string(ch.nbins));
  check_finite(values, "data of channel '" + channel_name + "'");
  std::vector<double> var = variances ? std::move(*variances) : values;
  if (var.size() != values.size())
    throw Error("TensorWriter: data variances for channel '" + channel_name + "' have the wrong size");
  check_finite(var, "data variances of channel '" + channel_name + "'");
  if (std::any_of(var.begin(), var.end(), [](double v) { return v < 0; }))
    throw Error("TensorWriter: negative data variances in channel '" + channel_name + "'");
  ch.data_obs = std::move(values);
  ch.data_var = std::move(var);
}

void TensorWriter::add_pseudodata(const std::string& name, const std::string& channel_name,
                                  std::vector<double> values) {
  Channel& ch = channel(channel_name);
  if (ch.info.masked) throw Error("TensorWriter: channel '" + channel_name + "' is masked and has no pseudodata");
  if (ch.pseudodata.count(name))
    throw Error("TensorWriter: pseudodata '" + name + "' for channel '" + channel_name + "' already set");
  if (static_cast<int64_t>(values.size()) != ch.nbins)
    throw Error("TensorWriter: pseudodata '" + name + "' for channel '" + channel_name + "' has the wrong size");
  check_finite(values, "pseudodata '" + name + "'");
  if (std::find(pseudodata_names_.begin(), pseudodata_names_.end(), name) == pseudodata_names_.end())
    pseudodata_names_.push_back(name);
  ch.pseudodata[name] = std::move(values);
}

void TensorWriter::add_data_covariance(Eigen::MatrixXd covariance) {
  if (covariance.rows() != covariance.cols())
    throw Error("TensorWriter: data covariance must be square");
  if (!covariance.allFinite()) throw Error("TensorWriter: data covariance has NaN or Inf values");
  data_covariance_ = std::move(covariance);
}

void TensorWriter::add_process(const std::string& channel_name, const std::string& process,
                               std::vector<double> values, bool signal,
                               std::optional<std::vector<double>> variances) {
  Channel& ch = channel(channel_name);
  if (ch.norm.count(process))
    throw Error("TensorWriter: nominal of process '" + process + "' in channel '" + channel_name +
                "' already set");
  if (static_cast<int64_t>(values.size()) != ch.nbins)
    throw Error("TensorWriter: process '" + process + "' in channel '" + channel_name + "' has " +
                std::to_string(values.size()) + " bins, channel has " + std::to_string(ch.nbins));
  check_finite(values, "nominal of process '" + process + "'");
  std::vector<double> sumw2 = variances ? std::move(*variances) : values;
  if (sumw2.size() != values.size())
    throw Error("TensorWriter: variances of process '" + process + "' have the wrong size");
  check_finite(sumw2, "variances of process '" + process + "'");
  if (std::any_of(sumw2.begin(), sumw2.end(), [](double v) { return v < 0; }))
    throw Error("TensorWriter: negative variances for process '" + process + "' in channel '" +
                channel_name + "' (pass the sum of squared weights explicitly)");
  if (!allow_negative_expectation_)
    for (double& v : values) v = std::max(v, 0.0);
  (signal ? signals_ : backgrounds_).insert(process);
  ch.norm[process] = std::move(values);
  ch.sumw2[process] = std::move(sumw2);
}

const std::vector<double>& TensorWriter::nominal(Channel& ch, const std::string& process) const {
  auto it = ch.norm.find(process);
  if (it == ch.norm.end())
    throw Error("TensorWriter: process '" + process + "' has no nominal in channel '" + ch.info.name + "'");
  return it->second;
}

std::vector<double> TensorWriter::logk_of(const std::vector<double>& variation,
                                          const std::vector<double>& nom, double kfactor) const {
  if (variation.size() != nom.size())
    throw Error("TensorWriter: systematic variation has " + std::to_string(variation.size()) +
                " bins, nominal has " + std::to_string(nom.size()));
  check_finite(variation, "systematic variation");
  std::vector<double> logk(nom.size());
  for (size_t i = 0; i < nom.size(); ++i) {
    if (systematic_type_ == SystematicType::log_normal) {
      // A sign flip or a zero gives rabbit's constant log(1e-3).
      logk[i] = nom[i] * variation[i] > 0 ? kfactor * std::log(variation[i] / nom[i]) : kLogkEpsilon;
    } else {
      logk[i] = kfactor * (variation[i] - nom[i]);
    }
  }
  return logk;
}

void TensorWriter::book_logk(std::map<std::string, std::map<std::string, std::vector<double>>>& store,
                             Channel& ch, const std::string& process, const std::string& syst,
                             std::vector<double> logk) {
  const auto& nom = nominal(ch, process);
  for (size_t i = 0; i < logk.size(); ++i)
    if (nom[i] == 0.0) logk[i] = 0.0;  // keep the systematic tensor as sparse as the nominal
  store[process][syst] = std::move(logk);
}

void TensorWriter::book_systematic(const std::string& name, const SystematicOptions& options) {
  if (options.constrained ? systs_unconstrained_.count(name) : systs_constrained_.count(name))
    throw Error("TensorWriter: systematic '" + name + "' booked both constrained and unconstrained");
  (options.constrained ? systs_constrained_ : systs_unconstrained_).insert(name);
  if (options.noi) systs_noi_.insert(name);
  if (options.groups) {
    for (const auto& g : *options.groups) groups_[g].insert(name);
  } else {
    groups_[name].insert(name);
  }
}

void TensorWriter::book_asymmetric(const std::string& name, const std::string& process, Channel& ch,
                                   const std::vector<double>& up, const std::vector<double>& down,
                                   const SystematicOptions& options) {
  // up = logk(up variation), down = -logk(down variation), as in rabbit's _compute_asym_syst.
  const size_t n = up.size();
  std::vector<double> avg(n), other(n);
  switch (options.symmetrize) {
    case Symmetrization::conservative:
      for (size_t i = 0; i < n; ++i) avg[i] = std::abs(up[i]) > std::abs(down[i]) ? up[i] : down[i];
      book_logk(ch.logkavg, ch, process, name, avg);
      book_systematic(name, options);
      return;
    case Symmetrization::average:
      for (size_t i = 0; i < n; ++i) avg[i] = 0.5 * (up[i] + down[i]);
      book_logk(ch.logkavg, ch, process, name, avg);
      book_systematic(name, options);
      return;
    case Symmetrization::linear:
    case Symmetrization::quadratic: {
      const double factor = options.symmetrize == Symmetrization::quadratic ? std::sqrt(3.0) : 1.0;
      for (size_t i = 0; i < n; ++i) {
        avg[i] = 0.5 * (up[i] + down[i]);
        other[i] = 0.5 * factor * (up[i] - down[i]);
      }
      book_logk(ch.logkavg, ch, process, name + "SymDiff", other);
      book_systematic(name + "SymDiff", options);
      book_logk(ch.logkavg, ch, process, name + "SymAvg", avg);
      book_systematic(name + "SymAvg", options);
      return;
    }
    case Symmetrization::none:
      symmetric_tensor_ = false;
      for (size_t i = 0; i < n; ++i) {
        avg[i] = 0.5 * (up[i] + down[i]);
        other[i] = 0.5 * (up[i] - down[i]);
      }
      book_logk(ch.logkhalfdiff, ch, process, name, other);
      book_logk(ch.logkavg, ch, process, name, avg);
      book_systematic(name, options);
      return;
  }
}

void TensorWriter::add_systematic(const std::string& name, const std::string& process,
                                  const std::string& channel_name, const std::vector<double>& variation,
                                  const SystematicOptions& options) {
  Channel& ch = channel(channel_name);
  const auto& nom = nominal(ch, process);
  std::vector<double> var = variation;
  if (options.as_difference && var.size() == nom.size())
    for (size_t i = 0; i < var.size(); ++i) var[i] += nom[i];
  book_logk(ch.logkavg, ch, process, name, logk_of(var, nom, options.kfactor));
  book_systematic(name, options);
}

void TensorWriter::add_systematic(const std::string& name, const std::string& process,
                                  const std::string& channel_name, const std::vector<double>& up,
                                  const std::vector<double>& down, const SystematicOptions& options) {
  Channel& ch = channel(channel_name);
  const auto& nom = nominal(ch, process);
  std::vector<double> u = up, d = down;
  if (options.as_difference && u.size() == nom.size() && d.size() == nom.size())
    for (size_t i = 0; i < nom.size(); ++i) {
      u[i] += nom[i];
      d[i] += nom[i];
    }
  std::vector<double> logk_up = logk_of(u, nom, options.kfactor);
  std::vector<double> logk_down = logk_of(d, nom, options.kfactor);
  for (double& v : logk_down) v = -v;
  book_asymmetric(name, process, ch, logk_up, logk_down, options);
}

void TensorWriter::add_norm_systematic(const std::string& name, const std::vector<std::string>& processes,
                                       const std::string& channel_name, const std::vector<double>& kappas,
                                       const SystematicOptions& options) {
  if (kappas.size() != 1 && kappas.size() != processes.size())
    throw Error("TensorWriter: norm systematic '" + name + "': give one kappa or one per process (" +
                std::to_string(processes.size()) + "), got " + std::to_string(kappas.size()));
  Channel& ch = channel(channel_name);
  for (size_t i = 0; i < processes.size(); ++i) {
    const auto& nom = nominal(ch, processes[i]);
    const double kappa = kappas.size() == 1 ? kappas[0] : kappas[i];
    std::vector<double> var(nom.size());
    for (size_t b = 0; b < nom.size(); ++b) var[b] = nom[b] * kappa;
    book_logk(ch.logkavg, ch, processes[i], name, logk_of(var, nom, options.kfactor));
  }
  book_systematic(name, options);
}

void TensorWriter::add_norm_systematic(const std::string& name, const std::vector<std::string>& processes,
                                       const std::string& channel_name, double kappa_up, double kappa_down,
                                       const SystematicOptions& options) {
  Channel& ch = channel(channel_name);
  for (const auto& process : processes) {
    const auto& nom = nominal(ch, process);
    std::vector<double> up(nom.size()), down(nom.size());
    for (size_t b = 0; b < nom.size(); ++b) {
      up[b] = nom[b] * kappa_up;
      down[b] = nom[b] * kappa_down;
    }
    std::vector<double> logk_up = logk_of(up, nom, options.kfactor);
    std::vector<double> logk_down = logk_of(down, nom, options.kfactor);
    for (double& v : logk_down) v = -v;
    book_asymmetric(name, process, ch, logk_up, logk_down, options);
  }
}

void TensorWriter::add_beta_variations(const std::string& process, const std::string& source_channel,
                                       const std::string& dest_channel, std::vector<double> variation) {
  const Channel& src = channel(source_channel);
  Channel& dst = channel(dest_channel);
  if (!dst.info.masked)
    throw Error("TensorWriter: beta variations can only be applied to masked channels; '" + dest_channel +
                "' is not masked");
  if (src.info.masked)
    throw Error("TensorWriter: beta variations need an observed source channel; '" + source_channel +
                "' is masked");
  nominal(dst, process);  // the process must have a template in the destination channel
  if (static_cast<int64_t>(variation.size()) != dst.nbins * src.nbins)
    throw Error("TensorWriter: beta variation of process '" + process + "' from '" + source_channel + "' to '" +
                dest_channel + "' has " + std::to_string(variation.size()) + " values, expected " +
                std::to_string(dst.nbins) + " x " + std::to_string(src.nbins));
  check_finite(variation, "beta variation of process '" + process + "'");
  dst.beta_variations[source_channel][process] = std::move(variation);
}

void TensorWriter::add_external_gaussian_term(const std::string& name, std::vector<std::string> params,
                                              const Eigen::VectorXd& mean, const Eigen::MatrixXd& hess,
                                              std::optional<double> lognorm) {
  if (mean.size() != hess.rows() || hess.rows() != hess.cols())
    throw Error("TensorWriter: external term '" + name + "': mean and Hessian sizes differ");
  const Eigen::VectorXd hmu = hess * mean;
  add_external_term(name, std::move(params), Eigen::VectorXd(-hmu), hess, 0.5 * mean.dot(hmu), lognorm);
}

void TensorWriter::add_external_term(const std::string& name, std::vector<std::string> params,
                                     std::optional<Eigen::VectorXd> grad, std::optional<Eigen::MatrixXd> hess,
                                     std::optional<double> const_value, std::optional<double> lognorm) {
  const auto n = static_cast<Eigen::Index>(params.size());
  if (!grad && !hess) throw Error("TensorWriter: external term '" + name + "' needs a gradient or a Hessian");
  if (grad && grad->size() != n)
    throw Error("TensorWriter: external term '" + name + "': gradient size differs from the parameter count");
  if (hess && (hess->rows() != n || hess->cols() != n))
    throw Error("TensorWriter: external term '" + name + "': Hessian must be [n, n] for n parameters");
  for (const auto& t : external_terms_)
    if (t.name == name) throw Error("TensorWriter: external term '" + name + "' added twice");
  ExternalTerm t;
  t.name = name;
  t.params = std::move(params);
  t.grad_values = std::move(grad);
  t.hess = std::move(hess);
  for (const auto* v : {&const_value, &lognorm})
    if (*v && !std::isfinite(**v)) throw Error("TensorWriter: external term '" + name + "': scalars must be finite");
  t.const_value = const_value;
  t.lognorm = lognorm;
  external_terms_.push_back(std::move(t));
}

std::vector<std::string> TensorWriter::signals() const {
  return {signals_.begin(), signals_.end()};  // std::set of std::string: byte-wise sorted like Python
}

std::vector<std::string> TensorWriter::procs() const {
  std::vector<std::string> p(signals_.begin(), signals_.end());
  p.insert(p.end(), backgrounds_.begin(), backgrounds_.end());
  return p;
}

std::vector<std::string> TensorWriter::systs() const {
  auto s = natural_sorted({systs_unconstrained_.begin(), systs_unconstrained_.end()});
  auto c = natural_sorted({systs_constrained_.begin(), systs_constrained_.end()});
  s.insert(s.end(), c.begin(), c.end());
  return s;
}

std::vector<ChannelInfo> TensorWriter::channels() const {
  std::vector<ChannelInfo> out;
  int64_t start = 0;
  for (int pass = 0; pass < 2; ++pass)
    for (const auto& ch : channels_) {
      if (ch.info.masked != (pass == 1)) continue;
      ChannelInfo info = ch.info;
      info.start = start;
      info.stop = start + ch.nbins;
      start = info.stop;
      out.push_back(std::move(info));
    }
  return out;
}

void TensorWriter::write(const std::string& filename, const WriteOptions& options) const {
  for (const auto& s : signals_)
    if (backgrounds_.count(s))
      throw Error("TensorWriter: process '" + s + "' declared both as signal and as background");
  if (!options.write_meta && systematic_type_ == SystematicType::normal)
    throw OptionError("TensorWriter: writing without meta would lose systematic_type 'normal' "
                      "(readers default to log_normal); write the meta group");
  if (channels_.empty()) throw Error("TensorWriter: no channels");

  const std::vector<ChannelInfo> layout = channels();
  auto find_channel = [&](const std::string& name) -> const Channel& {
    for (const auto& ch : channels_)
      if (ch.info.name == name) return ch;
    throw Error("TensorWriter: internal error: channel " + name);
  };
  int64_t nbins = 0, nbinsfull = 0;
  for (const auto& info : layout) {
    const Channel& ch = find_channel(info.name);
    nbinsfull += ch.nbins;
    if (info.masked) continue;
    nbins += ch.nbins;
    if (!ch.data_obs) throw Error("TensorWriter: channel '" + info.name + "' has no data (add_data)");
    for (const auto& p : pseudodata_names_)
      if (!ch.pseudodata.count(p))
        throw Error("TensorWriter: pseudodata '" + p + "' missing for channel '" + info.name + "'");
  }
  if (data_covariance_ && data_covariance_->rows() != nbins)
    throw Error("TensorWriter: data covariance is " + std::to_string(data_covariance_->rows()) + "x" +
                std::to_string(data_covariance_->cols()) + ", expected " + std::to_string(nbins) +
                " (all non-masked bins)");

  const std::vector<std::string> procs_list = procs();
  const std::vector<std::string> systs_list = systs();
  const auto nproc = static_cast<int64_t>(procs_list.size());
  const auto nsyst = static_cast<int64_t>(systs_list.size());
  std::map<std::string, int64_t> proc_index, syst_index;
  for (int64_t i = 0; i < nproc; ++i) proc_index[procs_list[i]] = i;
  for (int64_t i = 0; i < nsyst; ++i) syst_index[systs_list[i]] = i;

  // Without meta, readers assume the asymmetric layout (docs/input-reader.md "Defaults without meta", docs/tensor-writer.md "Without meta").
  const bool symmetric_layout = symmetric_tensor_ && options.write_meta;
  const int64_t width = symmetric_layout ? nsyst : 2 * nsyst;

  std::vector<double> norm(static_cast<size_t>(nbinsfull * nproc), 0.0);
  std::vector<double> sumw2(norm.size(), 0.0);
  std::vector<double> logk(static_cast<size_t>(nbinsfull * nproc * width), 0.0);
  std::vector<double> data_obs(static_cast<size_t>(nbins)), data_var(static_cast<size_t>(nbins));
  // hbetavariations [nbinsfull, nbins, nproc]: row = destination bin, column = source (observed) bin
  bool has_beta_variations = false;
  for (const auto& ch : channels_) has_beta_variations = has_beta_variations || !ch.beta_variations.empty();
  if (has_beta_variations && options.sparse)
    throw OptionError("TensorWriter: beta variations are only supported for dense tensors");
  std::vector<double> beta_variations;
  if (has_beta_variations) beta_variations.assign(static_cast<size_t>(nbinsfull * nbins * nproc), 0.0);
  auto layout_of = [&](const std::string& name) -> const ChannelInfo& {
    for (const auto& info : layout)
      if (info.name == name) return info;
    throw Error("TensorWriter: internal error: channel " + name);
  };
  const auto npseudo = static_cast<int64_t>(pseudodata_names_.size());
  std::vector<double> pseudodata(static_cast<size_t>(nbins * npseudo), 0.0);
  for (const auto& info : layout) {
    const Channel& ch = find_channel(info.name);
    for (const auto& [proc, values] : ch.norm) {
      const int64_t p = proc_index.at(proc);
      const auto& w2 = ch.sumw2.at(proc);
      for (int64_t b = 0; b < ch.nbins; ++b) {
        norm[(info.start + b) * nproc + p] = values[b];
        sumw2[(info.start + b) * nproc + p] = w2[b];
      }
      auto fill = [&](const auto& store, int64_t column_offset) {
        auto it = store.find(proc);
        if (it == store.end()) return;
        for (const auto& [syst, values_logk] : it->second) {
          const int64_t column = column_offset + syst_index.at(syst);
          for (int64_t b = 0; b < ch.nbins; ++b)
            logk[((info.start + b) * nproc + p) * width + column] = values_logk[b];
        }
      };
      fill(ch.logkavg, 0);
      if (!symmetric_layout) fill(ch.logkhalfdiff, nsyst);
    }
    for (const auto& [source, per_process] : ch.beta_variations) {
      const ChannelInfo& src = layout_of(source);
      const int64_t nsrc = src.stop - src.start;
      for (const auto& [proc, values] : per_process) {
        const int64_t p = proc_index.at(proc);
        for (int64_t b = 0; b < ch.nbins; ++b)
          for (int64_t j = 0; j < nsrc; ++j)
            beta_variations[((info.start + b) * nbins + src.start + j) * nproc + p] = values[b * nsrc + j];
      }
    }
    if (info.masked) continue;
    for (int64_t b = 0; b < ch.nbins; ++b) {
      data_obs[info.start + b] = (*ch.data_obs)[b];
      data_var[info.start + b] = (*ch.data_var)[b];
      for (int64_t j = 0; j < npseudo; ++j)
        pseudodata[(info.start + b) * npseudo + j] = ch.pseudodata.at(pseudodata_names_[j])[b];
    }
  }

  std::vector<double> constraintweights(static_cast<size_t>(nsyst), 1.0);
  for (const auto& s : systs_unconstrained_) constraintweights[syst_index.at(s)] = 0.0;
  std::vector<std::string> systsnoconstraint = natural_sorted({systs_unconstrained_.begin(), systs_unconstrained_.end()});

  std::vector<std::string> group_names;
  for (const auto& [g, members] : groups_) group_names.push_back(g);
  group_names = natural_sorted(group_names);
  std::vector<std::vector<int32_t>> group_idxs;
  for (const auto& g : group_names) {
    std::vector<int32_t> idx;
    for (const auto& m : groups_.at(g)) idx.push_back(static_cast<int32_t>(syst_index.at(m)));
    std::sort(idx.begin(), idx.end());
    group_idxs.push_back(std::move(idx));
  }
  std::vector<int32_t> noiidxs;
  for (const auto& s : natural_sorted({systs_noi_.begin(), systs_noi_.end()}))
    noiidxs.push_back(static_cast<int32_t>(syst_index.at(s)));

  // ---- write ----
  if (options.compression == Compression::blosc2) require_blosc2_encoder(filename);
  const size_t max_chunk_bytes = std::max<size_t>(
      {size_t{4} * 1024 * 1024, static_cast<size_t>(nproc) * 8, static_cast<size_t>(2 * nsyst) * 8});
  const std::string tmp_name = filename + ".tmp";
  H5Out out(filename, options.compression);
  {
    h5::Handle fcpl(H5Pcreate(H5P_FILE_CREATE));
    H5Pset_obj_track_times(fcpl, false);
    h5::Handle file(H5Fcreate(tmp_name.c_str(), H5F_ACC_TRUNC, fcpl, H5P_DEFAULT));
    if (!file.valid()) throw ResourceError(filename + ": cannot create the output file");

    if (options.write_meta) {
      std::vector<ChannelInfo> meta_channels = layout;
      out.write_meta(file, pickle::make_meta_pickle(meta_channels, symmetric_tensor_, systematic_type_,
                                                    options.meta_info));
    }
    out.write_strings(file, "hprocs", procs_list);
    out.write_strings(file, "hsignals", signals());
    out.write_strings(file, "hsysts", systs_list);
    out.write_strings(file, "hsystsnoconstraint", systsnoconstraint);
    out.write_strings(file, "hsystgroups", group_names);
    out.write_index_lists(file, "hsystgroupidxs", group_idxs);
    out.write_int32(file, "hnoiidxs", noiidxs);
    out.write_strings(file, "hpseudodatanames", pseudodata_names_);

    out.write_doubles(file, "hconstraintweights", constraintweights, {nsyst}, false, max_chunk_bytes);
    out.write_doubles(file, "hdata_obs", data_obs, {nbins}, false, max_chunk_bytes);
    if (data_var != data_obs) out.write_doubles(file, "hdata_var", data_var, {nbins}, false, max_chunk_bytes);
    out.write_doubles(file, "hpseudodata", pseudodata, {nbins, npseudo}, false, max_chunk_bytes);
    if (data_covariance_) {
      Eigen::FullPivLU<Eigen::MatrixXd> lu(*data_covariance_);
      if (!lu.isInvertible()) throw Error("TensorWriter: the data covariance is singular");
      const Eigen::MatrixXd inv = lu.inverse();
      std::vector<double> flat(static_cast<size_t>(nbins * nbins));
      for (int64_t i = 0; i < nbins; ++i)
        for (int64_t j = 0; j < nbins; ++j) flat[i * nbins + j] = inv(i, j);
      out.write_doubles(file, "hdata_cov_inv", flat, {nbins, nbins}, false, max_chunk_bytes);
    }
    out.write_doubles(file, "hsumw", norm, {nbinsfull, nproc}, options.float32, max_chunk_bytes);
    out.write_doubles(file, "hsumw2", sumw2, {nbinsfull, nproc}, options.float32, max_chunk_bytes);

    if (options.sparse) {
      std::vector<int64_t> norm_indices;
      std::vector<double> norm_values;
      std::vector<int64_t> logk_indices;
      std::vector<double> logk_values;
      for (int64_t flat = 0; flat < nbinsfull * nproc; ++flat) {
        if (norm[flat] == 0.0) continue;
        const auto k = static_cast<int64_t>(norm_values.size());
        norm_indices.push_back(flat / nproc);
        norm_indices.push_back(flat % nproc);
        norm_values.push_back(norm[flat]);
        for (int64_t c = 0; c < width; ++c) {
          const double v = logk[flat * width + c];
          if (v == 0.0) continue;
          logk_indices.push_back(k);
          logk_indices.push_back(c);
          logk_values.push_back(v);
        }
      }
      const auto nnz_norm = static_cast<int64_t>(norm_values.size());
      const auto nnz_logk = static_cast<int64_t>(logk_values.size());
      auto write_sparse = [&](const std::string& name, const std::vector<int64_t>& indices,
                              const std::vector<double>& values, int64_t nnz, std::vector<int64_t> dense_shape) {
        h5::Handle group(make_group(file, name));
        if (!group.valid()) out.fail(name);
        out.write_flat(group, "indices", indices, {nnz, 2}, H5T_STD_I64LE, H5T_NATIVE_INT64, max_chunk_bytes);
        // Like current rabbit: values uncompressed with Blosc2, deflated in the gzip generation.
        out.write_doubles(group, "values", values, {nnz}, options.float32, max_chunk_bytes,
                          options.compression != Compression::blosc2);
        out.write_shape_attribute(group, dense_shape, name, "dense_shape");
      };
      write_sparse("hnorm_sparse", norm_indices, norm_values, nnz_norm, {nbinsfull, nproc});
      write_sparse("hlogk_sparse", logk_indices, logk_values, nnz_logk, {nnz_norm, width});
    } else {
      out.write_doubles(file, "hnorm", norm, {nbinsfull, nproc}, options.float32, max_chunk_bytes);
      if (symmetric_layout)
        out.write_doubles(file, "hlogk", logk, {nbinsfull, nproc, nsyst}, options.float32, max_chunk_bytes);
      else
        out.write_doubles(file, "hlogk", logk, {nbinsfull, nproc, 2, nsyst}, options.float32, max_chunk_bytes);
      if (has_beta_variations)
        out.write_doubles(file, "hbetavariations", beta_variations, {nbinsfull, nbins, nproc}, options.float32,
                          max_chunk_bytes);
    }

    if (!external_terms_.empty()) {
      h5::Handle group(make_group(file, "external_terms"));
      if (!group.valid()) out.fail("external_terms");
      for (const auto& term : external_terms_) {
        h5::Handle sub(make_group(group, term.name));
        if (!sub.valid()) out.fail("external_terms/" + term.name);
        out.write_strings(sub, "params", term.params);
        // Written only when given: absent tells the reader to derive them (rabbit PR #147).
        if (term.const_value) out.write_scalar(sub, "const", *term.const_value);
        if (term.lognorm) out.write_scalar(sub, "lognorm", *term.lognorm);
        const auto n = static_cast<int64_t>(term.params.size());
        if (term.grad_values) {
          std::vector<double> g(term.grad_values->data(), term.grad_values->data() + n);
          out.write_doubles(sub, "grad_values", g, {n}, false, max_chunk_bytes);
        }
        if (term.hess) {
          std::vector<double> h(static_cast<size_t>(n * n));
          for (int64_t i = 0; i < n; ++i)
            for (int64_t j = 0; j < n; ++j) h[i * n + j] = (*term.hess)(i, j);
          out.write_doubles(sub, "hess_dense", h, {n, n}, false, max_chunk_bytes);
        }
      }
    }
    if (H5Fflush(file, H5F_SCOPE_GLOBAL) < 0) out.fail("(flush)");
  }
  std::error_code ec;
  std::filesystem::rename(tmp_name, filename, ec);
  if (ec) throw ResourceError(filename + ": cannot rename " + tmp_name + ": " + ec.message());
}

}  // namespace rabbit
