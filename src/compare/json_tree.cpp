// The reference-JSON adapter of the comparison (upstream's results as tools/make_reference.py dumps
// them), and the choice of adapter by file name.
#include <filesystem>
#include <map>
#include <utility>

#include "listed_tree.hpp"
#include "rabbit/compare/result_tree.hpp"
#include "rabbit/core/error.hpp"

namespace rabbit::compare {
namespace {

using io::Json;

bool is_hist(const Json& j) {
  return j.is_object() && j.find("axes") && j.find("values");
}

class JsonResultTree : public detail::ListedResultTree<const Json*> {
 public:
  JsonResultTree(const Json& results, std::string description)
      : results_(results), description_(std::move(description)) {
    if (!results_.is_object()) throw InputError(description_ + ": the results are not a JSON object");
    for (const auto& [key, dict] : results_.object()) {
      const std::string group =
          (key.empty() || key == "data_obs" || key == "results") ? "results" : "results_" + key;
      if (!dict.is_object()) throw InputError(description_ + ": results of " + key + " are not an object");
      groups_.push_back(group);
      list(group, dict, "");
    }
  }
  JsonResultTree(const JsonResultTree&) = delete;  // listing_ points into results_
  JsonResultTree& operator=(const JsonResultTree&) = delete;

  std::string description() const override { return description_; }

  Quantity load(const std::string& group, const std::string& name) const override {
    if (const Entry* entry = find_entry(group, name)) return convert(*entry->source, entry->info.kind, name);
    throw InputError(description_ + ": no quantity " + name + " in " + group);
  }

 private:
  void list(const std::string& group, const Json& dict, const std::string& prefix) {
    for (const auto& [key, value] : dict.object()) {
      const std::string name = prefix + key;
      if (value.is_null()) continue;  // rabbit's None: the quantity is absent
      if (is_hist(value)) {
        listing_[group].push_back({{name, Quantity::Kind::hist}, &value});
      } else if (value.is_object()) {
        list(group, value, name + "/");
      } else if (value.is_number() || value.kind() == Json::Kind::boolean) {
        listing_[group].push_back({{name, Quantity::Kind::scalar}, &value});
      } else {
        listing_[group].push_back({{name, Quantity::Kind::other}, &value});
      }
    }
  }

  Quantity convert(const Json& j, Quantity::Kind kind, const std::string& name) const {
    Quantity q;
    q.kind = kind;
    if (kind == Quantity::Kind::scalar) q.scalar = j.is_number() ? j.number() : (j.boolean() ? 1.0 : 0.0);
    if (kind != Quantity::Kind::hist) return q;
    try {
      for (const Json& a : j.at("axes").array()) {
        TreeAxis axis;
        if (const Json* n = a.find("name"); n && n->is_string()) axis.name = n->string();
        if (const Json* labels = a.find("labels")) {
          axis.category = true;
          // Integer categories arrive as numbers in hand-written files; numbers match by value.
          for (const Json& l : labels->array())
            axis.labels.push_back(l.is_string() ? l.string() : number_label(l.number()));
          axis.extent = static_cast<int64_t>(axis.labels.size());
        } else {
          axis.bins = static_cast<int64_t>(a.at("edges").size()) - 1;
          axis.extent = axis.bins;  // rabbit's values() leave the flow bins out
          if (const Json* u = a.find("underflow")) axis.underflow = u->boolean();
        }
        q.hist.axes.push_back(std::move(axis));
      }
      q.hist.values = j.at("values").flatten_numbers();
      // boost-histogram reads a Double storage's variances back as its values: such a histogram holds
      // none (files written before tools/make_reference.py recorded the storage have no "storage").
      const Json* storage = j.find("storage");
      const bool double_storage = storage && storage->is_string() && storage->string() == "Double";
      if (const Json* v = j.find("variances"); v && !v->is_null() && !double_storage)
        q.hist.variances = v->flatten_numbers();
    } catch (const std::runtime_error& e) {
      throw InputError(description_ + ": histogram " + name + ": " + e.what());
    }
    return q;
  }

  const Json results_;
  const std::string description_;
};

}  // namespace

std::unique_ptr<ResultTree> reference_json_tree(const Json& results, const std::string& description) {
  return std::make_unique<JsonResultTree>(results, description);
}

std::unique_ptr<ResultTree> open_reference_json(const std::string& path) {
  const Json document = Json::parse_file(path);
  if (!document.is_object()) throw InputError(path + ": not a JSON object");
  const Json* results = document.find("results");
  return reference_json_tree(results ? *results : document, path + " (reference JSON)");
}

std::unique_ptr<ResultTree> open_result_tree(const std::string& path) {
  if (!std::filesystem::exists(path)) throw InputError(path + ": no such file");
  if (std::filesystem::path(path).extension() == ".json") return open_reference_json(path);
  return open_result_file(path);
}

}  // namespace rabbit::compare
