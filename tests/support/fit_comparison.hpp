#pragma once
// "Our rabbit_fit against a result written by upstream rabbit", for test_reference (the committed
// cases in tests/reference/fits): a reference case runs through run_reference_case() and is checked
// with compare_fit_result(). A reference case is a JSON document in the layout of
// tests/reference/README.md:
// {"tensor", "args", "rabbit_commit", "results": {GROUP: rabbit's results dictionary}}.
//
// The comparison is rabbit_compare's library (include/rabbit/compare/compare.hpp: what is compared,
// the tolerances of docs/validation.md "Tolerances", matching by name), with rabbit's JSON as the reference
// side A and our result file as B; our file may hold more than rabbit wrote. Every disagreement is
// a non-fatal GoogleTest failure naming case, group, quantity and the worst entry.
#include <filesystem>
#include <string>
#include <vector>

#include "rabbit/compare/compare.hpp"
#include "rabbit/io/json.hpp"

namespace rabbit::test {

using Json = io::Json;

/// A measured, documented deviation from upstream: one entry held to a looser relative tolerance.
/// `where` is "CASE [GROUP]" (plus " MAPPING" for mapping quantities), `quantity` the result key
/// (e.g. "global_impacts_grouped", "chi2"), `label` the entry ("[ROW,COLUMN]" or the key).
struct KnownDeviation {
  std::string where, quantity, label;
  double relative = 0.0;
};

/// The library's default tolerances plus the known deviations of the reference cases.
struct FitTolerances : compare::Tolerances {
  std::vector<KnownDeviation> known_deviations;
};

/// Largest relative and absolute deviation seen for one kind of quantity.
using Deviation = compare::Deviation;
using DeviationSummary = compare::DeviationSummary;

/// Compares every group of `expected_results` (a reference case's "results": GROUP -> rabbit's
/// results; GROUP "data_obs", "results" or "" is our "results", any other our "results_GROUP")
/// with the result file `our_result_file`. Failures are reported through GoogleTest; the return
/// value holds the largest deviations per kind of quantity, for docs/validation.md.
DeviationSummary compare_fit_result(const std::string& case_name, const Json& expected_results,
                                    const std::string& our_result_file, const FitTolerances& tolerances);

/// The measured, documented deviations of tests/reference's cases (docs/validation.md).
std::vector<KnownDeviation> reference_known_deviations();

/// The known deviations of one case as the library's per-entry tolerances.
std::vector<compare::EntryTolerance> entry_tolerances(const std::string& case_name,
                                                      const std::vector<KnownDeviation>& known_deviations);

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
