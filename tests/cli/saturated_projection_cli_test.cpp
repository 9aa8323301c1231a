// --computeSaturatedProjectionTests end to end (docs/output-format.md "Saturated projection tests"):
// the keys in the plain layout (rabbit's layout against upstream's numbers is tests/reference's
// saturated_projection case), the fit's data reaching the saturated fit (an Asimov fit has nothing
// left to saturate, a toy's saturated fit nests its nominal one), and the one-line refusals.
#include <gtest/gtest.h>

#include <string>

#include "rabbit/postfit/result_file.hpp"
#include "support/command.hpp"
#include "support/test_paths.hpp"

using rabbit::result::ResultReader;
using rabbit::test::example_tensor;

namespace {

// The example's ch1 has axes a (10 bins) × b (5 bins); ch0_masked is masked.
TEST(SaturatedProjectionTests, WrittenPerProjectMappingForEveryFit) {
  const auto dir = rabbit::test::scratch_dir("cli_saturated_projection");
  const auto r =
      rabbit::test::run_rabbit_fit(example_tensor() +
                                   " -t -1 0 1 --unblind --saveHists --computeSaturatedProjectionTests"
                                   " -m Project ch1 b a -m Normalize ch1 b --outputFormat plain -o " +
                                   dir.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("Saturated chi2:"), std::string::npos) << r.output;
  ResultReader f((dir / "fitresults.hdf5").string());
  for (const std::string group : {"results_asimov", "results", "results_toy1"}) {
    const std::string proj = group + "/mappings/Project ch1 b a/",
                      norm = group + "/mappings/Normalize ch1 b/";
    EXPECT_EQ(f.scalar(proj + "ndf_saturated"), 50.0) << group;
    const double chi2 = f.scalar(proj + "chi2_saturated");
    // The nominal model is the saturated one at normalisations 1: the saturated minimum is lower.
    EXPECT_GE(chi2, -1e-9) << group;
    EXPECT_LE(f.scalar(proj + "edmval_saturated"), 1e-12) << group;
    EXPECT_FALSE(f.exists(norm + "chi2_saturated")) << group;
    if (group == "results_asimov") {
      // The Asimov data are the nominal expectation: nothing left for the saturated fit to gain.
      EXPECT_NEAR(chi2, 0.0, 1e-8);
    } else {
      EXPECT_GT(chi2, 1.0) << group;
    }
  }
  EXPECT_NE(f.scalar("results/mappings/Project ch1 b a/chi2_saturated"),
            f.scalar("results_toy1/mappings/Project ch1 b a/chi2_saturated"));
}

TEST(SaturatedProjectionTests, RefusedWhereItCannotRunInOneLine) {
  const auto dir = rabbit::test::scratch_dir("cli_saturated_projection_refused");
  const std::string base = example_tensor() + " -t 0 --computeSaturatedProjectionTests -o " + dir.string();
  const std::string needs =
      "rabbit_fit: error: --computeSaturatedProjectionTests needs --saveHists, a -m Project mapping and a "
      "fit "
      "(not --prefitOnly)\n";
  struct Case {
    std::string args, message;
  };
  const Case cases[] = {
      {" -m Project ch1 a", needs},
      {" --saveHists -m Normalize ch1 b", needs},
      {" --saveHists --prefitOnly -m Project ch1 a", needs},
      {" --saveHists -m Project ch0_masked x",
       "rabbit_fit: error: --computeSaturatedProjectionTests: -m Project ch0_masked x: channel ch0_masked is "
       "masked (it has no data to saturate)\n"},
      {" --saveHists -m Project ch1",
       "rabbit_fit: error: --computeSaturatedProjectionTests: -m Project ch1: a projection without kept axes "
       "has "
       "no saturated test in rabbit\n"},
      {" --saveHists -m Project ch1 a --allowNegativeParam",
       "rabbit_fit: error: --computeSaturatedProjectionTests cannot be combined with --allowNegativeParam "
       "(rabbit's composite of the param model and the saturated model refuses POIs that enter linearly "
       "beside squared ones)\n"},
  };
  for (const auto& c : cases) {
    const auto r = rabbit::test::run_rabbit_fit_captured(base + c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.output;
    EXPECT_NE(r.output.find(c.message), std::string::npos) << c.args << "\n" << r.output;
    EXPECT_FALSE(std::filesystem::exists(dir / "fitresults.hdf5")) << c.args;
  }
}

}  // namespace
