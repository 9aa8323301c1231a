#pragma once
// rabbit's natural_sort_key (rabbit.common): the order of nuisances and groups in tensor files
// (docs/tensor-writer.md "Conventions").
#include <string>
#include <vector>

namespace rabbit {

/// rabbit's natural sort key order: digit runs compared as integers, text lower-cased.
bool natural_less(const std::string& a, const std::string& b);
std::vector<std::string> natural_sorted(std::vector<std::string> names);

}  // namespace rabbit
