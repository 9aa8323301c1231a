// HDF5 helpers shared by the result file's layouts (result_layouts.hpp).
#include <variant>

#include "rabbit/core/error.hpp"
#include "rabbit/io/hdf5_reader.hpp"
#include "result_layouts.hpp"

namespace rabbit::result::detail {

void check(herr_t status, const std::string& what) {
  if (status < 0)
    throw Error("HDF5 error while writing the result file: " + what + ": " + h5::current_hdf5_cause());
}

h5::Handle check_id(hid_t id, const std::string& what) {
  if (id < 0)
    throw Error("HDF5 error while writing the result file: " + what + ": " + h5::current_hdf5_cause());
  return h5::Handle(id);
}

// HDF5's default 1 MiB type-conversion buffer is calloc'ed on each H5Dwrite that converts
// (variable-length strings always do), which dominated writing the many small datasets of a toy
// loop (page faults of 1 MiB per string). 64 KiB strip-mines larger conversions instead.
hid_t write_plist() {
  static const hid_t plist = [] {
    hid_t p = H5Pcreate(H5P_DATASET_XFER);
    H5Pset_buffer(p, 64 * 1024, nullptr, nullptr);
    return p;
  }();
  return plist;
}

h5::Handle utf8_string_type() {
  h5::Handle t(H5Tcopy(H5T_C_S1));
  H5Tset_size(t, H5T_VARIABLE);
  H5Tset_cset(t, H5T_CSET_UTF8);
  return t;
}

h5::Handle group_create_plist() {
  h5::Handle gcpl(H5Pcreate(H5P_GROUP_CREATE));
  H5Pset_link_creation_order(gcpl, H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED);
  return gcpl;
}

void write_attribute(hid_t obj, const Attribute& a) {
  h5::Handle space(H5Screate(H5S_SCALAR));
  const std::string what = "attribute " + a.name;
  if (const auto* s = std::get_if<std::string>(&a.value)) {
    auto type = utf8_string_type();
    auto attr = check_id(H5Acreate2(obj, a.name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT), what);
    const char* p = s->c_str();
    check(H5Awrite(attr, type, &p), what);
  } else if (const auto* i = std::get_if<int64_t>(&a.value)) {
    auto attr =
        check_id(H5Acreate2(obj, a.name.c_str(), H5T_STD_I64LE, space, H5P_DEFAULT, H5P_DEFAULT), what);
    check(H5Awrite(attr, H5T_NATIVE_INT64, i), what);
  } else if (const auto* d = std::get_if<double>(&a.value)) {
    auto attr =
        check_id(H5Acreate2(obj, a.name.c_str(), H5T_IEEE_F64LE, space, H5P_DEFAULT, H5P_DEFAULT), what);
    check(H5Awrite(attr, H5T_NATIVE_DOUBLE, d), what);
  } else {
    const uint8_t v = std::get<bool>(a.value) ? 1 : 0;
    auto attr =
        check_id(H5Acreate2(obj, a.name.c_str(), H5T_STD_U8LE, space, H5P_DEFAULT, H5P_DEFAULT), what);
    check(H5Awrite(attr, H5T_NATIVE_UINT8, &v), what);
  }
}

std::string read_string_attribute(hid_t obj, const char* name) {
  if (H5Aexists(obj, name) <= 0) return "";
  h5::Handle attr(H5Aopen(obj, name, H5P_DEFAULT));
  h5::Handle ftype(H5Aget_type(attr));
  if (H5Tget_class(ftype) != H5T_STRING) return "";
  if (H5Tis_variable_str(ftype) > 0) {
    auto type = utf8_string_type();
    char* p = nullptr;
    if (H5Aread(attr, type, &p) < 0) return "";
    std::string s = p ? p : "";
    H5free_memory(p);
    return s;
  }
  std::string s(H5Tget_size(ftype), '\0');
  h5::Handle mt(H5Tcopy(ftype));
  if (H5Aread(attr, mt, s.data()) < 0) return "";
  return s.substr(0, s.find('\0'));
}

std::vector<std::string> link_names(hid_t group) {
  H5G_info_t info;
  if (H5Gget_info(group, &info) < 0) return {};
  // Creation order where the group tracks it (our writers' groups do), else name order (h5py's
  // default, e.g. upstream's files).
  H5_index_t index = H5_INDEX_CRT_ORDER;
  std::vector<std::string> out;
  for (hsize_t i = 0; i < info.nlinks; ++i) {
    ssize_t len = -1;
    H5E_BEGIN_TRY {
      len = H5Lget_name_by_idx(group, ".", index, H5_ITER_INC, i, nullptr, 0, H5P_DEFAULT);
    }
    H5E_END_TRY;
    if (len < 0 && i == 0 && index == H5_INDEX_CRT_ORDER) {
      index = H5_INDEX_NAME;
      len = H5Lget_name_by_idx(group, ".", index, H5_ITER_INC, i, nullptr, 0, H5P_DEFAULT);
    }
    if (len < 0) break;
    std::string name(static_cast<size_t>(len), '\0');
    H5Lget_name_by_idx(group, ".", index, H5_ITER_INC, i, name.data(), static_cast<size_t>(len) + 1,
                       H5P_DEFAULT);
    out.push_back(std::move(name));
  }
  return out;
}

bool link_exists(hid_t file, const std::string& path) {
  // Check every component so that a missing parent does not raise an HDF5 error.
  size_t start = 0;
  while (start <= path.size()) {
    const size_t slash = path.find('/', start);
    const std::string partial = path.substr(0, slash == std::string::npos ? path.size() : slash);
    if (!partial.empty()) {
      htri_t exists = -1;
      H5E_BEGIN_TRY {
        exists = H5Lexists(file, partial.c_str(), H5P_DEFAULT);
      }
      H5E_END_TRY;
      if (exists <= 0) return false;
    }
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  return true;
}

std::string unescape_key(const std::string& link_name) {
  if (link_name == "%2E") return ".";
  std::string out;
  for (size_t i = 0; i < link_name.size(); ++i) {
    if (link_name.compare(i, 3, "%2F") == 0) {
      out += '/';
      i += 2;
    } else if (link_name.compare(i, 3, "%25") == 0) {
      out += '%';
      i += 2;
    } else {
      out += link_name[i];
    }
  }
  return out;
}

}  // namespace rabbit::result::detail
