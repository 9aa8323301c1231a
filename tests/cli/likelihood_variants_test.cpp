// Every data likelihood and BB treatment through the whole run (Poisson / chi2 / covariance, BB
// types and modes, dense / sparse storage, log_normal / normal, symmetric / asymmetric): Asimov at
// the defaults, converged fits, global impacts that add up to the variance, histogram covariances
// whose diagonal is the variance, per-process sums (docs/likelihood.md, docs/output-format.md).
// The first variant runs the executable, the others the same program in this process.
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "rabbit/io/tensor_writer.hpp"
#include "rabbit/postfit/result_file.hpp"
#include "support/command.hpp"
#include "support/error_measures.hpp"
#include "support/test_paths.hpp"

namespace fs = std::filesystem;
using rabbit::result::ResultReader;
using rabbit::test::example_tensor;
using rabbit::test::relative_error;
using rabbit::test::run_rabbit_fit;
using rabbit::test::run_rabbit_fit_captured;
using rabbit::test::scratch_dir;

TEST(RabbitFit, LikelihoodVariantsRun) {
  auto dir = scratch_dir("cli_variants");
  // Poisson / chi2 / covariance, BB types and modes, dense/sparse, log_normal/normal, sym/asym.
  struct Variant {
    std::string name;
    bool sparse;
    rabbit::SystematicType type;
    bool asym;
    bool covariance;
    std::string args;
  };
  const std::vector<Variant> variants = {
      {"poisson_gamma_lite", false, rabbit::SystematicType::log_normal, true, false, ""},
      {"poisson_gamma_full", false, rabbit::SystematicType::log_normal, true, false,
       "--binByBinStatMode full --binByBinStatType gamma"},
      {"poisson_mult_full", true, rabbit::SystematicType::log_normal, true, false, "--binByBinStatMode full"},
      {"poisson_additive", false, rabbit::SystematicType::log_normal, false, false,
       "--binByBinStatType normal-additive"},
      {"chisq_normal", false, rabbit::SystematicType::normal, false, false,
       "--chisqFit --binByBinStatType normal-multiplicative"},
      {"covariance", false, rabbit::SystematicType::log_normal, false, true, "--covarianceFit"},
      {"sparse_nobb", true, rabbit::SystematicType::log_normal, true, false, "--noBinByBinStat"},
  };
  for (const auto& v : variants) {
    rabbit::TensorWriter w(v.type);
    w.add_channel("ch0", {rabbit::axis::regular(5, 0, 5, "x")});
    w.add_channel("ch1_masked", {rabbit::axis::regular(2, 0, 2, "y")}, true);
    w.add_data("ch0", {60, 70, 85, 70, 55});
    w.add_process("ch0", "sig", {10, 20, 30, 20, 10}, true, std::vector<double>{2, 4, 6, 4, 2});
    w.add_process("ch0", "bkg", {50, 50, 50, 50, 50}, false, std::vector<double>{10, 12, 14, 12, 10});
    w.add_process("ch1_masked", "sig", {5, 5}, true);
    w.add_process("ch1_masked", "bkg", {3, 3}, false);
    if (v.asym)
      w.add_norm_systematic("bkg_norm", {"bkg"}, "ch0", 1.1, 0.95);
    else
      w.add_norm_systematic("bkg_norm", {"bkg"}, "ch0", {1.1});
    w.add_systematic("tilt", "bkg", "ch0", std::vector<double>{52, 51, 50, 49, 48});
    if (v.covariance) {
      Eigen::MatrixXd cov = Eigen::MatrixXd::Zero(5, 5);
      for (int i = 0; i < 5; ++i) cov(i, i) = 60.0 + 5 * i;
      cov(0, 1) = cov(1, 0) = 10.0;
      w.add_data_covariance(cov);
    }
    rabbit::WriteOptions wo;
    wo.sparse = v.sparse;
    const std::string path = (dir / (v.name + ".hdf5")).string();
    w.write(path, wo);
    // The first variant runs the executable, the others run in this process.
    const auto run = &v == &variants.front() ? run_rabbit_fit : run_rabbit_fit_captured;
    auto r = run(path +
                 " -t -1 0 --unblind --doImpacts --globalImpacts --saveHists --saveHistsPerProcess "
                 "--computeHistErrors --computeHistErrorsPerProcess --computeHistCov --computeVariations "
                 "--fullNll -p " +
                 v.name + " -o " + dir.string() + " " + v.args);
    ASSERT_EQ(r.exit_code, 0) << v.name << "\n" << r.output;
    ResultReader f((dir / ("fitresults_" + v.name + ".hdf5")).string());
    auto asimov = f.hist("results_asimov/parms"), prefit = f.hist("results_asimov/parms_prefit");
    for (size_t i = 0; i < asimov.values.size(); ++i) EXPECT_EQ(asimov.values[i], prefit.values[i]) << v.name;
    EXPECT_NEAR(f.scalar("results_asimov/nllvalreduced"), 0.0, 1e-8) << v.name;
    EXPECT_LT(f.scalar("results/edmval"), 1e-6) << v.name;
    auto parms = f.hist("results/parms");
    for (double var : parms.variances) EXPECT_GT(var, 0.0) << v.name;
    // Global impacts close on the total variance (stat is the remainder, never negative here).
    auto g = f.hist("results/global_impacts_grouped");
    const int64_t ncol = g.shape[1];
    double sum = 0.0;
    for (int64_t c = 0; c < ncol; ++c)
      if (g.axis_labels[1][c].rfind("binByBinStat", 0) != 0 || g.axis_labels[1][c] == "binByBinStat")
        sum += g.values[c] * g.values[c];
    EXPECT_LT(relative_error(sum, parms.variances[0]), 1e-6) << v.name;
    EXPECT_TRUE(std::isfinite(f.scalar("results/nllvalfull"))) << v.name;
    auto hp = f.hist("results/mappings/BaseMapping/channels/ch0/hist_postfit");
    for (double var : hp.variances) EXPECT_GE(var, 0.0) << v.name;
    // The inclusive variances are the diagonal of the stored covariance (all 7 bins, masked included).
    auto hi = f.hist("results/mappings/BaseMapping/channels/ch0/hist_postfit_inclusive");
    auto hm = f.hist("results/mappings/BaseMapping/channels/ch1_masked/hist_postfit_inclusive");
    auto hc = f.hist("results/mappings/BaseMapping/hist_postfit_inclusive_cov");
    ASSERT_EQ(hc.shape, std::vector<int64_t>({7, 7})) << v.name;
    for (int b = 0; b < 5; ++b)
      EXPECT_LT(relative_error(hc.values[b * 7 + b], hi.variances[b]), 1e-10) << v.name;
    for (int b = 0; b < 2; ++b)
      EXPECT_LT(relative_error(hc.values[(5 + b) * 7 + 5 + b], hm.variances[b]), 1e-10) << v.name;
    // Per-process sums: the inclusive value is the sum of the processes.
    for (int b = 0; b < 5; ++b)
      EXPECT_NEAR(hp.values[b * 2] + hp.values[b * 2 + 1], hi.values[b], 1e-9 * hi.values[b]);
    EXPECT_GT(f.scalar("results/mappings/BaseMapping/chi2"), 0.0) << v.name;
  }
}
