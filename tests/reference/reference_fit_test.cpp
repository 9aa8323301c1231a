// Regression against upstream rabbit's own numbers: every tests/reference/fits/CASE.json holds what
// rabbit_fit.py (recorded commit) wrote for one run on a tensor of tests/reference/tensors/
// (tools/make_reference.py made them; the tensors come from our rabbit_make_tensor). Each case runs
// our rabbit_fit with the same arguments on the same tensor and compares with the shared engine of
// tests/support/fit_comparison.hpp (what is compared and the tolerances of docs/validation.md "Tolerances"
// are listed there). A new case is a new fits/CASE.json (and its tensor): the cases are the files of that
// directory.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "rabbit/io/json.hpp"
#include "rabbit/postfit/result_file.hpp"
#include "support/fit_comparison.hpp"
#include "support/test_paths.hpp"

namespace fs = std::filesystem;
using rabbit::io::Json;

namespace {

fs::path reference_dir() {
  return rabbit::test::source_dir() / "tests" / "reference";
}

std::vector<std::string> case_names() {
  std::vector<std::string> out;
  const fs::path dir = reference_dir() / "fits";
  if (fs::exists(dir))
    for (const auto& e : fs::directory_iterator(dir))
      if (e.path().extension() == ".json") out.push_back(e.path().stem().string());
  std::sort(out.begin(), out.end());
  return out;
}

// The known deviations from upstream (tests/support/fit_comparison.cpp, each measured and explained
// in docs/validation.md) get their looser relative tolerance; everything else is held to
// docs/validation.md "Tolerances".
rabbit::test::FitTolerances reference_tolerances() {
  rabbit::test::FitTolerances t;
  t.known_deviations = rabbit::test::reference_known_deviations();
  return t;
}

// Every case with each of the three minimizers: all must reach upstream's numbers, and every fit
// must end certified, EDM <= 1e-15 max(1, |NLL|) (docs/minimizers.md "Convergence").
class ReferenceFit : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {};

TEST_P(ReferenceFit, AgreesWithUpstreamRabbit) {
  const auto& [name, method] = GetParam();
  const Json ref = Json::parse_file((reference_dir() / "fits" / (name + ".json")).string());
  const auto run = rabbit::test::run_reference_case(
      ref, reference_dir() / "tensors", rabbit::test::scratch_dir("reference_" + name + "_" + method),
      "--minimizerMethod " + method);
  ASSERT_EQ(run.exit_code, 0) << run.command << "\n" << run.output;
  ASSERT_TRUE(fs::exists(run.result_file)) << run.command << "\n" << run.output;

  const auto summary = rabbit::test::compare_fit_result(name, ref.at("results"), run.result_file.string(),
                                                        reference_tolerances());
  // Largest deviations per quantity (relative / absolute), for docs/validation.md.
  std::cout << "[ reference ] " << name << " " << method << rabbit::test::format_summary(summary) << "\n";

  // --forceLinear's one Newton step is no minimum: nothing to certify (docs/validation.md "Cases").
  const auto args = ref.at("args").strings();
  if (std::find(args.begin(), args.end(), "--forceLinear") != args.end()) return;
  const rabbit::result::ResultReader file(run.result_file.string());
  for (const auto& group : file.result_groups()) {
    if (!file.exists(group + "/_cpp/converged")) continue;  // not fitted (Asimov at its own minimum, --noFit)
    const double nll = file.scalar(group + "/nllvalreduced");
    EXPECT_EQ(file.scalar(group + "/_cpp/converged"), 1.0) << name << " " << method << " " << group;
    EXPECT_LE(file.scalar(group + "/_cpp/edm"), 1e-15 * std::max(1.0, std::abs(nll))) << name << " " << group;
    EXPECT_LE(file.scalar(group + "/edmval"), 1e-15 * std::max(1.0, std::abs(nll))) << name << " " << group;
  }
}

std::string case_test_name(const ::testing::TestParamInfo<std::tuple<std::string, std::string>>& info) {
  std::string s = std::get<0>(info.param) + "_" + std::get<1>(info.param);
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
}

INSTANTIATE_TEST_SUITE_P(Fits, ReferenceFit,
                         ::testing::Combine(::testing::ValuesIn(case_names()),
                                            ::testing::Values("trust-krylov", "trust-ncg", "trust-exact")),
                         case_test_name);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(ReferenceFit);

// The committed references must be there: an empty directory would silently test nothing.
TEST(ReferenceFits, CasesArePresent) {
  EXPECT_GE(case_names().size(), 10u) << (reference_dir() / "fits");
  for (const auto& name : case_names()) {
    const Json ref = Json::parse_file((reference_dir() / "fits" / (name + ".json")).string());
    EXPECT_FALSE(ref.at("results").object().empty()) << name;
    EXPECT_EQ(ref.at("rabbit_commit").string().size(), 40u) << name;
  }
}

}  // namespace
