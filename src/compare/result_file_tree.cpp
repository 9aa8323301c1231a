// The result-file adapter of the comparison: everything goes through ResultReader's public reading
// API (members() to walk a group, hist() and scalar() to read), so every layout ResultReader
// serves is compared the same way.
#include <charconv>
#include <map>
#include <utility>

#include "listed_tree.hpp"
#include "rabbit/compare/result_tree.hpp"
#include "rabbit/core/error.hpp"
#include "rabbit/postfit/result_file.hpp"

namespace rabbit::compare {

std::string number_label(double value) {
  char buffer[64];
  const auto end = std::to_chars(buffer, buffer + sizeof buffer, value).ptr;
  return std::string(buffer, end);
}

namespace {

class ResultFileTree : public detail::ListedResultTree<std::string> {  // source: the path for ResultReader
 public:
  explicit ResultFileTree(const std::string& path) : reader_(path) {
    // A file without any fit (a fit tensor, say) is no result to compare, not one that lacks them all.
    const auto groups = reader_.result_groups();
    if (groups.empty())
      throw InputError(path + ": no fit result groups (results, results_asimov, ...) in it");
    // The listing is metadata only and cheap; reading it once keeps load() a plain lookup.
    for (const std::string& group : groups) {
      groups_.push_back(group);
      list(group, result::escape_key(group), "");
    }
  }

  std::string description() const override {
    return reader_.path() +
           (reader_.layout() == result::Layout::plain ? " (plain layout)" : " (rabbit layout)");
  }
  Quantity load(const std::string& group, const std::string& name) const override {
    const Entry& entry = find(group, name);
    Quantity q;
    q.kind = entry.info.kind;
    if (q.kind == Quantity::Kind::scalar) q.scalar = reader_.scalar(entry.source);
    if (q.kind != Quantity::Kind::hist) return q;
    // With the flow bins, in either layout, as the plain layout holds them: two result files then
    // compare them too. Read once more without them where a binned axis may have some: which
    // entries are flow bins (named so) and which in-range bin k (matched with a JSON's bin k).
    const result::Hist stored = reader_.hist(entry.source, true);
    bool binned = false;
    for (size_t i = 0; i < stored.shape.size(); ++i) binned = binned || !is_category(stored, i);
    if (binned) {
      const result::Hist in_range = reader_.hist(entry.source, false);
      q.hist = to_tree(stored, &in_range);
    } else {
      q.hist = to_tree(stored, nullptr);
    }
    return q;
  }

 private:
  // Descends into the dictionaries of a group (mappings, channels, our `_cpp`), recording every
  // histogram and scalar under its key path.
  void list(const std::string& group, const std::string& path, const std::string& prefix) {
    for (const result::ResultReader::Entry& m : reader_.members(path)) {
      const std::string name = prefix + m.key;
      if (m.container) {
        list(group, m.path, name + "/");
        continue;
      }
      Entry e{{name, Quantity::Kind::other}, m.path};
      if (m.type == "hist")
        e.info.kind = Quantity::Kind::hist;
      else if (m.type == "float" || m.type == "int" || m.type == "bool")
        e.info.kind = Quantity::Kind::scalar;
      listing_[group].push_back(std::move(e));
    }
  }

  const Entry& find(const std::string& group, const std::string& name) const {
    if (const Entry* entry = find_entry(group, name)) return *entry;
    throw InputError(reader_.path() + ": no quantity " + name + " in " + group);
  }

  static bool is_category(const result::Hist& h, size_t i) {
    return (i < h.axis_labels.size() && !h.axis_labels[i].empty()) ||
           (i < h.axis_values.size() && !h.axis_values[i].empty());
  }

  // `in_range`: the same histogram without flow bins, where a binned axis may have some.
  static TreeHist to_tree(const result::Hist& h, const result::Hist* in_range) {
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
      } else if (in_range && i < in_range->shape.size()) {
        // Both flow bins (underflow first) or none are unambiguous; a single one could be either.
        const int64_t flow = a.extent - in_range->shape[i];
        if (flow == 0 || flow == 2) {
          a.bins = in_range->shape[i];
          a.underflow = flow == 2;
        }
      }
      t.axes.push_back(std::move(a));
    }
    t.values = h.values;
    t.variances = h.variances;
    return t;
  }

  result::ResultReader reader_;
};

}  // namespace

std::unique_ptr<ResultTree> open_result_file(const std::string& path) {
  return std::make_unique<ResultFileTree>(path);
}

}  // namespace rabbit::compare
