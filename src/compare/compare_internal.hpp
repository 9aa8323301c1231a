#pragma once
// Inside the comparison: matching two histograms entry by entry, and the per-quantity rules
// (which tolerance applies to which quantity). compare.cpp drives them group by group.
#include <map>
#include <string>
#include <vector>

#include "rabbit/compare/compare.hpp"

namespace rabbit::compare::detail {

/// The entries of one axis that both sides are compared on: positions in A and in B (-1 where B
/// lacks the category) and their labels.
struct AxisMatch {
  std::vector<long> a, b;
  std::vector<std::string> labels;
};

/// A's entries of a histogram, each with the matching entry of B, in A's row-major order. Computed
/// per entry on request: a covariance of many thousand parameters has 10^7 entries or more.
struct Alignment {
  std::vector<AxisMatch> axes;
  std::vector<long> a_extent, b_extent;
  std::vector<std::string> only_in_b;  // category labels B has and A lacks, as "axis N (NAME): LABEL"
  std::string error;                   // why the two cannot be matched at all ("" when they can)

  size_t size() const;
  long a(size_t entry) const;             // flat index into A's values
  long b(size_t entry) const;             // flat index into B's values, -1 where B lacks the entry
  std::string label(size_t entry) const;  // "[label or bin, ...]"
};

/// Category axes by label (numbers by value), binned axes by in-range bin; flow bins that only one
/// side stores are dropped (a JSON axis knows its bins; a result file's extent includes its flow).
Alignment align(const TreeHist& a, const TreeHist& b);

/// How a quantity is compared, from its name.
enum class Rule {
  skip,             // not a fit result (minimizer path, timings, our _cpp details, input covariances)
  nll,              // absolute tolerance
  exact,            // integers and flags
  chi2,             // the mappings' chi2 and ndf: relative, absolute below 1
  number,           // any other number: as chi2
  parameters,       // parms, parms_prefit
  covariance,       // cov
  impacts,          // every kind of impact histogram
  histogram,        // values and uncertainties of any other histogram
  hist_covariance,  // the mappings' bin-by-bin covariances
  hist_impacts,     // the mappings' global impacts per bin (relative, floor of the largest)
  nll_scan,         // ΔNLL along a scan: absolute
  nll_scan_grid,    // nll_scan2D_*: grid points matched by position (docs/validation.md "Cases")
};
Rule rule_for(const std::string& name, Quantity::Kind kind);

/// What the rules of one group share: where they are, the options, and A's parameter
/// uncertainties (the impacts' floor).
struct GroupContext {
  std::string group;
  const CompareOptions* options = nullptr;
  std::map<std::string, double> sigma_of_parameter;
};

/// Compares one quantity both sides hold, appending one result per aspect that was compared.
void compare_quantity(Rule rule, const std::string& name, const Quantity& a, const Quantity& b,
                      const GroupContext& context, std::vector<QuantityResult>& out);

}  // namespace rabbit::compare::detail
