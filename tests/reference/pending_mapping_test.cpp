// Upstream rabbit's mapping fits waiting in tests/reference/pending_mappings (see its README): the
// process-selecting Ratio/Asymmetry cases, whose --computeHistImpacts our rabbit_fit refuses
// (src/cli/result_layout_writer.cpp). This test runs them without that option and compares every other
// quantity, to docs/validation.md "Tolerances" (the same engine as reference_fit_test.cpp). Every case
// our rabbit_fit accepts in full is in ../fits/ instead.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "rabbit/compare/compare.hpp"
#include "rabbit/io/json.hpp"
#include "support/command.hpp"
#include "support/test_paths.hpp"

namespace fs = std::filesystem;

namespace {

fs::path reference_dir() {
  return rabbit::test::source_dir() / "tests" / "reference";
}

class PendingMappingFit : public ::testing::TestWithParam<std::string> {};

TEST_P(PendingMappingFit, AgreesWithUpstreamBesidesHistogramImpacts) {
  const std::string name = GetParam();
  const auto ref =
      rabbit::io::Json::parse_file((reference_dir() / "pending_mappings" / (name + ".json")).string());
  const fs::path out = rabbit::test::scratch_dir("pending_" + name);
  std::string args =
      rabbit::test::shell_quote((reference_dir() / "tensors" / ref.at("tensor").string()).string());
  for (const auto& a : ref.at("args").strings())
    if (a != "--computeHistImpacts") args += " " + rabbit::test::shell_quote(a);
  args += " -o " + rabbit::test::shell_quote(out.string()) + " --outname fit.hdf5";
  const auto run = rabbit::test::run_rabbit_fit(args);
  ASSERT_EQ(run.exit_code, 0) << args << "\n" << run.output;

  rabbit::compare::CompareOptions options;
  options.b_may_hold_more = true;
  options.name_a = "rabbit";
  options.name_b = "ours";
  const auto rabbit = rabbit::compare::reference_json_tree(ref.at("results"), name + " (rabbit)");
  const auto ours = rabbit::compare::open_result_file((out / "fit.hdf5").string());
  const auto report = rabbit::compare::compare_results(*rabbit, *ours, options);
  size_t mapping_quantities = 0;
  for (const auto& r : report.results) {
    if (r.quantity.find("global_impacts") != std::string::npos) continue;  // not asked for
    if (r.quantity.rfind("mappings/", 0) == 0) ++mapping_quantities;
    EXPECT_TRUE(r.ok()) << name << ": " << rabbit::compare::format_result(r);
  }
  EXPECT_GT(mapping_quantities, 0u) << name << ": no mapping quantity compared";
}

INSTANTIATE_TEST_SUITE_P(Pending, PendingMappingFit,
                         ::testing::Values("map_ratio_procs", "map_ratio_procs_ch0_ch1",
                                           "map_asymmetry_procs_full"));

}  // namespace
