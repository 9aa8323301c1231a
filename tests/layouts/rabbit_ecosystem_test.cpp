// Upstream rabbit's own tools read our result files (issue 11; docs/output-format.md): for the
// example and every option set of layout_cases.hpp, rabbit_fit writes its default layout, and one
// Python process (tests/layouts/rabbit_tools.py, in the environment scripts/setup makes from PyPI:
// rabbit-fit without TensorFlow, wums, hist, h5py) runs rabbit.io_tools.get_fitresult,
// rabbit_print_impacts.py and rabbit_print_pulls_and_constraints.py on them, and for the example
// rabbit_plot_pulls_and_impacts.py and rabbit_plot_hists.py headless (and rabbit_plot_hists.py -m on the
// Project and Normalize mappings of the saturated_projection case, rabbit_print_impacts.py -m on the
// process-selecting Ratio of map_ratio_procs_ch0_ch1). What they return and print
// must equal what the same fit wrote in the plain layout (a second run, single-threaded, so that
// the numbers are identical; read by our plain reader, independent of our pickles), and the plots
// must be written.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include "layouts/layout_cases.hpp"
#include "rabbit/cli/reports.hpp"
#include "rabbit/core/python_format.hpp"
#include "rabbit/postfit/result_file.hpp"

namespace fs = std::filesystem;
using rabbit::cli::python_round_str;
using rabbit::io::Json;
using rabbit::result::Hist;
using rabbit::result::ResultReader;

namespace {

fs::path python() {
  const char* env = std::getenv("RABBIT_PYENV");
  return (env ? fs::path(env) : rabbit::test::source_dir() / ".deps" / "pyenv") / "bin" / "python";
}

// Python's number in the report: a float, or "nan"/"inf"/"-inf" as text.
double number(const Json& j) {
  if (j.is_number()) return j.number();
  const std::string& s = j.string();
  return s == "nan" ? NAN : s == "inf" ? INFINITY : -INFINITY;
}

bool same(double a, double b) {
  return a == b || (std::isnan(a) && std::isnan(b));
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) out += (c == '"' || c == '\\') ? std::string("\\") + c : std::string(1, c);
  return out + "\"";
}

// Every hist and scalar of a group, as key paths relative to it (our side of the listing); the
// plain layout keeps `_cpp`'s minimizer_method as an attribute, rabbit's as an entry.
void our_entries(const ResultReader& r, const std::string& path, const std::string& prefix,
                 std::map<std::string, std::string>& out) {
  for (const auto& e : r.members(path)) {
    if (e.container)
      our_entries(r, e.path, prefix + e.key + "/", out);
    else
      out[prefix + e.key] = e.path;
    if (e.container && e.key == "_cpp" && !r.attr_str(e.path, "minimizer_method").empty())
      out[prefix + "_cpp/minimizer_method"] = e.path + "@minimizer_method";
  }
}

void check_entries(const ResultReader& r, const std::string& group, const Json& entries,
                   const std::string& what) {
  std::map<std::string, std::string> ours;
  our_entries(r, group, "", ours);
  std::vector<std::string> theirs;
  for (const auto& [key, value] : entries.object()) theirs.push_back(key);
  std::vector<std::string> our_keys;
  for (const auto& [key, path] : ours) our_keys.push_back(key);
  std::sort(theirs.begin(), theirs.end());
  EXPECT_EQ(theirs, our_keys) << what << ": get_fitresult's entries differ from ours";
  for (const auto& [key, value] : entries.object()) {
    const auto it = ours.find(key);
    if (it == ours.end()) continue;
    const std::string w = what + " " + key;
    if (const Json* s = value.find("scalar")) {
      if (key.find("_cpp/time_") == std::string::npos) {  // timings differ between the two runs
        EXPECT_TRUE(same(number(*s), r.scalar(it->second))) << w;
      }
    } else if (const Json* t = value.find("text")) {
      const auto at = it->second.find('@');
      EXPECT_EQ(t->string(), at == std::string::npos
                                 ? r.strings(it->second).at(0)
                                 : r.attr_str(it->second.substr(0, at), it->second.substr(at + 1)))
          << w;
    } else {
      const Hist h = r.hist(it->second);
      const auto& axes = value.at("axes").array();
      ASSERT_EQ(axes.size(), h.axis_names.size()) << w;
      for (size_t k = 0; k < axes.size(); ++k) {
        EXPECT_EQ(axes[k].at("name").string(), h.axis_names[k]) << w;
        if (const Json* labels = axes[k].find("labels")) {
          // A float category (plain layout) is labelled with numpy's str of its values.
          std::vector<std::string> expected = h.axis_labels[k];
          if (r.layout() == rabbit::result::Layout::plain)
            for (double v : h.axis_values[k]) expected.push_back(rabbit::python_repr(v));
          EXPECT_EQ(labels->strings(), expected) << w;
        }
      }
      EXPECT_EQ(value.at("name").string(), key.substr(key.rfind('/') + 1)) << w;
      EXPECT_EQ(value.at("label").is_null() ? "" : value.at("label").string(), h.label) << w;
      const auto& vals = value.at("values").array();
      ASSERT_EQ(vals.size(), h.values.size()) << w;
      const bool timing = key == "epoch_time";  // seconds: differ between the two runs
      for (size_t i = 0; i < vals.size() && !timing; ++i)
        EXPECT_TRUE(same(number(vals[i]), h.values[i])) << w << " [" << i << "]";
      EXPECT_EQ(value.at("storage").string(), h.variances.empty() ? "Double" : "Weight") << w;
      if (!h.variances.empty()) {
        const auto& vars = value.at("variances").array();
        ASSERT_EQ(vars.size(), h.variances.size()) << w;
        for (size_t i = 0; i < vars.size(); ++i)
          EXPECT_TRUE(same(number(vars[i]), h.variances[i])) << w << " var[" << i << "]";
      }
    }
  }
}

std::vector<std::string> words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// rabbit_print_pulls_and_constraints.py: "label pull +/- constraint (pull prefit +/- constraint prefit)".
void check_pulls(const ResultReader& r, const std::string& group, const std::string& stdout_text,
                 const std::string& what) {
  const Hist parms = r.hist(group + "/parms"), prefit = r.hist(group + "/parms_prefit");
  std::istringstream in(stdout_text);
  std::string line;
  size_t row = 0;
  for (int n = 0; std::getline(in, line); ++n) {
    if (n < 2) continue;  // header and rule
    std::string cleaned;
    for (char c : line) cleaned += (c == '(' || c == ')') ? ' ' : c;
    const auto w = words(cleaned);
    ASSERT_EQ(w.size(), 7u) << what << ": " << line;
    ASSERT_LT(row, parms.values.size()) << what;
    EXPECT_EQ(w[0], parms.axis_labels[0][row]) << what;
    EXPECT_EQ(w[1], python_round_str(parms.values[row])) << what << " " << w[0];
    EXPECT_EQ(w[3], python_round_str(std::sqrt(parms.variances[row]))) << what << " " << w[0];
    EXPECT_EQ(w[4], python_round_str(prefit.values[row])) << what << " " << w[0];
    EXPECT_EQ(w[6], python_round_str(std::sqrt(prefit.variances[row]))) << what << " " << w[0];
    ++row;
  }
  EXPECT_EQ(row, parms.values.size()) << what << ": rows printed";
}

// rabbit_print_impacts.py: per POI "Now at POI", a title, then "   label: value" (and "Total").
void check_impacts(const ResultReader& r, const std::string& group, const std::string& hist_name,
                   const std::string& stdout_text, const std::string& what) {
  const Hist h = r.hist(group + "/" + hist_name), parms = r.hist(group + "/parms");
  const auto& rows = h.axis_labels.at(0);
  const auto& cols = h.axis_labels.at(1);
  std::istringstream in(stdout_text);
  std::string line;
  long row = -1;
  size_t printed = 0;
  while (std::getline(in, line)) {
    if (line.rfind("Now at ", 0) == 0) {
      const auto it = std::find(rows.begin(), rows.end(), line.substr(7));
      ASSERT_NE(it, rows.end()) << what << ": " << line;
      row = it - rows.begin();
      continue;
    }
    if (line.rfind("   ", 0) != 0) continue;
    const auto colon = line.rfind(": ");
    ASSERT_NE(colon, std::string::npos) << what << ": " << line;
    ASSERT_GE(row, 0) << what;
    const std::string label = line.substr(3, colon - 3), value = line.substr(colon + 2);
    double ours = 0;
    if (label == "Total") {
      const auto& names = parms.axis_labels[0];
      const auto p = std::find(names.begin(), names.end(), rows[static_cast<size_t>(row)]) - names.begin();
      ours = std::sqrt(parms.variances.at(static_cast<size_t>(p)));
    } else {
      const auto c = std::find(cols.begin(), cols.end(), label);
      ASSERT_NE(c, cols.end()) << what << ": " << line;
      ours = h.values[static_cast<size_t>(row) * cols.size() + static_cast<size_t>(c - cols.begin())];
      ++printed;
    }
    EXPECT_EQ(value, python_round_str(ours)) << what << " " << rows[static_cast<size_t>(row)] << " " << label;
  }
  EXPECT_EQ(printed, rows.size() * cols.size()) << what << ": impacts printed";
}

bool has_file(const Json& files, const std::string& suffix) {
  for (const auto& f : files.strings())
    if (f.size() >= suffix.size() && f.compare(f.size() - suffix.size(), suffix.size(), suffix) == 0)
      return true;
  return false;
}

// The reference case whose -m Project and -m Normalize mappings (with their saturated tests) are
// also plotted by rabbit_plot_hists.py -m.
const std::string kMappingPlotCase = "saturated_projection";

// rabbit_plot_hists.py -m KEY (postfit and --prefit) wrote its plots, and the chi2/ndf its get_chi2
// reads for their label are ours (rabbit-fit 0.2.5 labels a mapping's plots with its linear chi2).
void check_mapping_plots(const ResultReader& r, const Json& plots, const std::string& name) {
  ASSERT_EQ(plots.object().size(), 2u) << name;
  for (const auto& [key, out] : plots.object()) {
    const std::string w = name + " rabbit_plot_hists.py -m " + key;
    if (!out.at("ok").boolean()) {
      ADD_FAILURE() << w << ":\n" << (out.find("error") ? out.at("error").string() : "");
      continue;
    }
    const std::string suffix =
        "_ch1_" + key.substr(0, key.find(' ')) + "_ch1_" + key.substr(key.rfind(' ') + 1);
    for (const char* stage : {"postfit_", "prefit_"}) {
      bool found = false;
      for (const auto& f : out.at("files").strings())
        found = found || (f.rfind(stage, 0) == 0 && f.find(suffix) != std::string::npos && f.size() > 4 &&
                          f.compare(f.size() - 4, 4, ".png") == 0);
      EXPECT_TRUE(found) << w << " wrote no " << stage << "*" << suffix << "*.png";
    }
    const std::string group = "results/mappings/" + key + "/";
    for (const std::string fittype : {"postfit", "prefit"}) {
      const Json& c = out.at("chi2").at(fittype);
      const std::string tail = fittype == "prefit" ? "_prefit" : "";
      EXPECT_TRUE(same(number(c[0]), r.scalar(group + "chi2" + tail))) << w << " " << fittype;
      EXPECT_EQ(c[1].number(), r.scalar(group + "ndf" + tail)) << w << " " << fittype;
    }
  }
}

// The reference case (a process-selecting Ratio with --computeHistImpacts) on whose mapping
// rabbit_print_impacts.py --globalImpacts -m prints the impacts on every bin.
const std::string kHistImpactsCase = "map_ratio_procs_ch0_ch1";
const char* const kHistImpactsMapping =
    "[\"Ratio\", \"ch0\", \"ch1\", \"sig\", \"bkg\", \"None:None\", \"b:sum\"]";

// rabbit_print_impacts.py --globalImpacts [-u] --scale 1e6 -m KEY: per bin of the mapping's one channel, in C
// order, "Now at {...} with ...", a title, then "   label: value" per impact and "Total" (the bin's σ), each
// value times 1e6 rounded to five decimals.
void check_hist_impacts(const ResultReader& r, const Json& printed, const std::string& name) {
  ASSERT_EQ(printed.object().size(), 1u) << name;
  for (const auto& [key, runs] : printed.object()) {
    const auto channels = r.members("results/mappings/" + key + "/channels");
    ASSERT_EQ(channels.size(), 1u) << name << " " << key;
    const std::string ch = channels[0].path;
    const Hist total = r.hist(ch + "/hist_postfit_inclusive");
    ASSERT_EQ(runs.object().size(), 2u) << name;
    for (const auto& [kind, run] : runs.object()) {
      const std::string w = name + " rabbit_print_impacts.py -m " + key + " (" + kind + ")";
      if (!run.at("ok").boolean()) {
        ADD_FAILURE() << w << " failed:\n" << (run.find("error") ? run.at("error").string() : "");
        continue;
      }
      const Hist h =
          r.hist(ch + "/hist_postfit_inclusive_global_impacts" + (kind == "grouped" ? "_grouped" : ""));
      const auto& labels = h.axis_labels.back();
      std::istringstream in(run.at("stdout").string());
      std::string line;
      long bin = -1;
      size_t impacts = 0, totals = 0;
      while (std::getline(in, line)) {
        if (line.rfind("Now at ", 0) == 0) {
          ++bin;
          continue;
        }
        if (line.rfind("   ", 0) != 0) continue;
        const auto colon = line.rfind(": ");
        ASSERT_NE(colon, std::string::npos) << w << ": " << line;
        ASSERT_GE(bin, 0) << w;
        ASSERT_LT(static_cast<size_t>(bin), total.values.size()) << w;
        const auto b = static_cast<size_t>(bin);
        const std::string label = line.substr(3, colon - 3), value = line.substr(colon + 2);
        double ours = 0;
        if (label == "Total") {
          ours = std::sqrt(total.variances.at(b));
          ++totals;
        } else {
          const auto c = std::find(labels.begin(), labels.end(), label);
          ASSERT_NE(c, labels.end()) << w << ": " << line;
          ours = h.values.at(b * labels.size() + static_cast<size_t>(c - labels.begin()));
          ++impacts;
        }
        EXPECT_EQ(value, python_round_str(ours * 1e6)) << w << " bin " << bin << " " << label;
      }
      EXPECT_EQ(totals, total.values.size()) << w << ": bins printed";
      EXPECT_EQ(impacts, total.values.size() * labels.size()) << w << ": impacts printed";
    }
  }
}

TEST(RabbitEcosystem, UpstreamToolsReadOurResults) {
  const fs::path py = python();
  ASSERT_TRUE(fs::exists(py)) << "upstream rabbit's Python tools are not installed (" << py
                              << " is missing): run scripts/setup, which makes that environment from PyPI "
                                 "(CI runs it); RABBIT_PYENV=DIR points the test at another one";
  const fs::path dir = rabbit::test::scratch_dir("rabbit_ecosystem");
  setenv("OMP_NUM_THREADS", "1", 1);  // the two layouts' runs give the same numbers bit for bit
  std::string manifest = "[";
  std::map<std::string, fs::path> files;  // the plain layout of each case
  for (const auto& c : rabbit::test::layouts::fit_cases()) {
    const fs::path file = dir / c.name / "fitresults.hdf5";
    const auto run = rabbit::test::layouts::run_fit_case(c, file);
    ASSERT_EQ(run.exit_code, 0) << run.output;
    const auto plain =
        rabbit::test::layouts::run_fit_case(c, dir / c.name / "plain.hdf5", "--outputFormat plain");
    ASSERT_EQ(plain.exit_code, 0) << plain.output;
    files[c.name] = dir / c.name / "plain.hdf5";
    std::string results;
    for (const auto& g : ResultReader(file.string()).result_groups())
      results +=
          (results.empty() ? "" : ", ") + (g == "results" ? std::string("null") : json_string(g.substr(8)));
    manifest +=
        std::string(manifest.size() > 1 ? ", " : "") + "{\"name\": " + json_string(c.name) +
        ", \"file\": " + json_string(file.string()) + ", \"results\": [" + results + "], \"plot_dir\": " +
        (c.name == "example" ? json_string((dir / "plots").string()) +
                                   ", \"upstream_file\": " + json_string((dir / "upstream.hdf5").string())
                             : "null") +
        (c.name == kMappingPlotCase
             ? ", \"mapping_plots\": {\"dir\": " + json_string((dir / "mapping_plots").string()) +
                   ", \"mappings\": [[\"Project\", \"ch1\", \"a\"], "
                   "[\"Normalize\", \"ch1\", \"b\"]]}"
             : "") +
        (c.name == kHistImpactsCase ? std::string(", \"hist_impacts\": [") + kHistImpactsMapping + "]" : "") +
        "}";
  }
  std::ofstream(dir / "manifest.json") << manifest << "]";
  const auto run = rabbit::test::run_command(
      "MPLBACKEND=Agg " + rabbit::test::shell_quote(py.string()) + " " +
      rabbit::test::shell_quote(
          (rabbit::test::source_dir() / "tests" / "layouts" / "rabbit_tools.py").string()) +
      " " + rabbit::test::shell_quote((dir / "manifest.json").string()) + " " +
      rabbit::test::shell_quote((dir / "report.json").string()));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const Json report = Json::parse_file((dir / "report.json").string());
  std::cout << "[ rabbit tools ] versions";
  for (const auto& [k, v] : report.at("_versions").object()) std::cout << " " << k << " " << v.string();
  std::cout << "\n";

  // A file that wums' own pickler wrote as upstream's Workspace does: our reader reads it too.
  {
    const Json& upstream = report.at("_upstream_written");
    ASSERT_FALSE(upstream.find("error")) << upstream.at("error").string();
    const ResultReader r((dir / "upstream.hdf5").string());
    EXPECT_EQ(r.layout(), rabbit::result::Layout::rabbit);
    check_entries(r, "results", upstream.at("entries"), "upstream-written file");
    EXPECT_EQ(r.strings("meta/procs"), upstream.at("procs").strings());
    EXPECT_EQ(r.strings("meta/pois"), upstream.at("pois").strings());
    EXPECT_EQ(r.hist("results/nll_scan_sig").axis_values.at(0), (std::vector<double>{-1.5, 0.0, 2.5}));
  }

  for (const auto& [name, file] : files) {
    const ResultReader r(file.string());
    ASSERT_EQ(r.layout(), rabbit::result::Layout::plain);
    const Json& groups = report.at(name).at("groups");
    for (const auto& [key, g] : groups.object()) {
      const std::string group = key.empty() ? "results" : "results_" + key;
      const std::string what = name + " [" + group + "]";
      if (const Json* error = g.find("error")) {
        ADD_FAILURE() << what << ": get_fitresult failed:\n" << error->string();
        continue;
      }
      check_entries(r, group, g.at("entries"), what);
      const Json& meta = g.at("meta");
      EXPECT_EQ(meta.at("procs").strings(), r.strings("meta/procs")) << what;
      auto pois = r.strings("meta/pois");
      for (const auto& n : r.strings("meta/nois")) pois.push_back(n);
      EXPECT_EQ(meta.at("poi_names").strings(), pois) << what;
      EXPECT_EQ(meta.at("args_outputFormat").string(), "rabbit") << what;
      EXPECT_TRUE(g.at("aliases").at("physics_models_is_mappings").boolean()) << what;
      EXPECT_TRUE(g.at("aliases").at("signals_is_pois").boolean()) << what;
      for (const auto& [script, out] : g.at("printed").object()) {
        const std::string w = what + " " + script;
        if (!out.at("ok").boolean()) {
          ADD_FAILURE() << w << " failed:\n" << (out.find("error") ? out.at("error").string() : "");
          continue;
        }
        if (script == "pulls")
          check_pulls(r, group, out.at("stdout").string(), w);
        else
          check_impacts(r, group, script, out.at("stdout").string(), w);
      }
      if (r.exists(group + "/parms")) {
        EXPECT_TRUE(g.at("printed").find("pulls")) << what;
      }
    }
    if (name == kMappingPlotCase) check_mapping_plots(r, report.at(name).at("mapping_plots"), name);
    if (name == kHistImpactsCase) {
      ASSERT_TRUE(report.at(name).find("hist_impacts")) << name;
      check_hist_impacts(r, report.at(name).at("hist_impacts"), name);
    }
    if (name != "example") continue;
    const Json& plots = report.at(name).at("plots");
    for (const auto& [script, out] : plots.object())
      EXPECT_TRUE(out.at("ok").boolean()) << "example " << script << ":\n"
                                          << (out.find("error") ? out.at("error").string() : "");
    auto pois = r.strings("meta/pois");
    for (const auto& n : r.strings("meta/nois")) pois.push_back(n);
    for (const auto& poi : pois) {
      EXPECT_TRUE(has_file(plots.at("pulls_and_impacts").at("files"), "pulls_and_impacts_" + poi + ".html"))
          << poi;
      EXPECT_TRUE(has_file(plots.at("pulls_and_impacts").at("files"), "impacts_grouped_" + poi + ".html"))
          << poi;
    }
    for (const auto& e : r.members("results/mappings/BaseMapping/channels"))
      for (const char* ext : {".png", ".pdf"}) {
        const std::string suffix = "_" + e.key + "_BaseMapping" + ext;
        bool postfit = false, prefit = false;
        // Both runs write into one folder; the listing after the second holds both.
        for (const auto& f : plots.at("hists_prefit").at("files").strings()) {
          const bool match =
              f.size() >= suffix.size() && f.compare(f.size() - suffix.size(), suffix.size(), suffix) == 0;
          postfit = postfit || (match && f.rfind("postfit_", 0) == 0);
          prefit = prefit || (match && f.rfind("prefit_", 0) == 0);
        }
        EXPECT_TRUE(postfit) << "rabbit_plot_hists.py wrote no postfit plot *" << suffix;
        EXPECT_TRUE(prefit) << "rabbit_plot_hists.py --prefit wrote no prefit plot *" << suffix;
      }
  }
}

}  // namespace
