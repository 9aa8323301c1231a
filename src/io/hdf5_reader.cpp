// Thin HDF5 reading layer for the fit-tensor reader (see hdf5_reader.hpp).
#include "rabbit/io/hdf5_reader.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <utility>

#include "hdf5_structure_probe.hpp"
#include "hdf5_vlen_heap_check.hpp"
#include "rabbit/core/error.hpp"
#include "rabbit/core/logging.hpp"
#include "rabbit/io/blosc_filters.hpp"

namespace rabbit::h5 {
namespace {

herr_t collect_error(unsigned /*n*/, const H5E_error2_t* err, void* client) {
  auto* out = static_cast<std::vector<std::string>*>(client);
  if (err != nullptr && err->desc != nullptr && err->desc[0] != '\0') out->emplace_back(err->desc);
  return 0;
}

// Replaces invalid UTF-8 sequences by U+FFFD; returns true if anything was replaced.
bool sanitize_utf8(std::string& s) {
  bool replaced = false;
  std::string out;
  size_t i = 0;
  const size_t n = s.size();
  auto cont = [&](size_t k) { return k < n && (static_cast<unsigned char>(s[k]) & 0xC0) == 0x80; };
  while (i < n) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t len = 0;
    if (c < 0x80)
      len = 1;
    else if (c >= 0xC2 && c <= 0xDF)
      len = 2;
    else if (c >= 0xE0 && c <= 0xEF)
      len = 3;
    else if (c >= 0xF0 && c <= 0xF4)
      len = 4;
    bool ok = len > 0;
    for (size_t k = 1; ok && k < len; ++k) ok = cont(i + k);
    if (ok) {
      out.append(s, i, len);
      i += len;
    } else {
      out += "\xEF\xBF\xBD";
      replaced = true;
      ++i;
    }
  }
  if (replaced) s = std::move(out);
  return replaced;
}

}  // namespace

// A buffer of `count` elements for `path`; a size no memory holds (a corrupt dataspace) is a one-line
// ResourceError naming the dataset and the figure, not a bare std::bad_alloc.
template <class T>
std::vector<T> Reader::buffer_for(const std::string& path, int64_t count) const {
  try {
    return std::vector<T>(static_cast<size_t>(count));
  } catch (const std::bad_alloc&) {
  } catch (const std::length_error&) {
  }
  throw ResourceError(filename_ + ": dataset '" + path + "': " + std::to_string(count) + " elements (" +
                      std::to_string(static_cast<double>(count) * sizeof(T) / (1 << 30)) +
                      " GiB) do not fit in memory");
}

std::string shape_to_string(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ",";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

std::string DatasetInfo::shape_string() const {
  return shape_to_string(shape);
}

std::string DatasetInfo::type_description() const {
  switch (type_class) {
    case TypeClass::floating:
      return "floating point " + std::to_string(type_size) + " bytes";
    case TypeClass::integer:
      return std::string(is_signed ? "integer " : "unsigned integer ") + std::to_string(type_size) + " bytes";
    case TypeClass::string:
      return "string";
    case TypeClass::vlen:
      return "variable-length sequence";
    case TypeClass::other:
      return "non-numeric type";
  }
  return "?";
}

std::string filter_name(int filter_id) {
  switch (filter_id) {
    case 1:
      return "deflate";
    case 2:
      return "shuffle";
    case 3:
      return "fletcher32";
    case 4:
      return "szip";
    case 5:
      return "nbit";
    case 6:
      return "scaleoffset";
    case 307:
      return "bzip2";
    case 32000:
      return "lzf";
    case 32001:
      return "blosc";
    case 32004:
      return "lz4";
    case 32008:
      return "bitshuffle";
    case 32015:
      return "zstd";
    case 32026:
      return "blosc2";
    default:
      return "unknown";
  }
}

std::string current_hdf5_error() {
  std::vector<std::string> descs;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, collect_error, &descs);
  H5Eclear2(H5E_DEFAULT);
  std::string s;
  // Innermost two descriptions are the most specific.
  for (size_t i = 0; i < descs.size() && i < 2; ++i) {
    if (i) s += "; ";
    s += descs[i];
  }
  return s;
}

void configure_hdf5_for_application() {
  H5dont_atexit();  // only effective before the library initializes: the first HDF5 call of main
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
}

std::string current_hdf5_cause() {
  std::vector<std::string> descs;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, collect_error, &descs);
  // HDF5's file drivers record "..., errno = 13, error message = 'Permission denied', ...".
  const std::string key = "error message = '";
  for (const auto& d : descs) {
    const size_t at = d.find(key);
    if (at == std::string::npos) continue;
    const size_t end = d.find('\'', at + key.size());
    if (end == std::string::npos) continue;
    H5Eclear2(H5E_DEFAULT);
    return d.substr(at + key.size(), end - at - key.size());
  }
  return current_hdf5_error();
}

ErrorSilencer::ErrorSilencer() {
  H5Eget_auto2(H5E_DEFAULT, &func_, &data_);
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
}
ErrorSilencer::~ErrorSilencer() {
  H5Eset_auto2(H5E_DEFAULT, func_, data_);
}

Reader::Reader(std::string filename) : filename_(std::move(filename)) {
  H5Eget_auto2(H5E_DEFAULT, &saved_error_func_, &saved_error_data_);
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  io::ensure_blosc_filters();
  htri_t is_hdf5 = H5Fis_hdf5(filename_.c_str());
  if (is_hdf5 <= 0) {
    std::string cause = is_hdf5 == 0 ? "file signature not found" : current_hdf5_error();
    H5Eset_auto2(H5E_DEFAULT, saved_error_func_, saved_error_data_);
    throw InputError(filename_ +
                     ": not an HDF5 file (or unreadable): " + (cause.empty() ? "cannot open" : cause));
  }
  try {
    probe_hdf5_structure(filename_);  // docs/reliability.md "Corrupt files and the HDF5 library"
  } catch (...) {
    H5Eset_auto2(H5E_DEFAULT, saved_error_func_, saved_error_data_);
    throw;
  }
  file_ = Handle(H5Fopen(filename_.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
  if (!file_.valid()) {
    std::string cause = current_hdf5_error();
    H5Eset_auto2(H5E_DEFAULT, saved_error_func_, saved_error_data_);
    throw InputError(filename_ + ": not an HDF5 file (or unreadable): " + cause);
  }
}

Reader::~Reader() {
  file_.reset();
  H5Eset_auto2(H5E_DEFAULT, saved_error_func_, saved_error_data_);
}

void Reader::fail(const std::string& object, const std::string& what) const {
  throw InputError(filename_ + ": dataset '" + object + "': " + what);
}
void Reader::fail_file(const std::string& what) const {
  throw InputError(filename_ + ": " + what);
}

bool Reader::exists(const std::string& path) const {
  // H5Lexists requires every intermediate group to exist: check prefix by prefix.
  size_t pos = 0;
  while (true) {
    const size_t slash = path.find('/', pos);
    const std::string prefix = path.substr(0, slash);
    if (!prefix.empty() && H5Lexists(file_, prefix.c_str(), H5P_DEFAULT) <= 0) {
      H5Eclear2(H5E_DEFAULT);
      return false;
    }
    if (slash == std::string::npos) return true;
    if (!prefix.empty() && !is_group(prefix)) return false;
    pos = slash + 1;
  }
}

bool Reader::is_group(const std::string& path) const {
  H5O_info_t info;
  if (H5Oget_info_by_name(file_, path.c_str(), &info, H5P_DEFAULT) < 0) {
    H5Eclear2(H5E_DEFAULT);
    return false;
  }
  return info.type == H5O_TYPE_GROUP;
}

bool Reader::is_dataset(const std::string& path) const {
  if (!exists(path)) return false;
  H5O_info_t info;
  if (H5Oget_info_by_name(file_, path.c_str(), &info, H5P_DEFAULT) < 0) {
    H5Eclear2(H5E_DEFAULT);
    return false;
  }
  return info.type == H5O_TYPE_DATASET;
}

std::vector<std::string> Reader::children(const std::string& group) const {
  std::vector<std::string> names;
  Handle g(H5Gopen2(file_, group.c_str(), H5P_DEFAULT));
  if (!g.valid()) fail(group, "cannot open group: " + current_hdf5_error());
  H5G_info_t ginfo;
  if (H5Gget_info(g, &ginfo) < 0) fail(group, "cannot list group: " + current_hdf5_error());
  for (hsize_t i = 0; i < ginfo.nlinks; ++i) {
    const ssize_t len = H5Lget_name_by_idx(g, ".", H5_INDEX_NAME, H5_ITER_INC, i, nullptr, 0, H5P_DEFAULT);
    if (len < 0) fail(group, "cannot list group: " + current_hdf5_error());
    std::string name(static_cast<size_t>(len) + 1, '\0');
    H5Lget_name_by_idx(g, ".", H5_INDEX_NAME, H5_ITER_INC, i, name.data(), name.size(), H5P_DEFAULT);
    name.resize(static_cast<size_t>(len));
    names.push_back(std::move(name));
  }
  return names;
}

Handle Reader::open_dataset(const std::string& path) const {
  if (!exists(path)) fail_file("missing dataset '" + path + "'");
  if (!is_dataset(path)) fail(path, "expected a dataset, found a group or other object");
  Handle d(H5Dopen2(file_, path.c_str(), H5P_DEFAULT));
  if (!d.valid()) fail(path, "cannot open: " + current_hdf5_error());
  return d;
}

DatasetInfo Reader::info(const std::string& path) const {
  Handle d = open_dataset(path);
  DatasetInfo info;
  info.path = path;
  Handle type(H5Dget_type(d));
  const H5T_class_t cls = H5Tget_class(type);
  info.type_size = H5Tget_size(type);
  switch (cls) {
    case H5T_FLOAT:
      info.type_class = TypeClass::floating;
      break;
    case H5T_INTEGER:
      info.type_class = TypeClass::integer;
      info.is_signed = H5Tget_sign(type) != H5T_SGN_NONE;
      break;
    case H5T_STRING:
      info.type_class = TypeClass::string;
      break;
    case H5T_VLEN:
      info.type_class = TypeClass::vlen;
      break;
    default:
      info.type_class = TypeClass::other;
      break;
  }
  Handle space(H5Dget_space(d));
  const int rank = H5Sget_simple_extent_ndims(space);
  if (rank < 0) fail(path, "cannot read the dataspace: " + current_hdf5_error());
  info.storage_rank = rank;
  std::vector<hsize_t> dims(static_cast<size_t>(rank));
  if (rank > 0) H5Sget_simple_extent_dims(space, dims.data(), nullptr);
  const hssize_t npoints = H5Sget_simple_extent_npoints(space);
  info.size = npoints < 0 ? 0 : static_cast<int64_t>(npoints);
  if (H5Sget_simple_extent_type(space) == H5S_NULL) info.size = 0;

  if (H5Aexists(d, "original_shape") > 0) {
    info.has_original_shape = true;
    Handle attr(H5Aopen(d, "original_shape", H5P_DEFAULT));
    Handle atype(H5Aget_type(attr));
    if (H5Tget_class(atype) != H5T_INTEGER) fail(path, "attribute 'original_shape' must be integer");
    Handle aspace(H5Aget_space(attr));
    const int arank = H5Sget_simple_extent_ndims(aspace);
    if (arank > 1) fail(path, "attribute 'original_shape' must be 1-D");
    hssize_t n = H5Sget_simple_extent_npoints(aspace);
    if (H5Sget_simple_extent_type(aspace) == H5S_NULL) n = 0;
    if (n < 0 || n > 32) fail(path, "attribute 'original_shape' has an invalid length");
    info.shape.assign(static_cast<size_t>(n), 0);
    if (n > 0 && H5Aread(attr, H5T_NATIVE_INT64, info.shape.data()) < 0) {
      fail(path, "cannot read attribute 'original_shape': " + current_hdf5_error());
    }
    int64_t product = 1;
    for (int64_t e : info.shape) {
      if (e < 0) fail(path, "original_shape " + info.shape_string() + " has a negative extent");
      if (e != 0 && product > std::numeric_limits<int64_t>::max() / e) {
        fail(path, "original_shape " + info.shape_string() + " overflows");
      }
      product *= e;
    }
    if (product != info.size) {
      fail(path, "original_shape " + info.shape_string() + " has " + std::to_string(product) +
                     " elements, dataset has " + std::to_string(info.size));
    }
  } else {
    info.shape.assign(dims.begin(), dims.end());
  }
  return info;
}

void Reader::check_filters(hid_t dataset, const std::string& path) const {
  Handle dcpl(H5Dget_create_plist(dataset));
  const int nfilters = H5Pget_nfilters(dcpl);
  for (int i = 0; i < nfilters; ++i) {
    unsigned flags = 0, config = 0;
    size_t ncd = 0;
    char name[256] = {0};
    const H5Z_filter_t id =
        H5Pget_filter2(dcpl, static_cast<unsigned>(i), &flags, &ncd, nullptr, sizeof name, name, &config);
    if (id < 0) fail(path, "cannot inspect the filter pipeline: " + current_hdf5_error());
    if (H5Zfilter_avail(id) > 0) continue;
    H5Eclear2(H5E_DEFAULT);
    const char* plugin_path = std::getenv("HDF5_PLUGIN_PATH");
    std::string known = filter_name(static_cast<int>(id));
    if (known == "unknown" && name[0] != '\0') known = name;
    std::string why;
    std::string fix;
    if (id == io::kBloscFilterId || id == io::kBlosc2FilterId) {
      why =
          "built-in decoder disabled (RABBIT_BLOSC_FILTERS=plugin) and no plugin found in "
          "HDF5_PLUGIN_PATH=" +
          std::string(plugin_path ? plugin_path : "(unset)");
      fix = "unset RABBIT_BLOSC_FILTERS, or export HDF5_PLUGIN_PATH=<directory with the " +
            std::string(id == io::kBloscFilterId ? "libh5blosc.so" : "libh5blosc2.so") +
            " plugin> (e.g. $(python3 -c 'import hdf5plugin; print(hdf5plugin.PLUGIN_PATH)'))";
    } else {
      why = "no decoder registered and no plugin found in HDF5_PLUGIN_PATH=" +
            std::string(plugin_path ? plugin_path : "(unset)");
      fix = "export HDF5_PLUGIN_PATH=<directory with an HDF5 plugin for filter " + std::to_string(id) +
            ">, or rewrite the file with gzip/blosc2 compression";
    }
    fail(path, "uses HDF5 filter " + std::to_string(id) + " ('" + known + "') which is not available (" +
                   why + "); fix: " + fix);
  }
}

void Reader::read_numeric(const DatasetInfo& info, hid_t mem_type, void* dst, int64_t offset,
                          int64_t count) const {
  if (count <= 0)
    return;  // never touch the filter path of empty datasets (docs/input-reader.md "File structure and
             // storage conventions")
  if (offset < 0 || offset + count > info.size) {
    fail(info.path, "read range [" + std::to_string(offset) + "," + std::to_string(offset + count) +
                        ") outside the " + std::to_string(info.size) + " stored elements");
  }
  Handle file_space;
  Handle mem_space;
  if (offset != 0 || count != info.size) {
    if (info.storage_rank != 1) fail(info.path, "partial reads need a 1-D (flat) dataset");
    Handle d = open_dataset(info.path);
    file_space = Handle(H5Dget_space(d));
    const hsize_t start = static_cast<hsize_t>(offset);
    const hsize_t n = static_cast<hsize_t>(count);
    H5Sselect_hyperslab(file_space, H5S_SELECT_SET, &start, nullptr, &n, nullptr);
    mem_space = Handle(H5Screate_simple(1, &n, nullptr));
  }
  read_selection(info, mem_type, mem_space.valid() ? mem_space.get() : H5S_ALL,
                 file_space.valid() ? file_space.get() : H5S_ALL, dst);
}

void Reader::read_selection(const DatasetInfo& info, hid_t mem_type, hid_t mem_space, hid_t file_space,
                            void* dst) const {
  Handle d = open_dataset(info.path);
  check_filters(d, info.path);
  io::take_filter_error();
  const herr_t status = H5Dread(d, mem_type, mem_space, file_space, H5P_DEFAULT, dst);
  if (status < 0) {
    std::string cause = io::take_filter_error();
    const std::string hdf5 = current_hdf5_error();
    if (cause.empty()) cause = hdf5.empty() ? "H5Dread failed" : hdf5;
    fail(info.path, cause);
  }
}

void Reader::read_doubles(const DatasetInfo& info, double* dst) const {
  read_doubles_range(info, 0, info.size, dst);
}

std::vector<double> Reader::read_doubles(const DatasetInfo& info) const {
  std::vector<double> out = buffer_for<double>(info.path, info.size);
  read_doubles(info, out.data());
  return out;
}

void Reader::read_doubles_range(const DatasetInfo& info, int64_t offset, int64_t count, double* dst) const {
  if (info.type_class != TypeClass::floating) {
    fail(info.path, "must be floating point (float32/float64), found " + info.type_description());
  }
  if (info.type_size != sizeof(double) && offset == 0) {
    log().warn("{}: dataset '{}' is stored as {}; promoted to double", filename_, info.path,
               info.type_description());
  }
  // HDF5 converts float32 -> double through its small conversion buffer, chunk by chunk, directly
  // into dst: no full-size temporary.
  read_numeric(info, H5T_NATIVE_DOUBLE, dst, offset, count);
}

std::vector<int64_t> Reader::read_ints(const DatasetInfo& info) const {
  std::vector<int64_t> out = buffer_for<int64_t>(info.path, info.size);
  read_ints_range(info, 0, info.size, out.data());
  return out;
}

void Reader::read_ints_range(const DatasetInfo& info, int64_t offset, int64_t count, int64_t* dst) const {
  if (info.type_class != TypeClass::integer) {
    fail(info.path, "must be integer, found " + info.type_description());
  }
  if (!info.is_signed && info.type_size >= 8) {
    // HDF5 would clip values above INT64_MAX silently: read unsigned and check.
    static_assert(sizeof(uint64_t) == sizeof(int64_t));
    read_numeric(info, H5T_NATIVE_UINT64, dst, offset, count);
    for (int64_t i = 0; i < count; ++i) {
      if (static_cast<uint64_t>(dst[i]) > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        fail(info.path, "element " + std::to_string(offset + i) + " exceeds the int64 range");
      }
    }
    return;
  }
  read_numeric(info, H5T_NATIVE_INT64, dst, offset, count);
}

std::vector<uint8_t> Reader::read_bytes(const DatasetInfo& info) const {
  if (info.type_class != TypeClass::integer || info.type_size != 1) {
    fail(info.path, "must be a uint8 byte array, found " + info.type_description());
  }
  if (info.storage_rank != 1) fail(info.path, "must be 1-D");
  std::vector<uint8_t> out = buffer_for<uint8_t>(info.path, info.size);
  read_numeric(info, H5T_NATIVE_UINT8, out.data(), 0, info.size);
  return out;
}

std::vector<std::string> Reader::read_strings(const std::string& path) const {
  Handle d = open_dataset(path);
  Handle type(H5Dget_type(d));
  if (H5Tget_class(type) != H5T_STRING) fail(path, "must be a string dataset");
  Handle space(H5Dget_space(d));
  if (H5Sget_simple_extent_ndims(space) > 1) fail(path, "must be a 1-D list of strings");
  hssize_t n = H5Sget_simple_extent_npoints(space);
  if (H5Sget_simple_extent_type(space) == H5S_NULL) n = 0;
  std::vector<std::string> out;
  if (n <= 0) return out;
  check_filters(d, path);
  io::take_filter_error();
  if (H5Tis_variable_str(type) > 0) {
    check_vlen_heap(filename_, file_, d, path, 1);
    Handle mem(H5Tcopy(H5T_C_S1));
    H5Tset_size(mem, H5T_VARIABLE);
    H5Tset_cset(mem, H5Tget_cset(type));
    std::vector<char*> ptrs = buffer_for<char*>(path, n);
    if (H5Dread(d, mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, ptrs.data()) < 0) {
      std::string cause = io::take_filter_error();
      fail(path, cause.empty() ? current_hdf5_error() : cause);
    }
    for (char* p : ptrs) out.emplace_back(p ? p : "");
    H5Dvlen_reclaim(mem, space, H5P_DEFAULT, ptrs.data());
  } else {
    const size_t width = H5Tget_size(type);
    const H5T_str_t pad = H5Tget_strpad(type);
    Handle mem(H5Tcopy(type));
    std::vector<char> raw = buffer_for<char>(path, static_cast<int64_t>(n) * static_cast<int64_t>(width));
    if (H5Dread(d, mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, raw.data()) < 0) {
      std::string cause = io::take_filter_error();
      fail(path, cause.empty() ? current_hdf5_error() : cause);
    }
    for (hssize_t i = 0; i < n; ++i) {
      std::string s(raw.data() + static_cast<size_t>(i) * width, width);
      if (pad == H5T_STR_NULLTERM) {
        s.resize(std::min(s.size(), s.find('\0')));
      } else {
        const char strip = pad == H5T_STR_SPACEPAD ? ' ' : '\0';
        while (!s.empty() && (s.back() == strip || s.back() == '\0')) s.pop_back();
      }
      out.push_back(std::move(s));
    }
  }
  size_t bad = 0;
  for (auto& s : out) bad += sanitize_utf8(s) ? 1 : 0;
  if (bad > 0) {
    log().warn("{}: dataset '{}': {} string(s) with invalid UTF-8 (replaced by U+FFFD)", filename_, path,
               bad);
  }
  return out;
}

std::vector<std::vector<int64_t>> Reader::read_ragged_ints(const std::string& path) const {
  Handle d = open_dataset(path);
  Handle type(H5Dget_type(d));
  if (H5Tget_class(type) != H5T_VLEN) fail(path, "must be a list of variable-length integer lists");
  Handle base(H5Tget_super(type));
  if (H5Tget_class(base) != H5T_INTEGER) fail(path, "must hold integers");
  Handle space(H5Dget_space(d));
  if (H5Sget_simple_extent_ndims(space) > 1) fail(path, "must be 1-D");
  hssize_t n = H5Sget_simple_extent_npoints(space);
  if (H5Sget_simple_extent_type(space) == H5S_NULL) n = 0;
  std::vector<std::vector<int64_t>> out;
  if (n <= 0) return out;
  check_filters(d, path);
  check_vlen_heap(filename_, file_, d, path, H5Tget_size(base));
  Handle mem(H5Tvlen_create(H5T_NATIVE_INT64));
  std::vector<hvl_t> seqs = buffer_for<hvl_t>(path, n);
  io::take_filter_error();
  if (H5Dread(d, mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, seqs.data()) < 0) {
    std::string cause = io::take_filter_error();
    fail(path, cause.empty() ? current_hdf5_error() : cause);
  }
  out.reserve(seqs.size());
  for (const hvl_t& v : seqs) {
    const auto* p = static_cast<const int64_t*>(v.p);
    out.emplace_back(p, p + v.len);
  }
  H5Dvlen_reclaim(mem, space, H5P_DEFAULT, seqs.data());
  return out;
}

bool Reader::has_attribute(const std::string& object, const std::string& name) const {
  if (!exists(object)) return false;
  const htri_t r = H5Aexists_by_name(file_, object.c_str(), name.c_str(), H5P_DEFAULT);
  if (r < 0) H5Eclear2(H5E_DEFAULT);
  return r > 0;
}

std::vector<int64_t> Reader::read_int_attribute(const std::string& object, const std::string& name) const {
  if (!has_attribute(object, name)) fail(object, "missing attribute '" + name + "'");
  Handle attr(H5Aopen_by_name(file_, object.c_str(), name.c_str(), H5P_DEFAULT, H5P_DEFAULT));
  if (!attr.valid()) fail(object, "cannot open attribute '" + name + "': " + current_hdf5_error());
  Handle type(H5Aget_type(attr));
  if (H5Tget_class(type) != H5T_INTEGER) fail(object, "attribute '" + name + "' must be integer");
  Handle space(H5Aget_space(attr));
  if (H5Sget_simple_extent_ndims(space) > 1) fail(object, "attribute '" + name + "' must be 1-D");
  hssize_t n = H5Sget_simple_extent_npoints(space);
  if (H5Sget_simple_extent_type(space) == H5S_NULL) n = 0;
  if (n < 0 || n > (1 << 20)) fail(object, "attribute '" + name + "' has an invalid size");
  std::vector<int64_t> values(static_cast<size_t>(n));
  if (n > 0 && H5Aread(attr, H5T_NATIVE_INT64, values.data()) < 0) {
    fail(object, "cannot read attribute '" + name + "': " + current_hdf5_error());
  }
  return values;
}

}  // namespace rabbit::h5
