#pragma once
// Comparing two fit results quantity by quantity (rabbit_compare, and test_reference against
// upstream rabbit's own numbers). A is the reference: relative tolerances are taken of A's values
// and uncertainties. Fit groups and quantities are matched by name, parameters and impact
// rows/columns by label, category axes by label, binned axes by bin position (flow bins that one
// side stores and the other does not are dropped).
//
// Default tolerances (docs/validation.md "Tolerances"):
//   nllvalreduced, nllvalfull; nll_scan_*      1e-6 absolute
//   parameter values (parms, parms_prefit)     1e-6 · max(|value|, σ); uncertainties σ 1e-6 relative
//   cov                                        2e-6 · σ_i σ_j
//   impacts (all kinds, grouped or not)        1e-5 relative, floor 1e-7 · σ(row POI); row and column
//                                              labels identical, in the same order; the refit kinds
//                                              (*impacts_asym[_grouped]): floor 5e-6 · σ(column)
//   histogram values                           1e-6 relative, floor 1e-9 · largest |value|
//   histogram uncertainties                    1e-5 relative
//   bin covariances (mappings' hist_*_cov)     2e-5 · σ_i σ_j (twice the uncertainties': a square)
//   chi2, chi2_prefit, ndf, ndf_prefit, and
//   any other number                           1e-6 · max(1, |value|)
//   ndfsat, postfit_profile                    exactly
// Not compared: epoch_loss, epoch_time, edmval (the minimizer's path), our `_cpp` details, the
// input data covariances cov_data_obs / cov_nobs_obs, and strings. An entry's own tolerance
// (Tolerances::entries) replaces its rule's relative tolerance; for the absolute and exact rules
// it is REL · max(1, |A|).
#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "rabbit/compare/result_tree.hpp"

namespace rabbit::compare {

/// One entry held to its own relative tolerance (a measured, documented deviation).
/// `quantity` is the full name ("global_impacts_grouped", "mappings/BaseMapping/chi2"), `entry`
/// the label as printed ("[slope_signal_ch0,stat]"; a number's own key, "chi2").
struct EntryTolerance {
  std::string group, quantity, entry;
  double relative = 0.0;
};

struct Tolerances {
  double nll_absolute = 1e-6;
  double parameter_relative = 1e-6;   // values (relative, or of the uncertainty) and uncertainties
  double covariance_relative = 2e-6;  // of sigma_i sigma_j
  double impact_relative = 1e-5;
  double impact_floor_of_poi_sigma = 1e-7;  // keeps numerical zeros from demanding relative agreement
  // The impacts by refits and contours are differences of two fits, each as converged as its minimizer
  // leaves it: upstream's trust-krylov stops ~1e-7..2.4e-6 σ short (docs/validation.md "Tolerances").
  double refit_impact_floor_of_sigma = 5e-6;
  double hist_value_relative = 1e-6;
  double hist_value_floor_of_largest = 1e-9;
  double hist_sigma_relative = 1e-5;
  double chi2_relative = 1e-6;  // absolute below 1; also every number without a rule of its own
  std::vector<EntryTolerance> entries;

  /// The relative tolerance of one entry: its EntryTolerance's, else `standard`.
  double relative(const std::string& group, const std::string& quantity, const std::string& entry,
                  double standard) const;
  /// Every tolerance (entries included) times `factor`.
  void scale(double factor);
};

struct CompareOptions {
  Tolerances tolerances;
  /// Fit groups to compare (empty: all): a group is selected when a pattern equals its name or
  /// its name without "results_", or matches either as a regular expression.
  std::vector<std::string> groups;
  /// Quantities to compare (empty: all): a pattern selects a quantity when it equals or matches its
  /// full name ("mappings/BaseMapping/channels/ch0/hist_nobs") or its last key ("hist_nobs").
  std::vector<std::string> quantities;
  /// Groups and quantities only in B are not failures (A is a partial record).
  bool b_may_hold_more = false;
  /// Record every entry beyond tolerance, not only the worst one.
  bool keep_all_beyond = false;
  std::string name_a = "A", name_b = "B";
};

/// The outcome for one compared quantity (or one aspect of it: a histogram's values and its
/// uncertainties are two), or for a group or quantity that only one side holds.
struct QuantityResult {
  std::string group;     // "results"
  std::string quantity;  // full name; "" for a group-level finding
  std::string aspect;    // "values", "uncertainties" or ""
  std::string category;  // the summary's kind of quantity ("parms sigma", "hist values", ...), "" for none
  std::size_t entries = 0, beyond = 0;
  double max_relative = 0.0, max_absolute = 0.0;  // over the compared entries (relative: where A ≠ 0)
  double worst_ratio = -1.0;                      // deviation / allowed of the worst entry (inf: missing)
  std::string worst;                              // that entry, described
  std::vector<std::string> beyond_entries;        // with keep_all_beyond: every entry beyond tolerance

  bool ok() const { return beyond == 0; }
  /// "parms values", "mappings/BaseMapping/chi2", or the group for a group-level finding.
  std::string title() const;
};

/// Largest relative and absolute deviation seen for one kind of quantity.
struct Deviation {
  double relative = 0.0, absolute = 0.0;
};
using DeviationSummary = std::map<std::string, Deviation>;

struct Report {
  std::string a_description, b_description;
  std::size_t groups_compared = 0;
  std::vector<QuantityResult> results;  // A's groups and quantities in file order, then B's extras

  bool within_tolerance() const;
  std::size_t beyond_tolerance() const;
  /// Largest deviations per category (for docs/validation.md's table).
  DeviationSummary summary() const;
};

/// Compares every selected group and quantity of `a` with `b`. InputError when the selection
/// matches no group or no quantity of either side, or a source cannot be read.
Report compare_results(const ResultTree& a, const ResultTree& b, const CompareOptions& options);

/// One line per result: "ok    GROUP QUANTITY: N entries; largest deviation ...; worst ENTRY: ...".
std::string format_result(const QuantityResult& result);

}  // namespace rabbit::compare
