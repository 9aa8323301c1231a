// -r/--regularization, --regularizationStrength and the L curve end to end (docs/user-guide.md
// "Regularization"): the penalty moves the data fit and not the Asimov fit (armed at its start, where
// the penalty and its gradient vanish), the L-curve outputs in both layouts, and one-line errors.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "rabbit/postfit/l_curve.hpp"
#include "rabbit/postfit/result_file.hpp"
#include "support/command.hpp"
#include "support/test_paths.hpp"

using rabbit::result::ResultReader;
using rabbit::test::example_tensor;
using rabbit::test::run_rabbit_fit;

namespace {

const std::string kRegularized = " --noBinByBinStat -r SVD Project ch1 a";

double max_abs_difference(const std::vector<double>& a, const std::vector<double>& b) {
  double out = 0.0;
  for (size_t i = 0; i < a.size(); ++i) out = std::max(out, std::abs(a[i] - b[i]));
  return out;
}

TEST(Regularization, PenaltyMovesTheDataFitNotTheAsimovFit) {
  const auto dir = rabbit::test::scratch_dir("cli_regularization");
  auto r = run_rabbit_fit(example_tensor() + " -t -1 0 --unblind --noBinByBinStat -o " + dir.string() +
                          " --outname plain.hdf5");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = run_rabbit_fit(example_tensor() + " -t -1 0 --unblind" + kRegularized +
                     " --regularizationStrength 3 -o " + dir.string() + " --outname reg.hdf5");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ResultReader plain((dir / "plain.hdf5").string()), reg((dir / "reg.hdf5").string());
  // Asimov: the start is the minimum of both, where d = 1 everywhere (no penalty, no gradient).
  EXPECT_LT(
      max_abs_difference(plain.hist("results_asimov/parms").values, reg.hist("results_asimov/parms").values),
      1e-9);
  EXPECT_NEAR(plain.scalar("results_asimov/nllvalreduced"), reg.scalar("results_asimov/nllvalreduced"), 1e-9);
  // Data: the penalty pulls the fit (the reduced NLL includes it, so it is larger than without).
  EXPECT_GT(max_abs_difference(plain.hist("results/parms").values, reg.hist("results/parms").values), 1e-4);
  EXPECT_GT(reg.scalar("results/nllvalreduced"), plain.scalar("results/nllvalreduced") + 1e-6);
}

TEST(Regularization, LCurveOutputsInBothLayouts) {
  const auto dir = rabbit::test::scratch_dir("cli_regularization_lcurve");
  for (const std::string layout : {"rabbit", "plain"}) {
    const auto r = run_rabbit_fit(example_tensor() + " -t 0 --unblind" + kRegularized +
                                  " --lCurveScan --lCurveOptimize --outputFormat " + layout + " -o " +
                                  dir.string() + " --outname " + layout + ".hdf5");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("Iteration 4 with tau = 2.1000000000000005"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("Optimization terminated"), std::string::npos) << r.output;
  }
  ResultReader a((dir / "rabbit.hdf5").string()), b((dir / "plain.hdf5").string());
  for (const auto* f : {&a, &b}) {
    const auto tau = f->hist("results/step_tau");
    EXPECT_EQ(tau.axis_names, std::vector<std::string>{"step"});
    EXPECT_EQ(tau.values, rabbit::postfit::l_curve_scan_taus());
    // Double storage as rabbit's add_1D_integer_hist writes them (docs/output-format.md)
    EXPECT_TRUE(tau.variances.empty());
    const auto curvature = f->hist("results/step_lcurve");
    ASSERT_EQ(curvature.values.size(), 5u);
    for (double k : curvature.values) EXPECT_TRUE(std::isfinite(k));
    const auto best = f->hist("results/best_tau");
    EXPECT_EQ(best.axis_names, std::vector<std::string>{"best"});
    ASSERT_EQ(best.values.size(), 1u);
    EXPECT_TRUE(std::isfinite(best.values[0]));
    EXPECT_TRUE(best.variances.empty());
    ASSERT_EQ(f->hist("results/best_lcurve").values.size(), 1u);
  }
  EXPECT_EQ(a.hist("results/step_lcurve").values, b.hist("results/step_lcurve").values);
  EXPECT_EQ(a.hist("results/best_tau").values, b.hist("results/best_tau").values);
}

// CPU shards (docs/sharding-and-gpu.md "Regularisers and shards"): the first shard adds the penalty of all
// bins; the fit and the histograms, with BB on the regularised masked channel and without BB on an observed
// one, agree with one device to the minimizer's precision.
TEST(Regularization, ShardedCpuFitsAgreeWithOneDevice) {
  const auto dir = rabbit::test::scratch_dir("cli_regularization_sharded");
  for (const std::string reg : {" -r SVD Select ch0_masked --regularizationStrength 2",
                                " --noBinByBinStat -r SVD Project ch1 a --regularizationStrength 1.5"}) {
    const std::string args =
        example_tensor() + " -t 0 --unblind --saveHists --computeHistErrors" + reg + " -o " + dir.string();
    auto r1 = run_rabbit_fit(args + " --outname one.hdf5");
    ASSERT_EQ(r1.exit_code, 0) << r1.output;
    auto r2 = run_rabbit_fit(args + " --outname two.hdf5 --nDevices 2");
    ASSERT_EQ(r2.exit_code, 0) << r2.output;
    ResultReader a((dir / "one.hdf5").string()), b((dir / "two.hdf5").string());
    EXPECT_NEAR(a.scalar("results/nllvalreduced"), b.scalar("results/nllvalreduced"), 1e-8) << reg;
    for (const char* h :
         {"results/parms", "results/mappings/BaseMapping/channels/ch0_masked/hist_postfit_inclusive",
          "results/mappings/BaseMapping/channels/ch1/hist_postfit_inclusive"}) {
      const auto x = a.hist(h), y = b.hist(h);
      ASSERT_EQ(x.values.size(), y.values.size()) << h;
      for (size_t i = 0; i < x.values.size(); ++i) {
        const double sigma = x.variances.empty() ? 1.0 : std::sqrt(x.variances[i]);
        EXPECT_NEAR(x.values[i], y.values[i], 1e-5 * std::max(sigma, std::abs(x.values[i])) + 1e-12)
            << reg << h << i;
        if (!x.variances.empty())
          EXPECT_NEAR(x.variances[i], y.variances[i], 1e-5 * x.variances[i] + 1e-12) << reg << h << i;
      }
    }
  }
}

TEST(Regularization, BadArgumentsAreOneLineNamingTheOption) {
  const auto dir = rabbit::test::scratch_dir("cli_regularization_bad");
  const std::string out = " -t 0 -o " + dir.string();
  struct Case {
    std::string args, message;
  };
  for (const auto& c : std::vector<Case>{
           {"-r TV Select ch0", "-r/--regularization: unknown regulariser 'TV'; supported: SVD"},
           {"-r SVD Normalize ch1 b",
            "-r/--regularization SVD Normalize ch1 b: mapping Normalize is not linear in the yields; "
            "supported: "
            "BaseMapping, Select, Project"},
           {"-r SVD Project ch1 c", "-r/--regularization SVD Project: unknown axis c of channel ch1"},
           {"-r SVD Select ch0",
            "-r/--regularization on an observed (non-masked) channel together with "
            "bin-by-bin statistics is not supported"},
           {"-r SVD Select ch0_masked --saveHists --computeHistGaussianImpacts",
            "-r/--regularization with bin-by-bin statistics is not implemented with "
            "--computeHistGaussianImpacts"},
       }) {
    const auto r = run_rabbit_fit(example_tensor() + out + " " + c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.output;
    const auto at = r.output.find("rabbit_fit: error: ");
    ASSERT_NE(at, std::string::npos) << c.args << "\n" << r.output;
    const std::string line = r.output.substr(at, r.output.find('\n', at) - at);
    EXPECT_NE(line.find(c.message), std::string::npos) << c.args << "\n" << r.output;
  }
}

}  // namespace
