#include "rabbit/postfit/result_members.hpp"

#include <hdf5.h>

#include "rabbit/core/error.hpp"
#include "rabbit/io/hdf5_handle.hpp"

namespace rabbit::result {
namespace {

// A string attribute ("" when absent); the plain layout writes variable-length UTF-8 strings.
std::string string_attribute(hid_t object, const char* name) {
  if (H5Aexists(object, name) <= 0) return "";
  h5::Handle attr(H5Aopen(object, name, H5P_DEFAULT));
  h5::Handle type(H5Aget_type(attr));
  if (H5Tget_class(type) != H5T_STRING) return "";
  if (H5Tis_variable_str(type) > 0) {
    h5::Handle memtype(H5Tcopy(H5T_C_S1));
    H5Tset_size(memtype, H5T_VARIABLE);
    H5Tset_cset(memtype, H5T_CSET_UTF8);
    char* p = nullptr;
    if (H5Aread(attr, memtype, &p) < 0) return "";
    std::string s = p ? p : "";
    H5free_memory(p);
    return s;
  }
  std::string s(H5Tget_size(type), '\0');
  h5::Handle memtype(H5Tcopy(type));
  if (H5Aread(attr, memtype, s.data()) < 0) return "";
  return s.substr(0, s.find('\0'));
}

// The name of link `i` of `group`, in creation order where the group tracks it (the writer's
// groups do), else in name order.
std::string link_name(hid_t group, hsize_t i, H5_index_t index) {
  ssize_t len = -1;
  H5E_BEGIN_TRY { len = H5Lget_name_by_idx(group, ".", index, H5_ITER_INC, i, nullptr, 0, H5P_DEFAULT); }
  H5E_END_TRY;
  if (len < 0) return "";
  std::string name(static_cast<size_t>(len), '\0');
  H5Lget_name_by_idx(group, ".", index, H5_ITER_INC, i, name.data(), static_cast<size_t>(len) + 1, H5P_DEFAULT);
  return name;
}

}  // namespace

std::vector<Member> list_members(const ResultReader& reader, const std::string& path) {
  h5::Handle file;
  H5E_BEGIN_TRY { file = h5::Handle(H5Fopen(reader.path().c_str(), H5F_ACC_RDONLY, H5P_DEFAULT)); }
  H5E_END_TRY;
  if (!file.valid()) throw InputError("cannot open result file " + reader.path());
  if (string_attribute(file, "rabbit_plain_format") != "rabbit-fitresults-plain")
    throw InputError(reader.path() + ": listing the quantities of this result layout is not supported yet");
  h5::Handle group;
  H5E_BEGIN_TRY { group = h5::Handle(H5Gopen2(file, path.c_str(), H5P_DEFAULT)); }
  H5E_END_TRY;
  if (!group.valid()) throw InputError(reader.path() + ": no group " + path);

  H5G_info_t info;
  H5Gget_info(group, &info);
  const H5_index_t index = link_name(group, 0, H5_INDEX_CRT_ORDER).empty() ? H5_INDEX_NAME : H5_INDEX_CRT_ORDER;
  std::vector<Member> out;
  for (hsize_t i = 0; i < info.nlinks; ++i) {
    const std::string name = link_name(group, i, index);
    if (name.empty() || name == "_order") continue;
    h5::Handle object;
    H5E_BEGIN_TRY { object = h5::Handle(H5Oopen(group, name.c_str(), H5P_DEFAULT)); }
    H5E_END_TRY;
    if (!object.valid()) continue;  // a dangling link holds nothing to compare
    Member m;
    m.key = string_attribute(object, "key");
    if (m.key.empty()) m.key = name;
    m.path = path + "/" + name;
    m.type = string_attribute(object, "rabbit_type");
    m.container = H5Iget_type(object) == H5I_GROUP && m.type != "hist" && m.type != "axis";
    out.push_back(std::move(m));
  }
  return out;
}

}  // namespace rabbit::result
