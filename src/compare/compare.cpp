// The comparison's driver: fit groups and quantities matched by name, each quantity handed to its
// rule (compare_rules.cpp); and the one-line description of each result.
#include "rabbit/compare/compare.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <regex>

#include "compare_internal.hpp"
#include "rabbit/core/error.hpp"

namespace rabbit::compare {

double Tolerances::relative(const std::string& group, const std::string& quantity, const std::string& entry,
                            double standard) const {
  for (const EntryTolerance& e : entries)
    if (e.group == group && e.quantity == quantity && e.entry == entry) return e.relative;
  return standard;
}

void Tolerances::scale(double factor) {
  for (double* t : {&nll_absolute, &parameter_relative, &covariance_relative, &impact_relative,
                    &impact_floor_of_poi_sigma, &refit_impact_floor_of_sigma, &hist_value_relative,
                    &hist_value_floor_of_largest, &hist_sigma_relative, &chi2_relative})
    *t *= factor;
  for (EntryTolerance& e : entries) e.relative *= factor;
}

std::string QuantityResult::title() const {
  if (quantity.empty()) return group;
  return aspect.empty() ? quantity : quantity + " " + aspect;
}

bool Report::within_tolerance() const {
  return beyond_tolerance() == 0;
}

std::size_t Report::beyond_tolerance() const {
  return static_cast<std::size_t>(
      std::count_if(results.begin(), results.end(), [](const auto& r) { return !r.ok(); }));
}

DeviationSummary Report::summary() const {
  DeviationSummary out;
  for (const QuantityResult& r : results) {
    if (r.category.empty() || r.entries == 0) continue;
    Deviation& d = out[r.category];
    d.relative = std::max(d.relative, r.max_relative);
    d.absolute = std::max(d.absolute, r.max_absolute);
  }
  return out;
}

namespace {

// A --groups / --quantities pattern: a name, or a regular expression matching the whole name.
class Patterns {
 public:
  Patterns(const std::vector<std::string>& patterns, const char* what) {
    for (const auto& p : patterns) {
      try {
        patterns_.push_back({p, std::regex(p)});
      } catch (const std::regex_error& e) {
        throw InputError(std::string(what) + " pattern '" + p + "' is not a regular expression: " + e.what());
      }
    }
  }
  bool empty() const { return patterns_.empty(); }
  /// Whether any pattern equals or matches any of `names`.
  bool select(const std::vector<std::string>& names) const {
    if (patterns_.empty()) return true;
    for (const auto& [text, re] : patterns_)
      for (const auto& n : names)
        if (n == text || std::regex_match(n, re)) return true;
    return false;
  }

 private:
  std::vector<std::pair<std::string, std::regex>> patterns_;
};

std::string short_group_name(const std::string& group) {
  return group.rfind("results_", 0) == 0 ? group.substr(8) : group;
}

std::string last_key(const std::string& name) {
  const auto slash = name.rfind('/');
  return slash == std::string::npos ? name : name.substr(slash + 1);
}

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// A group or quantity only one side holds.
QuantityResult one_sided(const std::string& group, const std::string& quantity, const std::string& side) {
  QuantityResult r;
  r.group = group;
  r.quantity = quantity;
  r.beyond = 1;
  r.worst_ratio = INFINITY;
  r.worst = "only in " + side;
  return r;
}

class Comparison {
 public:
  Comparison(const ResultTree& a, const ResultTree& b, const CompareOptions& options)
      : a_(a), b_(b), options_(options), quantity_patterns_(options.quantities, "--quantities") {}

  void group(const std::string& group, Report& report) {
    detail::GroupContext context{group, &options_, {}};
    const auto in_a = selected(a_.quantities(group)), in_b = selected(b_.quantities(group));
    if (!in_a.empty() || !in_b.empty()) ++report.groups_compared;
    context.sigma_of_parameter = parameter_sigmas(group);
    for (const auto& q : in_a) {
      const auto match =
          std::find_if(in_b.begin(), in_b.end(), [&](const auto& o) { return o.name == q.name; });
      if (match == in_b.end()) {
        report.results.push_back(one_sided(group, q.name, options_.name_a));
        continue;
      }
      if (match->kind != q.kind) {
        QuantityResult r = one_sided(group, q.name, options_.name_a);
        r.worst = "a histogram on one side, a number on the other";
        report.results.push_back(r);
        continue;
      }
      detail::compare_quantity(detail::rule_for(q.name, q.kind), q.name, a_.load(group, q.name),
                               b_.load(group, q.name), context, report.results);
    }
    if (options_.b_may_hold_more) return;
    for (const auto& q : in_b)
      if (std::none_of(in_a.begin(), in_a.end(), [&](const auto& o) { return o.name == q.name; }))
        report.results.push_back(one_sided(group, q.name, options_.name_b));
  }

  /// Whether any of `groups` of `tree` holds a quantity to compare.
  bool selects_any(const ResultTree& tree, const std::vector<std::string>& groups) const {
    for (const auto& g : groups)
      if (!selected(tree.quantities(g)).empty()) return true;
    return false;
  }

 private:
  // The quantities the options select that have a rule (not minimizer path, not our details).
  std::vector<QuantityInfo> selected(const std::vector<QuantityInfo>& all) const {
    std::vector<QuantityInfo> out;
    for (const auto& q : all)
      if (detail::rule_for(q.name, q.kind) != detail::Rule::skip &&
          quantity_patterns_.select({q.name, last_key(q.name)}))
        out.push_back(q);
    return out;
  }

  // A's parameter uncertainties, for the impacts' floor (read even when parms is not selected).
  std::map<std::string, double> parameter_sigmas(const std::string& group) const {
    std::map<std::string, double> out;
    const auto all = a_.quantities(group);
    const bool has = std::any_of(all.begin(), all.end(), [](const auto& q) {
      return q.name == "parms" && q.kind == Quantity::Kind::hist;
    });
    if (!has) return out;
    const Quantity parms = a_.load(group, "parms");
    const TreeHist& h = parms.hist;
    if (h.axes.size() != 1 || !h.axes[0].category) return out;
    for (size_t i = 0; i < h.axes[0].labels.size() && i < h.values.size(); ++i)
      out[h.axes[0].labels[i]] = h.variances.empty() ? 0.0 : std::sqrt(h.variances[i]);
    return out;
  }

  const ResultTree& a_;
  const ResultTree& b_;
  const CompareOptions& options_;
  Patterns quantity_patterns_;
};

}  // namespace

Report compare_results(const ResultTree& a, const ResultTree& b, const CompareOptions& options) {
  Report report;
  report.a_description = a.description();
  report.b_description = b.description();
  const Patterns group_patterns(options.groups, "--groups");
  auto selected_groups = [&](const ResultTree& t) {
    std::vector<std::string> out;
    for (const auto& g : t.groups())
      if (group_patterns.select({g, short_group_name(g)})) out.push_back(g);
    return out;
  };
  const auto groups_a = selected_groups(a), groups_b = selected_groups(b);
  if (groups_a.empty() && groups_b.empty())
    throw InputError(group_patterns.empty() ? "neither input holds a fit result group"
                                            : "no fit group of either input matches --groups");

  Comparison comparison(a, b, options);
  if (!comparison.selects_any(a, groups_a) && !comparison.selects_any(b, groups_b))
    throw InputError("no quantity of the selected groups matches --quantities");
  for (const auto& g : groups_a) {
    if (contains(groups_b, g))
      comparison.group(g, report);
    else
      report.results.push_back(one_sided(g, "", options.name_a));
  }
  if (!options.b_may_hold_more)
    for (const auto& g : groups_b)
      if (!contains(groups_a, g)) report.results.push_back(one_sided(g, "", options.name_b));
  return report;
}

std::string format_result(const QuantityResult& r) {
  std::string line = std::string(r.ok() ? "ok  " : "FAIL") + "  " + r.group;
  if (!r.quantity.empty()) line += "  " + r.title();
  line += ": ";
  if (r.entries == 0) return line + r.worst;  // a finding, nothing compared
  char numbers[96];
  std::snprintf(numbers, sizeof numbers, "; largest deviation %.2g relative, %.2g absolute; worst ",
                r.max_relative, r.max_absolute);
  line += std::to_string(r.entries) + (r.entries == 1 ? " entry" : " entries");
  if (r.beyond > 0) line += ", " + std::to_string(r.beyond) + " beyond tolerance";
  return line + numbers + r.worst;
}

}  // namespace rabbit::compare
