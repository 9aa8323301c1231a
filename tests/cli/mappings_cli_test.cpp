// -m Project and -m Normalize end to end (docs/user-guide.md "Mappings"): the result file has one
// group per mapping key, and its histograms are sums of BaseMapping's (values, covariance, data).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "rabbit/postfit/result_file.hpp"
#include "support/command.hpp"
#include "support/test_paths.hpp"

using rabbit::result::ResultReader;
using rabbit::test::example_tensor;
using rabbit::test::run_rabbit_fit;

// The example's ch1 has axes a (10 bins) × b (5 bins), row-major; it follows ch0's 10 bins.
TEST(Mappings, ProjectAndNormalizeSumBaseMappingsHistograms) {
  const auto dir = rabbit::test::scratch_dir("cli_mappings");
  const auto r =
      run_rabbit_fit(example_tensor() +
                     " -t 0 --unblind --saveHists --computeHistErrors --computeHistCov -m BaseMapping"
                     " -m Project ch1 a -m Normalize ch1 b -m Project ch0_masked -o " +
                     dir.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ResultReader f((dir / "fitresults.hdf5").string());
  const std::string base = "results/mappings/BaseMapping/", proj = "results/mappings/Project ch1 a/",
                    norm = "results/mappings/Normalize ch1 b/";
  const auto b = f.hist(base + "channels/ch1/hist_postfit_inclusive");
  const auto bcov = f.hist(base + "hist_postfit_inclusive_cov");
  const auto bdata = f.hist(base + "channels/ch1/hist_data_obs");
  ASSERT_EQ(b.values.size(), 50u);
  const int64_t N = bcov.shape.at(0), off = 10;

  const auto p = f.hist(proj + "channels/ch1/hist_postfit_inclusive");
  const auto pdata = f.hist(proj + "channels/ch1/hist_data_obs");
  ASSERT_EQ(p.axis_names, std::vector<std::string>{"a"});
  ASSERT_EQ(p.values.size(), 10u);
  for (int64_t a = 0; a < 10; ++a) {
    double sum = 0, var = 0, data = 0;
    for (int64_t j = 0; j < 5; ++j) {
      sum += b.values[a * 5 + j];
      data += bdata.values[a * 5 + j];
      for (int64_t k = 0; k < 5; ++k) var += bcov.values[(off + a * 5 + j) * N + off + a * 5 + k];
    }
    EXPECT_NEAR(p.values[a], sum, 1e-12 * std::abs(sum)) << a;
    EXPECT_NEAR(p.variances[a], var, 1e-9 * var) << a;
    EXPECT_NEAR(pdata.values[a], data, 1e-12 * std::abs(data)) << a;
  }
  EXPECT_TRUE(std::isfinite(f.scalar(proj + "chi2")));
  EXPECT_EQ(f.scalar(proj + "ndf"), 10.0);

  const auto n = f.hist(norm + "channels/ch1/hist_postfit_inclusive");
  ASSERT_EQ(n.axis_names, std::vector<std::string>{"b"});
  double total = 0;
  for (double v : b.values) total += v;
  for (int64_t j = 0; j < 5; ++j) {
    double sum = 0;
    for (int64_t a = 0; a < 10; ++a) sum += b.values[a * 5 + j];
    EXPECT_NEAR(n.values[j], sum / total, 1e-12) << j;
  }
  // The normalised bins sum to one, so V is singular: the chi2 uses its pseudo-inverse, ndf = 5 − 1.
  EXPECT_TRUE(std::isfinite(f.scalar(norm + "chi2")));
  EXPECT_EQ(f.scalar(norm + "ndf"), 4.0);

  // A masked channel's projection has no data and no chi2.
  const std::string masked = "results/mappings/Project ch0_masked/";
  EXPECT_TRUE(f.exists(masked + "channels/ch0_masked/hist_postfit_inclusive"));
  EXPECT_FALSE(f.exists(masked + "channels/ch0_masked/hist_data_obs"));
  EXPECT_FALSE(f.exists(masked + "chi2"));
}

TEST(Mappings, BadArgumentsAreOneLineNamingTheMapping) {
  const auto dir = rabbit::test::scratch_dir("cli_mappings_bad");
  auto r = run_rabbit_fit(example_tensor() + " -t 0 --saveHists -m Project ch1 c -o " + dir.string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("-m Project: unknown axis c of channel ch1\n"), std::string::npos) << r.output;
  r = run_rabbit_fit(example_tensor() + " -t 0 --saveHists -m Normalize ch7 -o " + dir.string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("-m Normalize: unknown channel ch7\n"), std::string::npos) << r.output;
}

// Upstream rabbit's own numbers (commit 948a94a, the map_normalize_ch1_b and map_project_ch1_a
// reference fits of tests/reference/fits on dense.hdf5): Normalize's chi2 needs the
// data's map differentiated at the data, not at the prediction.
TEST(Mappings, ChiSquaresAgreeWithUpstreamOnTheDenseReference) {
  const auto dir = rabbit::test::scratch_dir("cli_mappings_upstream");
  const auto tensor =
      (rabbit::test::source_dir() / "tests" / "reference" / "tensors" / "dense.hdf5").string();
  const auto r = run_rabbit_fit(tensor +
                                " -t 0 --unblind --saveHists --computeHistErrors --computeHistCov"
                                " -m Normalize ch1 b -m Project ch1 a -o " +
                                dir.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ResultReader f((dir / "fitresults.hdf5").string());
  const std::string norm = "results/mappings/Normalize ch1 b/", proj = "results/mappings/Project ch1 a/";
  EXPECT_NEAR(f.scalar(norm + "chi2"), 0.6962914356760854, 1e-7);
  EXPECT_NEAR(f.scalar(norm + "chi2_prefit"), 3.0536788541572273, 1e-7);
  EXPECT_EQ(f.scalar(norm + "ndf"), 4.0);
  EXPECT_NEAR(f.scalar(proj + "chi2"), 12.233437164085498, 1e-6);
  EXPECT_NEAR(f.scalar(proj + "chi2_prefit"), 13.315652342612879, 1e-6);
  const auto n = f.hist(norm + "channels/ch1/hist_postfit_inclusive");
  const std::vector<double> values = {0.01647577474869959, 0.034102769750948905, 0.08247042908093118,
                                      0.36286061698416383, 0.5040904094352567};
  const std::vector<double> variances = {3.0381468350574867e-07, 6.798343889943683e-07,
                                         1.3672481921249333e-06, 4.7931453793153464e-06,
                                         4.091379618531873e-06};
  for (size_t j = 0; j < 5; ++j) {
    EXPECT_NEAR(n.values[j], values[j], 1e-9 * values[j]) << j;
    EXPECT_NEAR(n.variances[j], variances[j], 1e-6 * variances[j]) << j;
  }
}
