#include "rabbit/cli/reports.hpp"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <charconv>
#include <cmath>
#include <functional>
#include <iostream>
#include <numeric>
#include <optional>
#include <regex>
#include <vector>

#include "rabbit/core/error.hpp"
#include "rabbit/core/logging.hpp"
#include "rabbit/core/python_format.hpp"
#include "rabbit/postfit/result_file.hpp"

namespace rabbit::cli {

std::string python_repr(double v) {
  return rabbit::python_repr(v);
}

std::string python_round_str(double v, int ndigits) {
  if (!std::isfinite(v)) return python_repr(v);
  // printf rounds the exact binary value correctly (ties to even), as Python's round does.
  std::string fixed = fmt::format("{:.{}f}", v, ndigits);
  double r = std::strtod(fixed.c_str(), nullptr);
  if (r == 0.0 && std::signbit(v)) r = -0.0;
  return python_repr(r);
}

namespace {

std::string ljust(const std::string& s, size_t w) {
  return s.size() >= w ? s : s + std::string(w - s.size(), ' ');
}
std::string rjust(const std::string& s, size_t w) {
  return s.size() >= w ? s : std::string(w - s.size(), ' ') + s;
}

// One column of a fixed-width text table: the text before it, its width, and its alignment
// (right unless `left`). A column of width 0 with an empty cell is a closing text.
struct Column {
  std::string before;
  size_t width = 0;
  bool left = false;
};

// One line of the table: header and rows share the columns, so they cannot drift apart.
std::string table_line(const std::vector<Column>& columns, const std::vector<std::string>& cells) {
  std::string line;
  for (size_t i = 0; i < columns.size(); ++i) {
    const Column& c = columns[i];
    const std::string& cell = i < cells.size() ? cells[i] : std::string();
    line += c.before + (c.left ? ljust(cell, c.width) : rjust(cell, c.width));
  }
  return line;
}

template <class F>
int guarded(const char* prog, F&& body) {
  try {
    return body();
  } catch (const CLI::CallForHelp&) {
    return 0;
  } catch (const Error& e) {
    std::cerr << prog << ": error: " << e.what() << std::endl;
    return static_cast<int>(e.code());
  } catch (const std::exception& e) {
    std::cerr << prog << ": error: " << e.what() << std::endl;
    return 1;
  }
}

void parse_or_throw(CLI::App& app, int argc, const char* const* argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::cout << app.help();
    throw;
  } catch (const CLI::ParseError& e) {
    std::string msg = e.what();
    std::replace(msg.begin(), msg.end(), '\n', ' ');
    throw OptionError(msg);
  }
}

// What every report reads: the result file and the result group picked by --result.
struct ReportInput {
  result::ResultReader file;
  std::string group;
};

// Parses a report's command line: the input file and --result first, then the report's own
// options, then -v/--noColorLogger (upstream's order in --help); sets the log verbosity and
// opens the file.
ReportInput parse_report_command(CLI::App& app, int argc, const char* const* argv,
                                 const std::function<void(CLI::App&)>& add_own_options) {
  std::string infile;
  std::optional<std::string> result;
  int verbose = 3;
  bool no_color = false;
  app.add_option("infile", infile, "result file")->required();
  app.add_option("--result", result, "result group key (results_KEY)");
  add_own_options(app);
  app.add_option("-v,--verbose", verbose, "log level 0..4");
  app.add_flag("--noColorLogger", no_color, "no colours");
  parse_or_throw(app, argc, argv);
  set_verbosity(verbose);
  result::ResultReader file(infile);
  std::string group = file.pick_result(result);
  return {std::move(file), std::move(group)};
}

}  // namespace

int print_pulls_main(int argc, const char* const* argv) {
  return guarded("rabbit_print_pulls_and_constraints", [&] {
    CLI::App app("Print the pulls and constraints of a rabbit-cpp result file",
                 "rabbit_print_pulls_and_constraints");
    std::string sort_key, keep, exclude;
    bool reverse = false, asym = false, no_prefit = false;
    const auto [f, g] = parse_report_command(app, argc, argv, [&](CLI::App& a) {
      a.add_option("-s,--sort", sort_key, "sort by this column")
          ->check(CLI::IsMember({"label", "pull", "constraint", "pull prefit", "constraint prefit",
                                 "abs pull", "abs pull prefit"}));
      a.add_flag("--reverse-sort", reverse, "reverse the order");
      a.add_flag("--asym", asym, "add the asymmetric constraints of the contour scan (level 1)");
      a.add_option("--keepNuisances", keep, "keep labels matching this regex anywhere");
      a.add_option("--excludeNuisances", exclude, "drop labels matching this regex anywhere");
      a.add_flag("--noPrefit", no_prefit, "omit the prefit columns");
    });
    const std::string& infile = f.path();
    auto parms = f.hist(g + "/parms");
    auto prefit = f.hist(g + "/parms_prefit");
    const auto& labels = parms.axis_labels.at(0);
    const size_t n = labels.size();
    std::vector<double> a0(n, NAN), a1(n, NAN);
    if (asym) {
      if (!f.exists(g + "/contour_scan"))
        throw InputError(infile + ": --asym needs contour_scan (run rabbit_fit with --contourScan)");
      auto c = f.hist(g + "/contour_scan");
      const auto& scanned = c.axis_labels[0];
      const auto& levels = c.axis_values[1];
      auto lit = std::find(levels.begin(), levels.end(), 1.0);
      if (lit == levels.end()) throw InputError(infile + ": --asym needs the contour scan at level 1.0");
      const int64_t il = lit - levels.begin();
      const int64_t nl = c.shape[1], np = c.shape[3];
      for (size_t i = 0; i < n; ++i) {
        auto it = std::find(scanned.begin(), scanned.end(), labels[i]);
        if (it == scanned.end())
          throw InputError(fmt::format("{}: --asym needs the contour scan of every parameter; {} missing",
                                       infile, labels[i]));
        int64_t ip = it - scanned.begin();
        a0[i] = c.values[((ip * nl + il) * 2 + 0) * np + static_cast<int64_t>(i)];
        a1[i] = c.values[((ip * nl + il) * 2 + 1) * np + static_cast<int64_t>(i)];
      }
    }
    std::vector<size_t> order;
    std::regex keep_re(keep.empty() ? ".*" : keep), excl_re(exclude.empty() ? "$^" : exclude);
    for (size_t i = 0; i < n; ++i) {
      if (!keep.empty() && !std::regex_search(labels[i], keep_re)) continue;
      if (!exclude.empty() && std::regex_search(labels[i], excl_re)) continue;
      order.push_back(i);
    }
    auto key = [&](size_t i) -> double {
      const double pull = parms.values[i], con = std::sqrt(parms.variances[i]);
      const double pp = prefit.values[i], cp = std::sqrt(prefit.variances[i]);
      if (sort_key == "pull") return pull;
      if (sort_key == "constraint") return con;
      if (sort_key == "pull prefit") return pp;
      if (sort_key == "constraint prefit") return cp;
      if (sort_key == "abs pull") return std::abs(pull);
      if (sort_key == "abs pull prefit") return std::abs(pp);
      return 0.0;
    };
    if (sort_key == "label")
      std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return labels[a] < labels[b]; });
    else if (!sort_key.empty())
      std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return key(a) < key(b); });
    if (reverse) std::reverse(order.begin(), order.end());

    // Upstream's columns: parameter, pull +/- constraint [+ up - down] [(prefit pull +/- constraint)].
    std::vector<Column> columns = {{"   ", 30, true}, {" ", 6}, {" +/- ", 10}};
    std::vector<std::string> header = {"Parameter", "pull", "constraint"};
    if (asym) {
      columns.insert(columns.end(), {{" + ", 10}, {" - ", 10}});
      header.insert(header.end(), {"up", "down"});
    }
    if (!no_prefit) {
      columns.insert(columns.end(), {{" (", 11}, {" +/- ", 17}, {")", 0}});
      header.insert(header.end(), {"pull prefit", "constraint prefit"});
    }
    const std::string header_line = table_line(columns, header);
    std::cout << header_line << "\n"
              << "   " << std::string(header_line.size() - 3, '-') << "\n";
    for (size_t i : order) {
      std::vector<std::string> row = {labels[i], python_round_str(parms.values[i]),
                                      python_round_str(std::sqrt(parms.variances[i]))};
      if (asym) row.insert(row.end(), {python_round_str(a1[i]), python_round_str(a0[i])});
      if (!no_prefit)
        row.insert(row.end(),
                   {python_round_str(prefit.values[i]), python_round_str(std::sqrt(prefit.variances[i]))});
      std::cout << table_line(columns, row) << "\n";
    }
    // The fit's convergence certificate (docs/minimizers.md "Convergence"), when it was fitted.
    if (f.exists(g + "/_cpp/converged")) {
      const double edm = f.scalar(g + "/_cpp/edm");
      if (f.scalar(g + "/_cpp/converged") == 1.0)
        std::cout << "Fit converged: EDM " << python_repr(edm) << "\n";
      else
        std::cout << "WARNING: the fit did NOT converge (" << f.strings(g + "/_cpp/stop_reason").at(0)
                  << "); EDM " << python_repr(edm) << "\n";
    }
    return 0;
  });
}

int print_impacts_main(int argc, const char* const* argv) {
  return guarded("rabbit_print_impacts", [&] {
    CLI::App app("Print the impacts of a rabbit-cpp result file", "rabbit_print_impacts");
    std::string impact_type = "traditional";
    std::optional<std::string> nuisance;
    std::vector<std::string> mapping;
    bool asym = false, relative = false, ungroup = false, sort = false;
    double scale = 1.0;
    const auto [f, g] = parse_report_command(app, argc, argv, [&](CLI::App& a) {
      a.add_option("--impactType", impact_type, "kind of impacts")
          ->check(CLI::IsMember({"traditional", "global", "gaussian_global", "nonprofiled"}));
      a.add_flag("--asymImpacts", asym, "use the *_asym histograms");
      a.add_option("-m,--mapping", mapping, "impacts on the bins of a mapping (global kinds)")
          ->expected(1, -1);
      a.add_flag("--relative", relative, "relative impacts (mapping mode)");
      a.add_flag("-u,--ungroup", ungroup, "per-parameter impacts instead of grouped");
      a.add_option("-n,--nuisance", nuisance, "print one entry only");
      a.add_flag("-s,--sort", sort, "sort the entries");
      a.add_option("--scale", scale, "multiply every impact by this factor");
    });
    const std::string& infile = f.path();
    std::string name = impact_type == "traditional" ? "impacts" : impact_type + "_impacts";
    if (asym) name += "_asym";
    if (!ungroup) name += "_grouped";
    if (!mapping.empty()) {
      if (impact_type != "global" && impact_type != "gaussian_global")
        throw OptionError("--mapping works with --impactType global or gaussian_global only");
      throw InputError(
          fmt::format("{}: impacts on histogram bins need hist_postfit_inclusive_{} (--computeHistImpacts), "
                      "which this release does not write",
                      infile, name.substr(0, name.size())));
    }
    if (relative) throw OptionError("--relative is only implemented for mappings");
    if (!f.exists(g + "/" + name))
      throw InputError(fmt::format(
          "{}: {} has no histogram {} (run rabbit_fit with the matching impact option)", infile, g, name));
    auto h = f.hist(g + "/" + name);
    auto parms = f.hist(g + "/parms");
    const auto& rows = h.axis_labels.at(0);
    const auto& cols = h.axis_labels.at(1);
    const auto& pnames = parms.axis_labels.at(0);
    for (size_t r = 0; r < rows.size(); ++r) {
      const std::string& poi = rows[r];
      auto pit = std::find(pnames.begin(), pnames.end(), poi);
      const double total = pit == pnames.end() ? NAN : std::sqrt(parms.variances[pit - pnames.begin()]);
      std::vector<std::pair<std::string, double>> entries;
      for (size_t c = 0; c < cols.size(); ++c) entries.emplace_back(cols[c], h.values[r * cols.size() + c]);
      if (impact_type != "nonprofiled") entries.emplace_back("Total", total);
      if (nuisance) {
        auto it =
            std::find_if(entries.begin(), entries.end(), [&](const auto& e) { return e.first == *nuisance; });
        if (it == entries.end())
          throw InputError(fmt::format("{}: no impact named {} in {}", infile, *nuisance, name));
        std::cout << "Impact of nuisance " << *nuisance << " on " << poi << " is "
                  << python_repr(it->second * scale) << " unit\n";
        continue;
      }
      if (sort)
        std::stable_sort(entries.begin(), entries.end(),
                         [](const auto& a, const auto& b) { return a.second < b.second; });
      std::cout << "Now at " << poi << "\n";
      std::cout << "Impact of all systematics on " << poi << " (unit)\n";
      for (const auto& [label, value] : entries)
        std::cout << "   " << label << ": " << python_round_str(value * scale) << "\n";
    }
    return 0;
  });
}

}  // namespace rabbit::cli
