// The per-quantity rules of the comparison: which tolerance applies to which entry, with the
// numbers of compare.hpp's header comment.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iomanip>
#include <limits>
#include <optional>
#include <sstream>
#include <utility>

#include "compare_internal.hpp"

namespace rabbit::compare::detail {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

std::string fmt(double v) {
  std::ostringstream os;
  os << std::setprecision(12) << v;
  return os.str();
}

std::string last_key(const std::string& name) {
  const auto slash = name.rfind('/');
  return slash == std::string::npos ? name : name.substr(slash + 1);
}

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.rfind(prefix, 0) == 0;
}
bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// One QuantityResult being filled: counts the entries beyond tolerance, keeps the worst one (the
// largest ratio of deviation to allowed deviation) and the largest deviations for the summary.
class Recorder {
 public:
  Recorder(const GroupContext& context, const std::string& quantity, const std::string& aspect,
           const std::string& category)
      : options_(*context.options) {
    result_.group = context.group;
    result_.quantity = quantity;
    result_.aspect = aspect;
    result_.category = category;
  }

  /// One entry; `label()` names it, called only when the entry is reported.
  template <class Label>
  void check(const Label& label, double a, double b, double allowed) {
    ++result_.entries;
    double ratio = 0.0;
    if (std::isnan(a) || std::isnan(b)) {
      ratio = (std::isnan(a) && std::isnan(b)) ? 0.0 : kInfinity;
    } else if (std::isinf(a) || std::isinf(b)) {
      ratio = a == b ? 0.0 : kInfinity;  // a chi2 may be +inf (docs/output-format.md)
    } else {
      const double deviation = std::abs(b - a);
      ratio = deviation == 0.0 ? 0.0 : (allowed > 0.0 ? deviation / allowed : kInfinity);
      if (a != 0.0) result_.max_relative = std::max(result_.max_relative, deviation / std::abs(a));
      result_.max_absolute = std::max(result_.max_absolute, deviation);
    }
    const bool beyond = ratio > 1.0;
    if (beyond) ++result_.beyond;
    // Descriptions only for what is shown: the first of equally bad entries stays the worst.
    const bool listed = beyond && options_.keep_all_beyond, worst = ratio > result_.worst_ratio;
    if (!listed && !worst) return;
    const std::string what = label() + ": " + options_.name_a + " " + fmt(a) + ", " + options_.name_b + " " +
                             fmt(b) + " (allowed " + fmt(allowed) + ")";
    if (listed) result_.beyond_entries.push_back(what);
    if (worst) {
      result_.worst_ratio = ratio;
      result_.worst = what;
    }
  }

  /// An entry that cannot be compared (missing on one side, mismatched layout); the first such
  /// finding stays the worst.
  void fail(const std::string& what) {
    ++result_.beyond;
    if (result_.worst_ratio < kInfinity) {
      result_.worst_ratio = kInfinity;
      result_.worst = what;
    }
    if (options_.keep_all_beyond) result_.beyond_entries.push_back(what);
  }
  void missing_in_b(const std::string& label) { fail("missing in " + options_.name_b + ": " + label); }

  /// Appends the result if anything was compared or found.
  void finish(std::vector<QuantityResult>& out) {
    if (result_.entries > 0 || result_.beyond > 0) out.push_back(std::move(result_));
  }

 private:
  const CompareOptions& options_;
  QuantityResult result_;
};

// The alignment of two histograms; a layout that cannot be matched, or (unless B may hold more)
// categories only B has, are failures recorded on `first`.
bool align_into(const Quantity& a, const Quantity& b, const GroupContext& context, Recorder& first,
                Alignment& al) {
  al = align(a.hist, b.hist);
  if (!al.error.empty()) {
    first.fail("histograms do not match: " + al.error);
    return false;
  }
  if (!context.options->b_may_hold_more)
    for (const auto& extra : al.only_in_b) first.fail("only in " + context.options->name_b + ": " + extra);
  return true;
}

// The variances of both sides: A's without B's is a failure, B's without A's too unless B may hold more.
bool both_have_variances(const Quantity& a, const Quantity& b, const GroupContext& context,
                         Recorder& sigmas) {
  const bool in_a = !a.hist.variances.empty(), in_b = !b.hist.variances.empty();
  if (in_a && !in_b) sigmas.fail(context.options->name_b + " has no variances");
  if (!in_a && in_b && !context.options->b_may_hold_more)
    sigmas.fail("only " + context.options->name_b + " has variances");
  return in_a && in_b;
}

// An entry's own relative tolerance (--entry-tolerance, the known deviations), if it has one.
template <class Label>
std::optional<double> entry_tolerance(const GroupContext& context, const std::string& quantity,
                                      const Label& label) {
  const auto& entries = context.options->tolerances.entries;
  if (entries.empty()) return std::nullopt;  // the common case: no label is built
  const double none = -1.0,
               rel = context.options->tolerances.relative(context.group, quantity, label(), none);
  return rel == none ? std::nullopt : std::optional<double>(rel);
}

// The absolute and exact rules take an entry's tolerance as REL · max(1, |A|), as chi2 does.
void compare_number(Rule rule, const std::string& name, double a, double b, const GroupContext& context,
                    std::vector<QuantityResult>& out) {
  const Tolerances& tol = context.options->tolerances;
  const std::string label = last_key(name);
  const char* category = rule == Rule::nll      ? "nll"
                         : rule == Rule::chi2   ? "chi2/ndf"
                         : rule == Rule::number ? "numbers"
                                                : "";
  Recorder r(context, name, "", category);
  const auto named = [&] { return label; };
  const auto own = entry_tolerance(context, name, named);
  double allowed = 0.0;
  if (own)
    allowed = *own * std::max(1.0, std::abs(a));
  else if (rule == Rule::nll)
    allowed = tol.nll_absolute;
  else if (rule == Rule::chi2 || rule == Rule::number)
    allowed = tol.chi2_relative * std::max(1.0, std::abs(a));
  r.check(named, a, b, allowed);
  r.finish(out);
}

// Values to a relative tolerance or that fraction of the uncertainty, uncertainties relative.
void compare_parameters(const std::string& name, const Quantity& a, const Quantity& b,
                        const GroupContext& context, std::vector<QuantityResult>& out) {
  const double rel = context.options->tolerances.parameter_relative;
  Recorder values(context, name, "values", name + " values"),
      sigmas(context, name, "uncertainties", name + " sigma");
  Alignment al;
  if (align_into(a, b, context, values, al)) {
    const bool with_sigmas = both_have_variances(a, b, context, sigmas);
    const auto& av = a.hist.values;
    for (size_t k = 0; k < al.size(); ++k) {
      const long ia = al.a(k), ib = al.b(k);
      if (ib < 0) {
        values.missing_in_b(al.label(k));
        continue;
      }
      const auto label = [&] { return al.label(k); };
      const double r = entry_tolerance(context, name, label).value_or(rel);
      const double sigma = a.hist.variances.empty() ? 0.0 : std::sqrt(a.hist.variances[ia]);
      values.check(label, av[ia], b.hist.values[ib], r * std::max(std::abs(av[ia]), sigma));
      if (with_sigmas) sigmas.check(label, sigma, std::sqrt(b.hist.variances[ib]), r * sigma);
    }
  }
  values.finish(out);
  sigmas.finish(out);
}

// Any other histogram: values relative with a floor of the largest, uncertainties relative; or,
// with `absolute` ≥ 0 (ΔNLL scans), values to that absolute tolerance.
void compare_histogram(const std::string& name, const Quantity& a, const Quantity& b,
                       const GroupContext& context, std::vector<QuantityResult>& out,
                       const std::string& values_category, const std::string& sigmas_category,
                       double absolute = -1.0) {
  const Tolerances& tol = context.options->tolerances;
  Recorder values(context, name, "values", values_category),
      sigmas(context, name, "uncertainties", sigmas_category);
  Alignment al;
  if (align_into(a, b, context, values, al)) {
    const auto& av = a.hist.values;
    double scale = 0.0;
    for (size_t k = 0; k < al.size(); ++k) scale = std::max(scale, std::abs(av[al.a(k)]));
    const bool with_sigmas = both_have_variances(a, b, context, sigmas);
    for (size_t k = 0; k < al.size(); ++k) {
      const long ia = al.a(k), ib = al.b(k);
      if (ib < 0) {
        values.missing_in_b(al.label(k));
        continue;
      }
      const auto label = [&] { return al.label(k); };
      const auto own = entry_tolerance(context, name, label);
      double allowed = 0.0;
      if (own)
        allowed = *own * (absolute >= 0.0 ? std::max(1.0, std::abs(av[ia])) : std::abs(av[ia]));
      else if (absolute >= 0.0)
        allowed = absolute;
      else
        allowed =
            std::max(tol.hist_value_relative * std::abs(av[ia]), tol.hist_value_floor_of_largest * scale);
      values.check(label, av[ia], b.hist.values[ib], allowed);
      if (!with_sigmas) continue;
      const double sigma = std::sqrt(a.hist.variances[ia]);
      sigmas.check(label, sigma, std::sqrt(b.hist.variances[ib]),
                   own.value_or(tol.hist_sigma_relative) * sigma);
    }
  }
  values.finish(out);
  sigmas.finish(out);
}

// A covariance matrix: each entry to `relative` of sigma_i sigma_j from A's diagonal.
void compare_covariance(const std::string& name, const Quantity& a, const Quantity& b,
                        const GroupContext& context, std::vector<QuantityResult>& out, double relative,
                        const std::string& category) {
  const auto& axes = a.hist.axes;
  if (axes.size() != 2 || axes[0].extent != axes[1].extent) {
    compare_histogram(name, a, b, context, out, "hist values", "hist uncertainties");
    return;
  }
  Recorder r(context, name, "", category);
  Alignment al;
  if (align_into(a, b, context, r, al)) {
    const auto& av = a.hist.values;
    const long n = static_cast<long>(axes[1].extent);
    for (size_t k = 0; k < al.size(); ++k) {
      const long ia = al.a(k), ib = al.b(k);
      if (ib < 0) {
        r.missing_in_b(al.label(k));
        continue;
      }
      const long i = ia / n, j = ia % n;
      const auto label = [&] { return al.label(k); };
      const double sigmas = std::sqrt(std::abs(av[i * n + i])) * std::sqrt(std::abs(av[j * n + j]));
      r.check(label, av[ia], b.hist.values[ib],
              entry_tolerance(context, name, label).value_or(relative) * sigmas);
    }
  }
  r.finish(out);
}

// Impacts: same rows and columns in the same order (consumers index them), each entry relative
// with a floor of the row POI's uncertainty for numerical zeros.
void compare_impacts(const std::string& name, const Quantity& a, const Quantity& b,
                     const GroupContext& context, std::vector<QuantityResult>& out) {
  const Tolerances& tol = context.options->tolerances;
  Recorder r(context, name, "", name);
  Alignment al;
  if (align_into(a, b, context, r, al)) {
    const auto& axes = a.hist.axes;
    for (size_t i = 0; i < axes.size(); ++i)
      if (axes[i].category && b.hist.axes[i].category && axes[i].labels != b.hist.axes[i].labels)
        r.fail("labels of axis " + std::to_string(i) + " differ from " + context.options->name_a +
               "'s (names or order)");
    long row_stride = 1;
    for (size_t i = 1; i < axes.size(); ++i) row_stride *= static_cast<long>(axes[i].extent);
    // The floor's parameter: the row of [parms, impacts]; the column of the refit kinds' [impacts,
    // downUpVar, parms] (docs/output-format.md "Impacts by refits").
    const bool by_column = (ends_with(name, "impacts_asym") || ends_with(name, "impacts_asym_grouped")) &&
                           axes.size() == 3 && axes[2].category;
    for (size_t k = 0; k < al.size(); ++k) {
      const long ia = al.a(k), ib = al.b(k);
      if (ib < 0) {
        r.missing_in_b(al.label(k));
        continue;
      }
      double poi_sigma = 0.0;
      if (by_column) {
        const auto it = context.sigma_of_parameter.find(
            axes[2].labels[static_cast<size_t>(ia % static_cast<long>(axes[2].extent))]);
        if (it != context.sigma_of_parameter.end()) poi_sigma = it->second;
      } else if (!axes.empty() && axes[0].category) {
        const auto it = context.sigma_of_parameter.find(axes[0].labels[static_cast<size_t>(ia / row_stride)]);
        if (it != context.sigma_of_parameter.end()) poi_sigma = it->second;
      }
      const auto label = [&] { return al.label(k); };
      const double rel = entry_tolerance(context, name, label).value_or(tol.impact_relative);
      const double av = a.hist.values[ia];
      const double floor = by_column ? tol.refit_impact_floor_of_sigma : tol.impact_floor_of_poi_sigma;
      r.check(label, av, b.hist.values[ib], std::max(rel * std::abs(av), floor * poi_sigma));
    }
  }
  r.finish(out);
}

// Global impacts on histogram bins: relative as impacts, with a floor of the histogram's largest
// |entry| (a bin has no POI uncertainty to scale numerical zeros with); no variances (rabbit's are its
// Double storage's). rabbit writes NaN where its stat remainder is a round-off negative, ours clamps
// it at 0 (docs/differences-from-rabbit.md): such an entry is compared as 0.
void compare_hist_impacts(const std::string& name, const Quantity& a, const Quantity& b,
                          const GroupContext& context, std::vector<QuantityResult>& out) {
  const Tolerances& tol = context.options->tolerances;
  Recorder r(context, name, "", "hist impacts");
  Alignment al;
  if (align_into(a, b, context, r, al)) {
    const auto& av = a.hist.values;
    double scale = 0.0;
    for (size_t k = 0; k < al.size(); ++k)
      if (!std::isnan(av[al.a(k)])) scale = std::max(scale, std::abs(av[al.a(k)]));
    for (size_t k = 0; k < al.size(); ++k) {
      const long ia = al.a(k), ib = al.b(k);
      if (ib < 0) {
        r.missing_in_b(al.label(k));
        continue;
      }
      const auto label = [&] { return al.label(k); };
      const double x = std::isnan(av[ia]) ? 0.0 : av[ia];
      const double rel = entry_tolerance(context, name, label).value_or(tol.impact_relative);
      r.check(label, x, b.hist.values[ib],
              std::max(rel * std::abs(x), tol.impact_floor_of_poi_sigma * scale));
    }
  }
  r.finish(out);
}

}  // namespace

Rule rule_for(const std::string& name, Quantity::Kind kind) {
  const std::string key = last_key(name);
  const bool top_level = key == name;
  const bool in_mapping = starts_with(name, "mappings/");
  if (kind == Quantity::Kind::other) return Rule::skip;
  if (name == "_cpp" || starts_with(name, "_cpp/")) return Rule::skip;  // our own details
  if (top_level && (key == "epoch_loss" || key == "epoch_time" || key == "edmval"))
    return Rule::skip;  // the path
  if (in_mapping && name.find("/channels/") != std::string::npos && starts_with(key, "cov_"))
    return Rule::skip;  // inputs
  // The saturated fit's path (its parametrisation differs from rabbit's, differences-from-rabbit.md).
  if (in_mapping && key == "edmval_saturated") return Rule::skip;
  if (kind == Quantity::Kind::scalar) {
    if (top_level && (key == "nllvalreduced" || key == "nllvalfull")) return Rule::nll;
    if (top_level && (key == "ndfsat" || key == "postfit_profile")) return Rule::exact;
    if (in_mapping && (key == "chi2" || key == "chi2_prefit" || key == "ndf" || key == "ndf_prefit" ||
                       key == "chi2_saturated" || key == "ndf_saturated"))
      return Rule::chi2;
    return Rule::number;
  }
  if (top_level && (key == "parms" || key == "parms_prefit")) return Rule::parameters;
  if (top_level && key == "cov") return Rule::covariance;
  if (top_level && (ends_with(key, "impacts") || ends_with(key, "impacts_grouped") ||
                    ends_with(key, "impacts_asym") || ends_with(key, "impacts_asym_grouped")))
    return Rule::impacts;
  if (top_level && starts_with(key, "nll_scan2D_")) return Rule::nll_scan_grid;
  if (top_level && starts_with(key, "nll_scan")) return Rule::nll_scan;
  if (in_mapping && ends_with(key, "_cov")) return Rule::hist_covariance;
  if (in_mapping && (ends_with(key, "_global_impacts") || ends_with(key, "_global_impacts_grouped")))
    return Rule::hist_impacts;
  return Rule::histogram;
}

// A 2D scan grid (docs/validation.md "Cases"): its points are x̂ + k·σ, known to the fits' precision only,
// so they are matched by position along each axis, their values held to the parameter tolerance and the
// ΔNLL to the NLL's; a ΔNLL has no uncertainty (upstream's Double storage reads back variances = values).
void compare_scan_grid(const std::string& name, const Quantity& a, const Quantity& b,
                       const GroupContext& context, std::vector<QuantityResult>& out) {
  const Tolerances& tol = context.options->tolerances;
  Recorder points(context, name, "scan points", "nll scans"), values(context, name, "values", "nll scans");
  const auto& ax = a.hist.axes;
  const auto& bx = b.hist.axes;
  bool same_shape = ax.size() == bx.size();
  for (size_t i = 0; same_shape && i < ax.size(); ++i)
    same_shape = ax[i].category && bx[i].category && ax[i].labels.size() == bx[i].labels.size();
  if (!same_shape) {
    values.fail("scan grids differ in shape from " + context.options->name_b + "'s");
    values.finish(out);
    return;
  }
  for (size_t i = 0; i < ax.size(); ++i)
    for (size_t k = 0; k < ax[i].labels.size(); ++k) {
      const double va = std::strtod(ax[i].labels[k].c_str(), nullptr);
      const double vb = std::strtod(bx[i].labels[k].c_str(), nullptr);
      points.check([&] { return ax[i].name + "[" + std::to_string(k) + "]"; }, va, vb,
                   tol.parameter_relative * std::max(1.0, std::abs(va)));
    }
  // Row-major over the labels; each side's strides from its own extents (a result file keeps flow slots).
  std::vector<size_t> index(ax.size(), 0);
  const size_t total = ax.empty() ? 0 : [&] {
    size_t n = 1;
    for (const auto& x : ax) n *= x.labels.size();
    return n;
  }();
  for (size_t e = 0; e < total; ++e) {
    size_t rem = e, ia = 0, ib = 0;
    for (size_t i = ax.size(); i-- > 0;) {
      index[i] = rem % ax[i].labels.size();
      rem /= ax[i].labels.size();
    }
    for (size_t i = 0; i < ax.size(); ++i) {
      ia = ia * static_cast<size_t>(ax[i].extent) + index[i];
      ib = ib * static_cast<size_t>(bx[i].extent) + index[i];
    }
    values.check([&] { return "entry " + std::to_string(e); }, a.hist.values[ia], b.hist.values[ib],
                 tol.nll_absolute);
  }
  points.finish(out);
  values.finish(out);
}

void compare_quantity(Rule rule, const std::string& name, const Quantity& a, const Quantity& b,
                      const GroupContext& context, std::vector<QuantityResult>& out) {
  const Tolerances& tol = context.options->tolerances;
  switch (rule) {
    case Rule::skip:
      return;
    case Rule::nll:
    case Rule::exact:
    case Rule::chi2:
    case Rule::number:
      return compare_number(rule, name, a.scalar, b.scalar, context, out);
    case Rule::parameters:
      return compare_parameters(name, a, b, context, out);
    case Rule::covariance:
      return compare_covariance(name, a, b, context, out, tol.covariance_relative, "cov");
    // Twice the uncertainties' relative tolerance: a variance is a square.
    case Rule::hist_covariance:
      return compare_covariance(name, a, b, context, out, 2.0 * tol.hist_sigma_relative, "hist cov");
    case Rule::impacts:
      return compare_impacts(name, a, b, context, out);
    case Rule::histogram:
      return compare_histogram(name, a, b, context, out, "hist values", "hist uncertainties");
    case Rule::hist_impacts:
      return compare_hist_impacts(name, a, b, context, out);
    case Rule::nll_scan:
      return compare_histogram(name, a, b, context, out, "nll scans", "nll scans", tol.nll_absolute);
    case Rule::nll_scan_grid:
      return compare_scan_grid(name, a, b, context, out);
  }
}

}  // namespace rabbit::compare::detail
