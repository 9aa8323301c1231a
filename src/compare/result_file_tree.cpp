// The result-file adapter of the comparison: everything goes through ResultReader's public reading
// API, so every layout ResultReader serves is compared the same way; only the listing of a group's
// members comes from result::list_members.
#include <charconv>
#include <map>
#include <utility>

#include "rabbit/compare/result_tree.hpp"
#include "rabbit/core/error.hpp"
#include "rabbit/postfit/result_file.hpp"
#include "rabbit/postfit/result_members.hpp"

namespace rabbit::compare {

std::string number_label(double value) {
  char buffer[64];
  const auto end = std::to_chars(buffer, buffer + sizeof buffer, value).ptr;
  return std::string(buffer, end);
}

namespace {

class ResultFileTree : public ResultTree {
 public:
  explicit ResultFileTree(const std::string& path) : reader_(path) {
    // The listing is metadata only and cheap; reading it once keeps load() a plain lookup.
    for (const std::string& group : reader_.result_groups()) {
      groups_.push_back(group);
      list(group, result::escape_key(group), "");
    }
  }

  std::string description() const override { return reader_.path() + " (result file)"; }
  std::vector<std::string> groups() const override { return groups_; }

  std::vector<QuantityInfo> quantities(const std::string& group) const override {
    std::vector<QuantityInfo> out;
    const auto it = listing_.find(group);
    if (it != listing_.end())
      for (const auto& entry : it->second) out.push_back(entry.info);
    return out;
  }

  Quantity load(const std::string& group, const std::string& name) const override {
    const Entry& entry = find(group, name);
    Quantity q;
    q.kind = entry.info.kind;
    if (q.kind == Quantity::Kind::scalar) q.scalar = reader_.scalar(entry.path);
    if (q.kind == Quantity::Kind::hist) q.hist = to_tree(reader_.hist(entry.path));
    return q;
  }

 private:
  struct Entry {
    QuantityInfo info;
    std::string path;  // for ResultReader
  };

  // Descends into the dictionaries of a group (mappings, channels, our `_cpp`), recording every
  // histogram and scalar under its key path.
  void list(const std::string& group, const std::string& path, const std::string& prefix) {
    for (const result::Member& m : result::list_members(reader_, path)) {
      const std::string name = prefix + m.key;
      if (m.container) {
        list(group, m.path, name + "/");
        continue;
      }
      Entry e{{name, Quantity::Kind::other}, m.path};
      if (m.type == "hist") e.info.kind = Quantity::Kind::hist;
      else if (m.type == "float" || m.type == "int" || m.type == "bool") e.info.kind = Quantity::Kind::scalar;
      else if (m.type.empty()) continue;  // untyped datasets are the layout's bookkeeping, not results
      listing_[group].push_back(std::move(e));
    }
  }

  const Entry& find(const std::string& group, const std::string& name) const {
    const auto it = listing_.find(group);
    if (it != listing_.end())
      for (const auto& entry : it->second)
        if (entry.info.name == name) return entry;
    throw InputError(reader_.path() + ": no quantity " + name + " in " + group);
  }

  static TreeHist to_tree(const result::Hist& h) {
    TreeHist t;
    for (size_t i = 0; i < h.shape.size(); ++i) {
      TreeAxis a;
      a.name = i < h.axis_names.size() ? h.axis_names[i] : "";
      a.extent = h.shape[i];
      if (i < h.axis_labels.size() && !h.axis_labels[i].empty()) {
        a.category = true;
        a.labels = h.axis_labels[i];
      } else if (i < h.axis_values.size() && !h.axis_values[i].empty()) {
        a.category = true;
        for (double v : h.axis_values[i]) a.labels.push_back(number_label(v));
      }
      t.axes.push_back(std::move(a));
    }
    t.values = h.values;
    t.variances = h.variances;
    return t;
  }

  result::ResultReader reader_;
  std::vector<std::string> groups_;
  std::map<std::string, std::vector<Entry>> listing_;
};

}  // namespace

std::unique_ptr<ResultTree> open_result_file(const std::string& path) { return std::make_unique<ResultFileTree>(path); }

}  // namespace rabbit::compare
