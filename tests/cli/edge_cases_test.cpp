// Numerical edge cases on models written by our TensorWriter (issue 10): each runs rabbit_fit end
// to end and checks the stored numbers and the log.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "rabbit/io/tensor_writer.hpp"
#include "rabbit/postfit/result_file.hpp"
#include "support/command.hpp"
#include "support/test_paths.hpp"

namespace fs = std::filesystem;
using rabbit::result::ResultReader;
using rabbit::test::example_tensor;
using rabbit::test::run_rabbit_fit;
using rabbit::test::run_rabbit_fit_captured;

namespace {

// ch0: bin 2 has zero yield for every process and zero data (left out with empty_bin = false).
// ch1: a low-count channel whose bins 0, 2 and 3 have no data.
std::string write_empty_bins_tensor(const fs::path& dir, bool empty_bin) {
  auto ch0 = [&](std::vector<double> v) {
    if (!empty_bin) v.erase(v.begin() + 2);
    return v;
  };
  rabbit::TensorWriter w;
  w.add_channel("ch0", {rabbit::axis::regular(empty_bin ? 6 : 5, 0, empty_bin ? 6 : 5, "x")});
  w.add_channel("ch1", {rabbit::axis::regular(4, 0, 4, "y")});
  w.add_data("ch0", ch0({110, 104, 0, 112, 83, 58}));
  w.add_data("ch1", {0, 2, 0, 0});
  w.add_process("ch0", "sig", ch0({5, 10, 0, 30, 20, 10}), true);
  w.add_process("ch0", "bkg", ch0({100, 90, 0, 70, 60, 50}));
  w.add_process("ch1", "sig", {0.5, 1.0, 0.5, 0.2}, true);
  w.add_process("ch1", "bkg", {0.8, 0.6, 0.3, 0.2});
  w.add_norm_systematic("lumi", {"sig", "bkg"}, "ch0", {1.05});
  w.add_norm_systematic("lumi", {"sig", "bkg"}, "ch1", {1.05});
  const std::string path = (dir / (empty_bin ? "empty_bin.hdf5" : "no_empty_bin.hdf5")).string();
  w.write(path);
  return path;
}

}  // namespace

// Before: the postfit chi2 was NaN (0·inf in the empty bin's data response) and the log printed
// "chi2/ndf = -9223372036854775808"; the empty bin counted in ndf. The empty bin adds nothing to
// the NLL, so every chi2 must equal the one of the same model without it, with one ndf less.
TEST(EdgeCases, ChiSquareWithEmptyBins) {
  auto dir = rabbit::test::scratch_dir("edge_empty_bins");
  const std::string with = write_empty_bins_tensor(dir, true), without = write_empty_bins_tensor(dir, false);
  // Lite normal-additive / normal-multiplicative: ch1's empty data bins (σ² = ν⁰, k = A at the
  // start: unit weights) made their closed forms 0·∞ / √(<0) — before the n = 0 closed forms the
  // NLL was NaN at the start (additive) or the fit did not converge with a NaN chi2 (multiplicative).
  for (const std::string bb : {"", "--noBinByBinStat", "--binByBinStatType normal-additive",
                               "--binByBinStatType normal-multiplicative", "--binByBinStatMode full",
                               "--binByBinStatMode full --binByBinStatType gamma",
                               "--binByBinStatMode full --binByBinStatType normal-additive"}) {
    SCOPED_TRACE(bb);
    const std::string args = " -t 0 --unblind --saveHists --computeHistErrors " + bb + " -o ";
    // The first run is the executable, the others the same program in this process.
    const auto run = bb.empty() ? run_rabbit_fit : run_rabbit_fit_captured;
    auto r = run(with + args + (dir / "with").string());
    auto r0 = run_rabbit_fit_captured(without + args + (dir / "without").string());
    ASSERT_EQ(r.exit_code, 0) << r.output;
    ASSERT_EQ(r0.exit_code, 0) << r0.output;
    EXPECT_EQ(r.output.find("-9223372036854775808"), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find("nan"), std::string::npos) << r.output;
    ResultReader f((dir / "with" / "fitresults.hdf5").string()),
        f0((dir / "without" / "fitresults.hdf5").string());
    EXPECT_EQ(f.scalar("results/_cpp/converged"), 1.0);
    EXPECT_EQ(f0.scalar("results/_cpp/converged"), 1.0);
    const std::string m = "results/mappings/BaseMapping/";
    for (const std::string key : {"chi2", "chi2_prefit"}) {
      const double chi2 = f.scalar(m + key), chi2_0 = f0.scalar(m + key);
      EXPECT_TRUE(std::isfinite(chi2)) << key;
      EXPECT_NEAR(chi2, chi2_0, 1e-9 * std::max(1.0, chi2_0)) << key;
      // The log prints the stored value rounded, as rabbit's round(chi2).
      EXPECT_NE(r.output.find(fmt::format("chi2/ndf = {:.0f}\n", chi2)), std::string::npos) << r.output;
    }
    // 10 bins less the empty one; ch1's empty data bins have a prediction with a variance and count.
    EXPECT_EQ(f.scalar(m + "ndf"), 9.0);
    EXPECT_EQ(f.scalar(m + "ndf_prefit"), 9.0);
    EXPECT_EQ(f0.scalar(m + "ndf"), 9.0);
  }
}

// --paramModel Mixture sig bkg starts at mixing 1 (rabbit's default, as upstream), where bkg's
// rate 1 − 1 = 0 leaves bins of ch1 that have data but no expectation: the Poisson NLL is
// infinite at the start (upstream's too). Before: "minimize: the objective is not finite at the
// start point (f = inf)", exit code 5. Now: one line naming the cause and the way out, exit code 2.
TEST(EdgeCases, MixtureStartWithZeroRateIsRefused) {
  auto dir = rabbit::test::scratch_dir("edge_mixture");
  auto r =
      run_rabbit_fit(example_tensor() + " -t 0 --unblind --paramModel Mixture sig bkg -o " + dir.string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  const std::string expected =
      "rabbit_fit: error: --paramModel Mixture: at the start point (sig_bkg_mixing = 1) process 'bkg' has "
      "rate 0 "
      "and leaves 8 bin(s) with observed events and no expected events (first: ch1 bin 5), where the Poisson "
      "NLL "
      "is infinite; start where its rate is positive with --expectSignal sig_bkg_mixing VALUE\n";
  EXPECT_NE(r.output.find(expected), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("not finite"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir / "fitresults.hdf5"));

  // Started inside (0, 1), as the message says, the same model fits.
  r = run_rabbit_fit_captured(
      example_tensor() +
      " -t 0 --unblind --paramModel Mixture sig bkg --expectSignal sig_bkg_mixing 0.5 -o " + dir.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ResultReader f((dir / "fitresults.hdf5").string());
  auto parms = f.hist("results/parms");
  ASSERT_EQ(parms.axis_labels[0].front(), "sig_bkg_mixing");
  EXPECT_TRUE(std::isfinite(parms.values[0]) && std::isfinite(parms.variances[0])) << parms.values[0];
  EXPECT_LT(f.scalar("results/edmval"), 1e-8);
  EXPECT_NEAR(parms.values[0], 0.7747, 1e-3);  // parms holds x = √mixing: the mixing is 0.600
}
