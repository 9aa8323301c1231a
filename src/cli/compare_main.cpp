#include "rabbit/cli/compare_main.hpp"

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "rabbit/compare/compare.hpp"
#include "rabbit/core/error.hpp"

namespace rabbit::cli {
namespace {

constexpr int kWithin = 0, kBeyond = 1, kBadInput = 2;

// --entry-tolerance GROUP/QUANTITY[ENTRY]=REL: the group, quantity and entry as the report prints
// them ("results/global_impacts_grouped[slope_signal_ch0,stat]=3e-5"); a number's entry is its own
// key ("results/mappings/BaseMapping/chi2=3e-6"). One word, so that the shell and the option parser
// leave the entry's brackets and commas alone.
compare::EntryTolerance entry_tolerance(const std::string& spec) {
  const auto bad = [&](const std::string& why) {
    return OptionError("--entry-tolerance '" + spec + "': " + why + " (expected GROUP/QUANTITY[ENTRY]=REL)");
  };
  const auto equals = spec.rfind('='), slash = spec.find('/');
  if (equals == std::string::npos || slash == std::string::npos || slash == 0 || slash > equals)
    throw bad("no GROUP/ or no =REL");
  const std::string rel_text = spec.substr(equals + 1), path = spec.substr(slash + 1, equals - slash - 1);
  char* end = nullptr;
  const double rel = std::strtod(rel_text.c_str(), &end);
  if (rel_text.empty() || *end != '\0' || !(rel >= 0.0)) throw bad("REL is not a non-negative number");
  compare::EntryTolerance e;
  e.group = spec.substr(0, slash);
  e.relative = rel;
  const auto bracket = path.find('[');
  if (bracket == std::string::npos) {
    e.quantity = path;
    e.entry = path.substr(path.rfind('/') + 1);
  } else {
    if (path.back() != ']') throw bad("the entry does not end with ']'");
    e.quantity = path.substr(0, bracket);
    e.entry = path.substr(bracket);
  }
  if (e.quantity.empty()) throw bad("no quantity");
  return e;
}

int run(int argc, const char* const* argv, std::ostream& out) {
  CLI::App app(
      "Compare two rabbit fit results quantity by quantity; A is the reference (relative tolerances "
      "are of A's values). Exit code 0: within tolerance, 1: beyond, 2: bad input.",
      "rabbit_compare");
  std::string path_a, path_b;
  compare::CompareOptions options;
  compare::Tolerances& tol = options.tolerances;
  double scale = 1.0;
  bool quiet = false;
  std::vector<std::string> entry_specs;
  app.add_option("A", path_a, "reference: a result file (.hdf5) or upstream's results as JSON (.json)")
      ->required();
  app.add_option("B", path_b, "the result to check, same choices")->required();
  app.add_option(
      "--groups", options.groups,
      "compare only these fit groups: names (results, results_asimov, or asimov) or regular expressions");
  app.add_option(
      "--quantities", options.quantities,
      "compare only these quantities: full names (mappings/BaseMapping/chi2), last keys (hist_nobs) "
      "or regular expressions");
  app.add_flag("--subset", options.b_may_hold_more,
               "groups and quantities only B holds are not failures (A is a partial record)");
  app.add_flag("--all-entries", options.keep_all_beyond,
               "list every entry beyond tolerance, not only the worst");
  app.add_flag("-q,--quiet", quiet, "print only what is beyond tolerance, and the last line");
  const auto non_negative = CLI::NonNegativeNumber;
  app.add_option("--tol-nll", tol.nll_absolute, "reduced NLL and NLL scans, absolute")
      ->check(non_negative)
      ->capture_default_str();
  app.add_option("--tol-parms", tol.parameter_relative,
                 "parameter values (of max(|value|, sigma)) and uncertainties, relative")
      ->check(non_negative)
      ->capture_default_str();
  app.add_option("--tol-cov", tol.covariance_relative, "covariance entries, of sigma_i sigma_j")
      ->check(non_negative)
      ->capture_default_str();
  app.add_option("--tol-impacts", tol.impact_relative, "impacts, relative")
      ->check(non_negative)
      ->capture_default_str();
  app.add_option("--tol-impacts-floor", tol.impact_floor_of_poi_sigma,
                 "impacts' floor, of the row POI's sigma")
      ->check(non_negative)
      ->capture_default_str();
  app.add_option("--tol-hist", tol.hist_value_relative, "histogram values, relative")
      ->check(non_negative)
      ->capture_default_str();
  app.add_option("--tol-hist-floor", tol.hist_value_floor_of_largest,
                 "histogram values' floor, of the largest |value|")
      ->check(non_negative)
      ->capture_default_str();
  app.add_option("--tol-hist-sigma", tol.hist_sigma_relative, "histogram uncertainties, relative")
      ->check(non_negative)
      ->capture_default_str();
  app.add_option("--tol-chi2", tol.chi2_relative, "chi2, ndf and other numbers, relative (absolute below 1)")
      ->check(non_negative)
      ->capture_default_str();
  app.add_option("--tol-scale", scale, "multiply every tolerance by this")
      ->check(non_negative)
      ->capture_default_str();
  app.add_option(
         "--entry-tolerance", entry_specs,
         "one entry's relative tolerance, named as the report names it: GROUP/QUANTITY[ENTRY]=REL, e.g. "
         "results/global_impacts_grouped[slope_signal_ch0,stat]=3e-5 or "
         "results/mappings/BaseMapping/chi2=3e-6; "
         "repeatable")
      ->type_name("GROUP/QUANTITY[ENTRY]=REL");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    out << app.help();
    return kWithin;
  } catch (const CLI::ParseError& e) {
    std::string message = e.what();
    for (char& c : message)
      if (c == '\n') c = ' ';
    throw OptionError(message);
  }
  for (const auto& spec : entry_specs) tol.entries.push_back(entry_tolerance(spec));
  tol.scale(scale);

  const auto a = compare::open_result_tree(path_a);
  const auto b = compare::open_result_tree(path_b);
  const compare::Report report = compare::compare_results(*a, *b, options);
  if (!quiet) out << "A: " << report.a_description << "\nB: " << report.b_description << "\n";
  for (const auto& r : report.results) {
    if (quiet && r.ok()) continue;
    out << compare::format_result(r) << "\n";
    for (const auto& entry : r.beyond_entries) out << "        " << entry << "\n";
  }
  const size_t beyond = report.beyond_tolerance();
  if (beyond == 0)
    out << "rabbit_compare: within tolerance (" << report.results.size() << " results in "
        << report.groups_compared << (report.groups_compared == 1 ? " group)\n" : " groups)\n");
  else
    out << "rabbit_compare: beyond tolerance: " << beyond << " of " << report.results.size() << " results\n";
  return beyond == 0 ? kWithin : kBeyond;
}

}  // namespace

int compare_main(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  try {
    return run(argc, argv, out);
  } catch (const std::exception& e) {
    // Whatever keeps the comparison from running is bad input: 2, never to be read as "beyond".
    err << "rabbit_compare: error: " << e.what() << std::endl;
    return kBadInput;
  }
}

}  // namespace rabbit::cli
