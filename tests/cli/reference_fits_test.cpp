// Regression against rabbit's own results in ../shared/ref (fits/NAME__CASE.json and their
// tensors, see its README): rabbit_fit is run with the recorded arguments on the recorded tensor and
// checked with the same engine and tolerances as test_reference (tests/support/fit_comparison.hpp).
// Skips with a message while no reference is present.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "support/fit_comparison.hpp"
#include "rabbit/io/json.hpp"
#include "support/test_paths.hpp"

namespace fs = std::filesystem;
using rabbit::io::Json;

TEST(ReferenceFits, AgreeWithRabbit) {
  const fs::path ref = rabbit::test::shared_dir() / "ref";
  std::vector<fs::path> cases;
  if (fs::exists(ref / "fits"))
    for (const auto& e : fs::directory_iterator(ref / "fits"))
      if (e.path().extension() == ".json") cases.push_back(e.path());
  if (cases.empty()) GTEST_SKIP() << "no reference fits in " << (ref / "fits") << " yet (see ../shared/ref/README.md)";
  std::sort(cases.begin(), cases.end());
  const auto dir = rabbit::test::scratch_dir("reference_fits");
  for (const auto& c : cases) {
    SCOPED_TRACE(c.filename().string());
    const Json j = Json::parse_file(c.string());
    const auto run = rabbit::test::run_reference_case(j, ref / "tensors", dir / c.stem());
    if (run.exit_code != 0) {
      // Options this release refuses are reported as such, not as numerical disagreement.
      if (run.output.find("not implemented yet") != std::string::npos) {
        std::cout << "[ reference ] " << c.filename().string() << ": skipped, " << run.output;
        continue;
      }
      ADD_FAILURE() << "rabbit_fit failed: " << run.command << "\n" << run.output;
      continue;
    }
    const auto summary = rabbit::test::compare_fit_result(c.stem().string(), j.at("results"),
                                                          run.result_file.string(), rabbit::test::FitTolerances{});
    std::cout << "[ reference ] " << c.stem().string() << rabbit::test::format_summary(summary) << "\n";
  }
}
