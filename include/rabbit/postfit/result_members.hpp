#pragma once
// Listing what a result file holds: the members of a result group or of one of its dictionaries,
// which ResultReader (it reads a path it is given) cannot tell. rabbit_compare walks result files
// with it to match two files quantity by quantity.
//
// Implemented for the plain layout (output-format.md) by walking the HDF5 groups. For another
// layout it throws InputError: the listing belongs in ResultReader's layout backends
// (a ResultReader::members(path)); once that exists this function forwards to it.
#include <string>
#include <vector>

#include "rabbit/postfit/result_file.hpp"

namespace rabbit::result {

struct Member {
  std::string key;    // the rabbit key (unescaped)
  std::string path;   // the member's path for ResultReader (parent path, '/', escaped key)
  std::string type;   // its rabbit_type: "hist", "dict", "float", "int", "bool", "str", ...; "" if none
  bool container = false;  // a group that is not a histogram: a dictionary to descend into
};

/// The members of the group at `path` ("results", "results/mappings", ...) in file order.
/// Bookkeeping entries (a dictionary's `_order` list) are left out.
std::vector<Member> list_members(const ResultReader& reader, const std::string& path);

}  // namespace rabbit::result
