// Toys (user-guide.md "Toys"): frequentist toys generate the data at the nominal model and move
// only the constraint centres; pull widths of a linear Gaussian model, whose σ is exact, are 1 for
// frequentist and Bayesian toys, with and without Barlow-Beeston; randomized starts that end in
// another minimum are reported; a seed fixes the toys, and randomized starts end at the same
// minimum. Fits run in process; the executable itself runs once in each RabbitFit test.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "rabbit/io/tensor_writer.hpp"
#include "rabbit/postfit/result_file.hpp"
#include "support/command.hpp"
#include "support/linear_tensor.hpp"
#include "support/test_paths.hpp"

namespace fs = std::filesystem;
using rabbit::result::ResultReader;
using rabbit::test::example_tensor;
using rabbit::test::run_rabbit_fit;
using rabbit::test::run_rabbit_fit_captured;
using rabbit::test::run_rabbit_fit_in_process;
using rabbit::test::scratch_dir;
using rabbit::test::write_linear_tensor;

namespace {

// Additive ("normal") systematics, x = mu (--allowNegativeParam), chi2 with the input's fixed data
// variances (with the toy's own counts as variances, Neyman's chi2 biases mu by -0.12 sigma here), BB
// normal-additive (ν linear in β) with MC statistics as large as the data's: the NLL is exactly quadratic, so
// the Hessian's σ is the exact spread of the estimator.
std::string write_linear_bb_tensor(const fs::path& dir) {
  rabbit::TensorWriter w(rabbit::SystematicType::normal);
  const std::vector<double> sig = {5, 10, 20, 30, 20, 10}, bkg = {100, 90, 80, 70, 60, 50};
  w.add_channel("ch0", {rabbit::axis::regular(6, 0, 6, "x")});
  std::vector<double> data(6), var(6), shape(6), bkg_var(6);
  for (int b = 0; b < 6; ++b) {
    data[b] = sig[b] + bkg[b];
    var[b] = 1.2 * data[b];  // differs from the counts, so the file keeps it (hdata_var) and the fit uses it
    shape[b] = bkg[b] + 4.0 - 1.6 * b;
    bkg_var[b] = 0.8 * bkg[b];  // MC statistics comparable to the data's
  }
  w.add_data("ch0", data, var);
  w.add_process("ch0", "sig", sig, true, std::vector<double>(6, 0.0));
  w.add_process("ch0", "bkg", bkg, false, bkg_var);
  w.add_systematic("shape", "bkg", "ch0", shape);
  w.add_norm_systematic("lumi", {"bkg"}, "ch0", {1.05});  // on sig it would make ν bilinear (μ·θ)
  const std::string path = (dir / "linear_bb.hdf5").string();
  w.write(path);
  return path;
}

struct PullStats {
  double mean = 0, width = 0;
};

PullStats poi_pulls(const ResultReader& file, int ntoys, double truth) {
  double sum = 0, sum2 = 0;
  for (int k = 1; k <= ntoys; ++k) {
    const auto p = file.hist("results_toy" + std::to_string(k) + "/parms");
    const double pull = (p.values[0] - truth) / std::sqrt(p.variances[0]);
    sum += pull;
    sum2 += pull * pull;
  }
  PullStats s;
  s.mean = sum / ntoys;
  s.width = std::sqrt(sum2 / ntoys - s.mean * s.mean);
  return s;
}

}  // namespace

// With --toysDataRandomize none a frequentist toy's data are the nominal expectation exactly (the
// thrown BB centres must not leak into them); a Bayesian toy's are generated at the thrown β.
TEST(Toys, FrequentistToyDataAreTheNominalExpectation) {
  const fs::path dir = scratch_dir("toys_nominal_data");
  const std::string base =
      example_tensor() + " -t -1 4 --toysDataRandomize none --saveHists -o " + dir.string();
  ASSERT_EQ(run_rabbit_fit_in_process(base + " -p freq --toysSystRandomize frequentist"), 0);
  ASSERT_EQ(run_rabbit_fit_in_process(base + " -p bayes --toysSystRandomize bayesian"), 0);
  const ResultReader freq((dir / "fitresults_freq.hdf5").string()),
      bayes((dir / "fitresults_bayes.hdf5").string());
  const std::string h = "/mappings/BaseMapping/channels/ch0/hist_nobs";
  const auto nominal = freq.hist("results_asimov" + h).values;
  for (int k = 1; k <= 4; ++k) {
    const auto toy = freq.hist("results_toy" + std::to_string(k) + h).values;
    ASSERT_EQ(toy.size(), nominal.size());
    for (size_t i = 0; i < toy.size(); ++i)
      EXPECT_NEAR(toy[i], nominal[i], 1e-9 * nominal[i]) << "toy " << k << " bin " << i;
    EXPECT_NE(bayes.hist("results_toy" + std::to_string(k) + h).values, nominal) << "toy " << k;
  }
}

// A linear Gaussian model: the pulls of the POI (truth 1) are N(0, 1) for frequentist and Bayesian
// toys, with and without BB. 1,000 toys each: the width's standard error is 0.022, so a 15 %
// error (what generating frequentist toys at the thrown β gave) is 7 standard errors away. One
// test per configuration, so that ctest -j runs them side by side.
class PullWidths : public ::testing::TestWithParam<std::tuple<std::string, bool>> {};

TEST_P(PullWidths, OfALinearModelAreOne) {
  const auto& [syst, with_bb] = GetParam();
  const fs::path dir = scratch_dir("toys_pull_widths");
  const std::string tensor = write_linear_bb_tensor(dir);
  const int ntoys = 1000;
  const double se_width = 1.0 / std::sqrt(2.0 * ntoys), se_mean = 1.0 / std::sqrt(static_cast<double>(ntoys));
  const std::string bb = with_bb ? "--binByBinStatType normal-additive" : "--noBinByBinStat";
  ASSERT_EQ(
      run_rabbit_fit_in_process(tensor + " --chisqFit --allowNegativeParam " + bb + " -t " +
                                std::to_string(ntoys) + " --toysDataRandomize normal --toysSystRandomize " +
                                syst + " --seed 11 -v 1 -o " + dir.string()),
      0);
  const ResultReader file((dir / "fitresults.hdf5").string());
  const PullStats s = poi_pulls(file, ntoys, 1.0);
  EXPECT_LT(std::abs(s.mean), 3.0 * se_mean) << s.mean;
  EXPECT_LT(std::abs(s.width - 1.0), 3.0 * se_width) << s.width;
}

INSTANTIATE_TEST_SUITE_P(Toys, PullWidths,
                         ::testing::Combine(::testing::Values("frequentist", "bayesian"), ::testing::Bool()),
                         [](const auto& info) {
                           return std::get<0>(info.param) + (std::get<1>(info.param) ? "_bb" : "_nobb");
                         });

// Two minima: an asymmetric normalisation whose up and down variations both raise the yield, and
// data 25 % above it, so the NLL in that nuisance has a minimum on each side (of different depth).
// From the unrandomized start the fit takes one; from random starts some toys take the other,
// and each of those is flagged with both NLLs.
TEST(Toys, RandomizedStartsThatEndInAnotherMinimumAreFlagged) {
  const fs::path dir = scratch_dir("toys_other_minimum");
  rabbit::TensorWriter w;
  w.add_channel("ch0", {rabbit::axis::regular(4, 0, 4, "x")});
  w.add_data("ch0", {1260, 1240, 1255, 1250});
  w.add_process("ch0", "sig", {50, 0, 0, 0}, true);
  w.add_process("ch0", "bkg", {1000, 1000, 1000, 1000});
  rabbit::SystematicOptions asym;
  asym.symmetrize = rabbit::Symmetrization::none;
  w.add_norm_systematic("both_up", {"bkg"}, "ch0", 1.3, 1.28, asym);
  const std::string tensor = (dir / "two_minima.hdf5").string();
  w.write(tensor);
  ASSERT_EQ(
      run_rabbit_fit_in_process(tensor +
                                " --noBinByBinStat -t 20 --toysDataMode observed --toysSystRandomize none "
                                "--toysRandomizeParameters --seed 3 -v 2 -o " +
                                dir.string()),
      0);
  const ResultReader file((dir / "fitresults.hdf5").string());
  int flagged = 0;
  for (int k = 1; k <= 20; ++k) {
    const std::string g = "results_toy" + std::to_string(k);
    const double nll = file.scalar(g + "/nllvalreduced");
    const double other = file.scalar(g + "/_cpp/nllvalreduced_unrandomized_start");
    const bool is_other = file.scalar(g + "/_cpp/other_minimum_than_unrandomized_start") == 1.0;
    EXPECT_EQ(is_other, std::abs(nll - other) > 1e-6) << g;
    if (is_other) ++flagged;
  }
  EXPECT_GT(flagged, 0);
  EXPECT_LT(flagged, 20);
}

TEST(RabbitFit, ToysAreDeterministic) {
  auto dir = scratch_dir("cli_toys");
  const std::string tensor = write_linear_tensor(dir);
  const std::string base =
      tensor + " --chisqFit --allowNegativeParam --noBinByBinStat --toysDataRandomize normal -o " +
      dir.string();
  auto r = run_rabbit_fit_captured(base + " -t 3 --seed 7 -p a");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = run_rabbit_fit_captured(base + " -t 2 --seed 7 -p b");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = run_rabbit_fit_captured(base + " -t 2 --seed 8 -p c");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ResultReader fa((dir / "fitresults_a.hdf5").string()), fb((dir / "fitresults_b.hdf5").string()),
      fc((dir / "fitresults_c.hdf5").string());
  EXPECT_EQ(fa.hist("results_toy2/parms").values, fb.hist("results_toy2/parms").values);  // same seed
  EXPECT_NE(fa.hist("results_toy2/parms").values, fc.hist("results_toy2/parms").values);  // other seed
  EXPECT_EQ(fa.hist("results_toy2/parms_prefit").values, fa.hist("results_toy1/parms_prefit").values);
  // The statistics of toys are tested on 1,000 toys by Toys.PullWidthsOfALinearModelAreOne.
  r = run_rabbit_fit(tensor + " --covarianceFit --noBinByBinStat -t 1 -o " + dir.string() + " -p d");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("--toysDataRandomize poisson is not allowed with --covarianceFit"),
            std::string::npos)
      << r.output;
}

TEST(RabbitFit, ToysRandomizeParametersStartElsewhereAndEndAtTheSameMinimum) {
  auto dir = scratch_dir("cli_toys_randomize_parameters");
  const std::string base = example_tensor() + " -t 3 --seed 11 -o " + dir.string();
  auto r = run_rabbit_fit(base + " -p plain");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = run_rabbit_fit_captured(base + " --toysRandomizeParameters -p rnd1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = run_rabbit_fit_captured(base + " --toysRandomizeParameters -p rnd2");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ResultReader fp((dir / "fitresults_plain.hdf5").string()), f1((dir / "fitresults_rnd1.hdf5").string()),
      f2((dir / "fitresults_rnd2.hdf5").string());
  for (int k = 1; k <= 3; ++k) {
    SCOPED_TRACE(k);
    const std::string g = "results_toy" + std::to_string(k);
    // Deterministic for a seed.
    EXPECT_EQ(f1.hist(g + "/parms_prefit").values, f2.hist(g + "/parms_prefit").values);
    EXPECT_EQ(f1.hist(g + "/parms").values, f2.hist(g + "/parms").values);
    // The start (parms_prefit) moved away from the defaults in every parameter with a prefit width...
    const auto start = f1.hist(g + "/parms_prefit"), defaults = fp.hist(g + "/parms_prefit");
    int moved = 0, with_width = 0;
    for (size_t i = 0; i < start.values.size(); ++i) {
      if (defaults.variances[i] > 0.0) {
        ++with_width;
        moved += start.values[i] != defaults.values[i];
      } else {
        EXPECT_EQ(start.values[i], defaults.values[i]) << i;  // POI, unconstrained: no prefit width
      }
    }
    EXPECT_EQ(with_width, 10);
    EXPECT_EQ(moved, with_width);
    // ...the toy data are the same (own random stream), so the fit ends at the same minimum.
    EXPECT_NEAR(f1.scalar(g + "/nllvalreduced"), fp.scalar(g + "/nllvalreduced"), 1e-8);
    const auto a = f1.hist(g + "/parms"), b = fp.hist(g + "/parms");
    for (size_t i = 0; i < a.values.size(); ++i)  // mu = x^2: the POI may end at -x
      EXPECT_NEAR(i == 0 ? std::abs(a.values[i]) : a.values[i], i == 0 ? std::abs(b.values[i]) : b.values[i],
                  1e-3 * std::sqrt(b.variances[i]))
          << i;
  }
}
