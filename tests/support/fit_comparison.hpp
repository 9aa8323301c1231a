#pragma once
// The one comparison engine for "our rabbit_fit against a result written by upstream rabbit":
// test_reference (committed cases in tests/reference/fits) and test_cli's ReferenceFits
// (../shared/ref/fits) both run a reference case through run_reference_case() and check it with
// compare_fit_result(). A reference case is a JSON document in the layout of shared/ref/README.md:
// {"tensor", "args", "rabbit_commit", "results": {GROUP: rabbit's results dictionary}}.
//
// Compared, in stored coordinates on both sides (sqrt(mu) for non-negative POIs), with the
// tolerances of DECISIONS.md "Numbers" (FitTolerances below):
//   reduced NLL                              1e-6 absolute; ndfsat exactly
//   parameter values                         1e-6 relative, or 1e-6 of the uncertainty if larger
//   parameter uncertainties                  1e-6 relative (covariance: 2e-6 of sigma_i sigma_j)
//   impacts (traditional/global, grouped)    1e-5 relative (floor: 1e-7 of the row POI's uncertainty);
//                                            axis labels identical, in the same order
//   histogram uncertainties                  1e-5 relative; histogram values 1e-6 relative
//   chi2 / ndf of the mappings               1e-6 relative (absolute below 1)
// Parameters and impact rows/columns are matched by name, channel bins by position (our flow bins
// dropped). Every disagreement is a non-fatal GoogleTest failure naming case, group, quantity and
// the worst entry.
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "support/json.hpp"

namespace rabbit::test {

/// A measured, documented deviation from upstream: one entry held to a looser relative tolerance.
/// `where` is "CASE [GROUP]" (plus " MAPPING" for mapping quantities), `quantity` the result key
/// (e.g. "global_impacts_grouped", "chi2"), `label` the entry ("[ROW,COLUMN]" or the key).
struct KnownDeviation {
  std::string where, quantity, label;
  double relative = 0.0;
};

struct FitTolerances {
  double nll_absolute = 1e-6;
  double parameter_relative = 1e-6;   // values (relative, or of the uncertainty) and uncertainties
  double covariance_relative = 2e-6;  // of sigma_i sigma_j
  double impact_relative = 1e-5;
  double impact_floor_of_poi_sigma = 1e-7;  // keeps numerical zeros from demanding relative agreement
  double hist_value_relative = 1e-6;
  double hist_value_floor_of_largest = 1e-9;
  double hist_sigma_relative = 1e-5;
  double chi2_relative = 1e-6;  // absolute below 1
  std::vector<KnownDeviation> known_deviations;

  /// The relative tolerance of one entry: a known deviation's, else `standard`.
  double relative(const std::string& where, const std::string& quantity, const std::string& label,
                  double standard) const;
};

/// Largest relative and absolute deviation seen for one kind of quantity.
struct Deviation {
  double relative = 0.0, absolute = 0.0;
};
using DeviationSummary = std::map<std::string, Deviation>;

/// Compares every group of `expected_results` (a reference case's "results": GROUP -> rabbit's
/// results; GROUP "data_obs", "results" or "" is our "results", any other our "results_GROUP")
/// with the result file `our_result_file`. Failures are reported through GoogleTest; the return
/// value holds the largest deviations per kind of quantity, for docs/validation.md.
DeviationSummary compare_fit_result(const std::string& case_name, const Json& expected_results,
                                    const std::string& our_result_file, const FitTolerances& tolerances);

/// "; QUANTITY REL/ABS" for every entry, two significant digits.
std::string format_summary(const DeviationSummary& summary);

/// Our rabbit_fit run on a reference case: its tensor (`tensor_dir`/"tensor") with its "args",
/// writing `out_dir`/fit.hdf5 (our -o/--outname come last and win over recorded ones; with a
/// recorded --postfix, the .hdf5 file rabbit_fit wrote there).
struct ReferenceRun {
  std::string command;
  int exit_code = -1;
  std::string output;  // stdout and stderr
  std::filesystem::path result_file;
};
ReferenceRun run_reference_case(const Json& reference, const std::filesystem::path& tensor_dir,
                                const std::filesystem::path& out_dir, const std::string& extra_args = "");

}  // namespace rabbit::test
