// Regression of rabbit_limit against upstream rabbit_limit.py: every tests/reference/limits/CASE.json
// holds what rabbit_limit.py (recorded commit) wrote for one run on a tensor of tests/reference/tensors/
// (tools/make_limits_reference.py made them). Each case runs our rabbit_limit with the same arguments
// and compares every limit histogram, with the tolerances of docs/validation.md "Asymptotic limits".
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "rabbit/io/json.hpp"
#include "rabbit/postfit/result_file.hpp"
#include "support/command.hpp"
#include "support/test_paths.hpp"

namespace fs = std::filesystem;
using rabbit::io::Json;

namespace {

fs::path reference_dir() {
  return rabbit::test::source_dir() / "tests" / "reference";
}

std::vector<std::string> limit_case_names() {
  std::vector<std::string> out;
  const fs::path dir = reference_dir() / "limits";
  if (fs::exists(dir))
    for (const auto& e : fs::directory_iterator(dir))
      if (e.path().extension() == ".json") out.push_back(e.path().stem().string());
  std::sort(out.begin(), out.end());
  return out;
}

void flatten(const Json& j, std::vector<double>& out) {
  if (j.is_array()) {
    for (const auto& v : j.array()) flatten(v, out);
  } else {
    out.push_back(j.number());
  }
}

// docs/validation.md "Asymptotic limits": every limit to 1e-6 relative (floor 1e-9), the project's
// parameter tolerance; the roots behind them (scipy's root / trust-constr upstream, bisection and our
// contour search here) are solved far tighter than that.
double allowed_deviation(double expected) {
  return std::max(1e-6 * std::abs(expected), 1e-9);
}

class ReferenceLimit : public ::testing::TestWithParam<std::string> {};

TEST_P(ReferenceLimit, AgreesWithUpstreamRabbitLimit) {
  const std::string name = GetParam();
  const Json ref = Json::parse_file((reference_dir() / "limits" / (name + ".json")).string());
  const fs::path out = rabbit::test::scratch_dir("reference_limit_" + name);
  std::string cmd =
      rabbit::test::shell_quote((rabbit::test::binary_dir() / "rabbit_limit").string()) + " " +
      rabbit::test::shell_quote((reference_dir() / "tensors" / ref.at("tensor").string()).string());
  for (const auto& a : ref.at("args").strings()) cmd += " " + rabbit::test::shell_quote(a);
  cmd += " -o " + rabbit::test::shell_quote(out.string()) + " --outname limits.hdf5";
  const auto r = rabbit::test::run_command(cmd);
  ASSERT_EQ(r.exit_code, 0) << cmd << "\n" << r.output;

  const rabbit::result::ResultReader file((out / "limits.hdf5").string());
  int compared = 0;
  for (const auto& [group, hists] : ref.at("results").object()) {
    const std::string key = group == "data_obs" ? "results" : "results_" + group;
    for (const auto& [hist_name, h] : hists.object()) {
      if (hist_name.find("asymptoticLimits") == std::string::npos) continue;
      ASSERT_TRUE(file.exists(key + "/" + hist_name)) << name << ": " << key << "/" << hist_name;
      const auto ours = file.hist(key + "/" + hist_name);
      std::vector<double> expected;
      flatten(h.at("values"), expected);
      ASSERT_EQ(ours.values.size(), expected.size()) << name << " " << hist_name;
      const auto& axes = h.at("axes").array();
      ASSERT_EQ(ours.axis_names.size(), axes.size()) << name << " " << hist_name;
      for (size_t a = 0; a < axes.size(); ++a) {
        EXPECT_EQ(ours.axis_names[a], axes[a].at("name").string()) << name << " " << hist_name;
        EXPECT_EQ(ours.axis_labels[a], axes[a].at("labels").strings()) << name << " " << hist_name;
      }
      // Toys come from TensorFlow's random stream upstream and from ours here: their groups are
      // compared by layout, and a limit is finite exactly where upstream's is (docs/validation.md
      // "Asymptotic limits"); RabbitLimitToys checks them for determinism.
      const bool toy = group.rfind("toy", 0) == 0;
      for (size_t i = 0; i < expected.size(); ++i) {
        const std::string where = name + " " + key + "/" + hist_name + " entry " + std::to_string(i);
        if (std::isnan(expected[i]) || toy) {
          EXPECT_EQ(std::isfinite(ours.values[i]), std::isfinite(expected[i])) << where;
        } else {
          EXPECT_NEAR(ours.values[i], expected[i], allowed_deviation(expected[i])) << where;
          ++compared;
        }
      }
    }
  }
  EXPECT_GT(compared, 0) << name;
}

INSTANTIATE_TEST_SUITE_P(Limits, ReferenceLimit, ::testing::ValuesIn(limit_case_names()));
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(ReferenceLimit);

TEST(ReferenceLimits, CasesArePresent) {
  EXPECT_GE(limit_case_names().size(), 1u);
}

// Bad arguments: one line on stderr naming the option (at -v 1, no log lines), a non-zero exit, no
// result file.
struct BadLimitArgs {
  std::string args, expected;
};

class RabbitLimitBadArguments : public ::testing::TestWithParam<BadLimitArgs> {};

TEST_P(RabbitLimitBadArguments, OneLineError) {
  const auto& c = GetParam();
  const fs::path out = rabbit::test::scratch_dir("limit_bad_args");
  // Only stderr is read (run_command appends 2>&1 to the whole group).
  const std::string cmd =
      "( " + rabbit::test::shell_quote((rabbit::test::binary_dir() / "rabbit_limit").string()) + " " +
      rabbit::test::shell_quote((reference_dir() / "tensors" / "dense.hdf5").string()) + " " + c.args +
      " -o " + rabbit::test::shell_quote(out.string()) + " -v 1 2>&1 >/dev/null )";
  const auto r = rabbit::test::run_command(cmd);
  EXPECT_NE(r.exit_code, 0) << cmd;
  std::string text = r.output;
  while (!text.empty() && text.back() == '\n') text.pop_back();
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 0) << text;
  EXPECT_NE(text.find("rabbit_limit: error: " + c.expected), std::string::npos) << text;
  EXPECT_FALSE(fs::exists(out / "limits.hdf5"));
}

INSTANTIATE_TEST_SUITE_P(
    Limits, RabbitLimitBadArguments,
    ::testing::Values(
        BadLimitArgs{"", "--asymptoticLimits: no parameter given"},
        BadLimitArgs{"--asymptoticLimits nope", "--asymptoticLimits: unknown parameter 'nope'"},
        BadLimitArgs{"--asymptoticLimits sig --levels 0.7", "--levels: '0.7' is not a CLs level"},
        BadLimitArgs{"--asymptoticLimits sig --levels x", "--levels: 'x' is not a CLs level"},
        BadLimitArgs{"--asymptoticLimits sig --modes exact", "--modes: invalid choice 'exact'"},
        BadLimitArgs{"--asymptoticLimits sig -m Project ch0",
                     "-m/--mapping: a limit on a mapping is computed with --modes gaussian only"},
        BadLimitArgs{"--asymptoticLimits sig -m Nope --modes gaussian", "mapping Nope is not implemented"},
        BadLimitArgs{"--asymptoticLimits sig --pseudoData nope",
                     "--pseudoData: unknown pseudodata set 'nope'"},
        BadLimitArgs{"--asymptoticLimits sig --saveHists",
                     "--saveHists: an option of rabbit_fit, not of rabbit_limit"},
        BadLimitArgs{"--asymptoticLimits sig --doImpacts", "--doImpacts: an option of rabbit_fit"},
        BadLimitArgs{"--asymptoticLimits sig --scan", "--scan: an option of rabbit_fit"},
        BadLimitArgs{"--asymptoticLimits sig --noFit", "--noFit: an option of rabbit_fit"},
        BadLimitArgs{"--asymptoticLimits sig --noHessian", "--noHessian: rabbit_limit needs the covariance"},
        BadLimitArgs{"--asymptoticLimits sig --forceLinear", "--forceLinear: not supported by rabbit_limit"},
        BadLimitArgs{"--asymptoticLimits sig --compositeMapping -m Project ch0 --modes gaussian",
                     "--compositeMapping: not used by rabbit_limit"},
        BadLimitArgs{"--asymptoticLimits sig -r SVD Select ch0",
                     "-r/--regularization: not used by rabbit_limit"},
        BadLimitArgs{"--asymptoticLimits sig --paramModel Nope", "--paramModel: unknown param model 'Nope'"},
        BadLimitArgs{"--asymptoticLimits sig --nDevices 0", "argument --nDevices: must be >= 1"},
        BadLimitArgs{"--asymptoticLimits", "--asymptoticLimits: expected at least one argument"}));

}  // namespace

namespace {

// Toys (-t N): each toy's limits are a function of --seed alone (our own random stream, docs/user-guide.md
// "Toys"); another seed gives other toys, and the Asimov and data groups do not depend on the toys.
rabbit::result::ResultReader run_limit_toys(const std::string& tag, const std::string& args) {
  const fs::path out = rabbit::test::scratch_dir("limit_toys_" + tag);
  const std::string cmd = rabbit::test::shell_quote((rabbit::test::binary_dir() / "rabbit_limit").string()) +
                          " " +
                          rabbit::test::shell_quote((reference_dir() / "tensors" / "dense.hdf5").string()) +
                          " --unblind --asymptoticLimits sig --allowNegativeParam --modes gaussian -v 1 " +
                          args + " -o " + rabbit::test::shell_quote(out.string()) + " --outname limits.hdf5";
  const auto r = rabbit::test::run_command(cmd);
  EXPECT_EQ(r.exit_code, 0) << cmd << "\n" << r.output;
  return rabbit::result::ResultReader((out / "limits.hdf5").string());
}

std::vector<double> limits_of(const rabbit::result::ResultReader& f, const std::string& group) {
  std::vector<double> v = f.hist(group + "/gaussian_asymptoticLimits_expected").values;
  const auto obs = f.hist(group + "/gaussian_asymptoticLimits_observed").values;
  v.insert(v.end(), obs.begin(), obs.end());
  return v;
}

TEST(RabbitLimitToys, DeterministicForSeedAndIndependentOfOtherFits) {
  const auto a = run_limit_toys("a", "-t 0 2 --seed 7");
  const auto b = run_limit_toys("b", "-t 2 --seed 7");
  const auto c = run_limit_toys("c", "-t 2 --seed 8");
  for (const std::string toy : {"results_toy1", "results_toy2"}) {
    const auto la = limits_of(a, toy), lb = limits_of(b, toy), lc = limits_of(c, toy);
    ASSERT_EQ(la.size(), 6u) << toy;
    for (double v : la) EXPECT_TRUE(std::isfinite(v)) << toy;
    EXPECT_EQ(la, lb) << toy << ": the same seed gives the same toy";
    // The observed limit is the fit to the data set for every toy (docs/differences-from-rabbit.md
    // "rabbit_limit"); the expected ones follow the toy.
    EXPECT_NE(std::vector<double>(la.begin(), la.begin() + 5),
              std::vector<double>(lc.begin(), lc.begin() + 5))
        << toy << ": another seed gives another toy";
  }
  EXPECT_NE(limits_of(a, "results_toy1"), limits_of(a, "results_toy2"));
  EXPECT_TRUE(a.exists("results/gaussian_asymptoticLimits_expected"));
  EXPECT_FALSE(b.exists("results/gaussian_asymptoticLimits_expected"));
}

}  // namespace
