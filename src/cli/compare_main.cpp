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

// --entry-tolerance takes four words per use: GROUP QUANTITY ENTRY REL, as the report prints them.
std::vector<compare::EntryTolerance> entry_tolerances(const std::vector<std::string>& words) {
  std::vector<compare::EntryTolerance> out;
  for (size_t i = 0; i + 3 < words.size(); i += 4) {
    char* end = nullptr;
    const double rel = std::strtod(words[i + 3].c_str(), &end);
    if (end == words[i + 3].c_str() || *end != '\0' || !(rel >= 0.0))
      throw OptionError("--entry-tolerance: '" + words[i + 3] + "' is not a non-negative number");
    out.push_back({words[i], words[i + 1], words[i + 2], rel});
  }
  return out;
}

int run(int argc, const char* const* argv, std::ostream& out) {
  CLI::App app("Compare two rabbit fit results quantity by quantity; A is the reference (relative tolerances "
               "are of A's values). Exit code 0: within tolerance, 1: beyond, 2: bad input.",
               "rabbit_compare");
  std::string path_a, path_b;
  compare::CompareOptions options;
  compare::Tolerances& tol = options.tolerances;
  double scale = 1.0;
  bool quiet = false;
  std::vector<std::string> entry_words;
  app.add_option("A", path_a, "reference: a result file (.hdf5) or upstream's results as JSON (.json)")->required();
  app.add_option("B", path_b, "the result to check, same choices")->required();
  app.add_option("--groups", options.groups,
                 "compare only these fit groups: names (results, results_asimov, or asimov) or regular expressions");
  app.add_option("--quantities", options.quantities,
                 "compare only these quantities: full names (mappings/BaseMapping/chi2), last keys (hist_nobs) "
                 "or regular expressions");
  app.add_flag("--subset", options.b_may_hold_more,
               "groups and quantities only B holds are not failures (A is a partial record)");
  app.add_flag("--all-entries", options.keep_all_beyond, "list every entry beyond tolerance, not only the worst");
  app.add_flag("-q,--quiet", quiet, "print only what is beyond tolerance, and the last line");
  const auto non_negative = CLI::NonNegativeNumber;
  app.add_option("--tol-nll", tol.nll_absolute, "reduced NLL and NLL scans, absolute")->check(non_negative)->capture_default_str();
  app.add_option("--tol-parms", tol.parameter_relative, "parameter values (of max(|value|, sigma)) and uncertainties, relative")
      ->check(non_negative)->capture_default_str();
  app.add_option("--tol-cov", tol.covariance_relative, "covariance entries, of sigma_i sigma_j")
      ->check(non_negative)->capture_default_str();
  app.add_option("--tol-impacts", tol.impact_relative, "impacts, relative")->check(non_negative)->capture_default_str();
  app.add_option("--tol-impacts-floor", tol.impact_floor_of_poi_sigma, "impacts' floor, of the row POI's sigma")
      ->check(non_negative)->capture_default_str();
  app.add_option("--tol-hist", tol.hist_value_relative, "histogram values, relative")->check(non_negative)->capture_default_str();
  app.add_option("--tol-hist-floor", tol.hist_value_floor_of_largest, "histogram values' floor, of the largest |value|")
      ->check(non_negative)->capture_default_str();
  app.add_option("--tol-hist-sigma", tol.hist_sigma_relative, "histogram uncertainties, relative")
      ->check(non_negative)->capture_default_str();
  app.add_option("--tol-chi2", tol.chi2_relative, "chi2, ndf and other numbers, relative (absolute below 1)")
      ->check(non_negative)->capture_default_str();
  app.add_option("--tol-scale", scale, "multiply every tolerance by this")->check(non_negative)->capture_default_str();
  app.add_option("--entry-tolerance", entry_words,
                 "one entry's relative tolerance, as the report names it (e.g. results global_impacts_grouped "
                 "[slope_signal_ch0,stat] 3e-5); repeatable")
      ->type_name("GROUP QUANTITY ENTRY REL")
      ->expected(4);
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
  tol.entries = entry_tolerances(entry_words);
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
    out << "rabbit_compare: within tolerance (" << report.results.size() << " results in " << report.groups_compared
        << " groups)\n";
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
