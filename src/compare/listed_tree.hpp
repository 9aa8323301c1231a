#pragma once
// What the comparison's adapters share: the groups of a result and, per group, the listing of its
// quantities (name, kind and where each is read from), built once so that load() is a lookup.
#include <map>
#include <string>
#include <vector>

#include "rabbit/compare/result_tree.hpp"

namespace rabbit::compare::detail {

/// `Source` says where an adapter reads a listed quantity from (a JSON node, a file path).
template <class Source>
class ListedResultTree : public ResultTree {
 public:
  std::vector<std::string> groups() const override { return groups_; }

  std::vector<QuantityInfo> quantities(const std::string& group) const override {
    std::vector<QuantityInfo> out;
    const auto it = listing_.find(group);
    if (it != listing_.end())
      for (const auto& entry : it->second) out.push_back(entry.info);
    return out;
  }

 protected:
  struct Entry {
    QuantityInfo info;
    Source source;
  };

  /// The listed entry, or null.
  const Entry* find_entry(const std::string& group, const std::string& name) const {
    const auto it = listing_.find(group);
    if (it != listing_.end())
      for (const auto& entry : it->second)
        if (entry.info.name == name) return &entry;
    return nullptr;
  }

  std::vector<std::string> groups_;
  std::map<std::string, std::vector<Entry>> listing_;
};

}  // namespace rabbit::compare::detail
