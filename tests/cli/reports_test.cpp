// The text reports (docs/user-guide.md "Reports"): Python's number format and the report layouts.
#include "rabbit/cli/reports.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>

#include "support/command.hpp"
#include "support/test_paths.hpp"

using rabbit::cli::python_repr;
using rabbit::cli::python_round_str;

namespace {
std::string run(const std::string& cmd, int* code) {
  const rabbit::test::CommandResult r = rabbit::test::run_command(cmd);
  *code = r.exit_code;
  return r.output;
}
}  // namespace

TEST(Reports, PythonNumberFormat) {
  EXPECT_EQ(python_round_str(0.990431234), "0.99043");
  EXPECT_EQ(python_round_str(-0.518259), "-0.51826");
  EXPECT_EQ(python_round_str(0.89770001), "0.8977");
  EXPECT_EQ(python_round_str(123456.123456), "123456.12346");
  EXPECT_EQ(python_round_str(1.0), "1.0");
  EXPECT_EQ(python_round_str(0.0), "0.0");
  EXPECT_EQ(python_round_str(-0.000001), "-0.0");
  EXPECT_EQ(python_round_str(0.00001), "1e-05");
  EXPECT_EQ(python_round_str(0.000012), "1e-05");
  EXPECT_EQ(python_round_str(0.0001), "0.0001");
  EXPECT_EQ(python_round_str(NAN), "nan");
  EXPECT_EQ(python_round_str(-INFINITY), "-inf");
  EXPECT_EQ(python_repr(1.2e-05), "1.2e-05");
  EXPECT_EQ(python_repr(1e16), "1e+16");
  EXPECT_EQ(python_repr(1234567890123456.0), "1234567890123456.0");
  EXPECT_EQ(python_repr(7.600559610564e-30), "7.600559610564e-30");
  EXPECT_EQ(python_repr(0.1 + 0.2), "0.30000000000000004");
}

TEST(Reports, PullsAndImpactsOnAFit) {
  auto dir = rabbit::test::scratch_dir("reports");
  const auto bin = rabbit::test::binary_dir();
  const std::string tensor = (rabbit::test::source_dir() / "examples" / "example_tensor.hdf5").string();
  int code = 0;
  run((bin / "rabbit_fit").string() + " " + tensor + " -t -1 --doImpacts --globalImpacts -o " + dir.string(),
      &code);
  ASSERT_EQ(code, 0);
  const std::string file = (dir / "fitresults.hdf5").string();
  std::string pulls = run((bin / "rabbit_print_pulls_and_constraints").string() + " " + file, &code);
  ASSERT_EQ(code, 0) << pulls;
  // Header, 88 dashes, then one row per parameter; the Asimov POI sits at its default 1.0.
  EXPECT_EQ(
      pulls.rfind(
          "   Parameter                        pull +/- constraint (pull prefit +/- constraint prefit)\n"
          "   " +
              std::string(88, '-') + "\n",
          0),
      0u)
      << pulls;
  EXPECT_NE(pulls.find("   sig" + std::string(27 + 1 + 3, ' ') + "1.0 +/-    0.01802 ("), std::string::npos)
      << pulls;
  EXPECT_NE(pulls.find("(        1.0 +/-               0.0)"), std::string::npos);
  std::string nopre =
      run((bin / "rabbit_print_pulls_and_constraints").string() + " --noPrefit " + file, &code);
  EXPECT_NE(nopre.find("   " + std::string(52, '-') + "\n"), std::string::npos) << nopre;

  std::string imp = run((bin / "rabbit_print_impacts").string() + " " + file, &code);
  ASSERT_EQ(code, 0) << imp;
  EXPECT_EQ(imp.rfind("Now at sig\nImpact of all systematics on sig (unit)\n", 0), 0u) << imp;
  EXPECT_NE(imp.find("   stat: "), std::string::npos);
  EXPECT_NE(imp.find("   Total: "), std::string::npos);
  std::string glob =
      run((bin / "rabbit_print_impacts").string() + " --impactType global -u -n norm " + file, &code);
  EXPECT_EQ(code, 0);
  EXPECT_NE(glob.find("Impact of nuisance norm on sig is "), std::string::npos) << glob;
  std::string bad =
      run((bin / "rabbit_print_impacts").string() + " --impactType gaussian_global " + file, &code);
  EXPECT_EQ(code, 3);
  EXPECT_NE(bad.find("gaussian_global_impacts_grouped"), std::string::npos) << bad;
}

TEST(Reports, AsymmetricConstraintsFromContours) {
  auto dir = rabbit::test::scratch_dir("reports_asym");
  const auto bin = rabbit::test::binary_dir();
  const std::string tensor = (rabbit::test::source_dir() / "examples" / "example_tensor.hdf5").string();
  int code = 0;
  run((bin / "rabbit_fit").string() + " " + tensor + " -t -1 --contourScan --contourLevels 1 -o " +
          dir.string(),
      &code);
  ASSERT_EQ(code, 0);
  const std::string file = (dir / "fitresults.hdf5").string();
  std::string out =
      run((bin / "rabbit_print_pulls_and_constraints").string() + " --asym --noPrefit " + file, &code);
  ASSERT_EQ(code, 0) << out;
  EXPECT_EQ(
      out.rfind("   Parameter                        pull +/- constraint +         up -       down\n", 0), 0u)
      << out;
  // The level-1 contour of the POI is close to ±sigma (0.018 on this tensor), up positive, down negative.
  auto row = out.substr(out.find("   sig "));
  row = row.substr(0, row.find('\n'));
  double pull = 0, con = 0, up = 0, down = 0;
  char name[64];
  ASSERT_EQ(std::sscanf(row.c_str(), " %63s %lf +/- %lf + %lf - %lf", name, &pull, &con, &up, &down), 5)
      << row;
  EXPECT_GT(up, 0.9 * con);
  EXPECT_LT(up, 1.1 * con);
  EXPECT_LT(down, -0.9 * con);
  EXPECT_GT(down, -1.1 * con);
}
