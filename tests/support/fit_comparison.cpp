#include "support/fit_comparison.hpp"

#include <gtest/gtest.h>

#include <iomanip>
#include <sstream>

#include "support/command.hpp"
#include "support/test_paths.hpp"

namespace fs = std::filesystem;

namespace rabbit::test {

// Known deviations from upstream, each measured and explained in docs/validation.md: in these
// cases upstream's minimizer stops before convergence (largest gradient 4.5e-6 / 4.7e-5; its own
// code, Newton-polished to the minimum, gives our numbers to 1e-11). The NLL cannot see the
// difference, but the covariance there is 1.6e-6 off, which the grouped "stat" global impact (a
// difference of squares) and the postfit chi2 (not stationary at the minimum) amplify. These
// entries get the looser relative tolerance listed; everything else in the same cases is held
// to docs/validation.md "Tolerances". A new case with a known deviation adds one line here.
std::vector<KnownDeviation> reference_known_deviations() {
  return {
      {"no_bbb [results]", "global_impacts_grouped", "[slope_signal_ch0,stat]", 3e-5},  // 1.8e-5 measured
      {"bb_lite_normal_add [results]", "global_impacts_grouped", "[slope_signal_ch0,stat]", 3e-5},  // 1.7e-5
      {"no_bbb [results] BaseMapping", "chi2", "chi2", 3e-6},  // 1.4e-6 measured
      // A small freeze-group entry sqrt(tot² − frozen²) of contour intervals amplifies their difference to
      // upstream's trust-constr (xtol 1e-6) by tot/entry ≈ 17 (docs/validation.md "Impacts by refits").
      {"asym_impacts [results]", "impacts_asym_grouped", "[slopes_background,0,sig]", 4e-4},  // 2.4e-4
      // 50 Newton steps on a curvature that flattens towards τ → −∞: the last steps are the minimizers'
      // noise (docs/validation.md "The L curve"); best_lcurve is held to the standard tolerance.
      {"reg_lcurve_optimize_masked [results]", "best_tau", "[0]", 5e-2},  // 1.5e-2 measured
  };
}

// "CASE [GROUP]" or "CASE [GROUP] MAPPING" of this case -> the library's group and full quantity name.
std::vector<compare::EntryTolerance> entry_tolerances(const std::string& case_name,
                                                      const std::vector<KnownDeviation>& known_deviations) {
  std::vector<compare::EntryTolerance> out;
  const std::string prefix = case_name + " [";
  for (const KnownDeviation& k : known_deviations) {
    const auto close = k.where.find(']');
    if (k.where.rfind(prefix, 0) != 0 || close == std::string::npos) continue;
    const std::string group = k.where.substr(prefix.size(), close - prefix.size());
    const std::string mapping = close + 2 < k.where.size() ? k.where.substr(close + 2) : "";
    const std::string quantity = mapping.empty() ? k.quantity : "mappings/" + mapping + "/" + k.quantity;
    out.push_back({group, quantity, k.label, k.relative});
  }
  return out;
}

std::string format_summary(const DeviationSummary& summary) {
  std::ostringstream line;
  line << std::setprecision(2);
  for (const auto& [quantity, d] : summary)
    line << "; " << quantity << " " << d.relative << "/" << d.absolute;
  return line.str();
}

DeviationSummary compare_fit_result(const std::string& case_name, const Json& expected_results,
                                    const std::string& our_result_file, const FitTolerances& tolerances) {
  compare::CompareOptions options;
  options.tolerances = tolerances;
  options.tolerances.entries = entry_tolerances(case_name, tolerances.known_deviations);
  options.b_may_hold_more = true;  // rabbit's results are the reference; ours may hold more
  options.name_a = "rabbit";
  options.name_b = "ours";
  const auto rabbit = compare::reference_json_tree(expected_results, case_name + " (rabbit)");
  const auto ours = compare::open_result_file(our_result_file);
  const compare::Report report = compare::compare_results(*rabbit, *ours, options);
  for (const auto& r : report.results)
    if (!r.ok()) ADD_FAILURE() << case_name << ": " << compare::format_result(r);
  return report.summary();
}

ReferenceRun run_reference_case(const Json& reference, const fs::path& tensor_dir, const fs::path& out_dir,
                                const std::string& extra_args) {
  ReferenceRun run;
  const fs::path tensor = tensor_dir / reference.at("tensor").string();
  const fs::path exe = binary_dir() / "rabbit_fit";
  run.command = shell_quote(exe.string()) + " " + shell_quote(tensor.string());
  for (const auto& a : reference.at("args").strings()) run.command += " " + shell_quote(a);
  if (!extra_args.empty()) run.command += " " + extra_args;
  run.command += " -o " + shell_quote(out_dir.string()) + " --outname fit.hdf5";
  if (!fs::exists(tensor)) {
    run.output = "reference tensor missing: " + tensor.string();
    return run;
  }
  if (!fs::exists(exe)) {
    run.output = exe.string() + " not built (target rabbit_fit_app)";
    return run;
  }
  const CommandResult r = run_command(run.command);
  run.exit_code = r.exit_code;
  run.output = r.output;
  run.result_file = out_dir / "fit.hdf5";
  // A recorded --postfix renames it (fit_POSTFIX.hdf5): then take the one result file there.
  if (!fs::exists(run.result_file) && fs::is_directory(out_dir))
    for (const auto& e : fs::directory_iterator(out_dir))
      if (e.path().extension() == ".hdf5") run.result_file = e.path();
  return run;
}

}  // namespace rabbit::test
