// Impacts by refits (docs/output-format.md "Impacts by refits"): --nonProfiledImpacts and --globalAsymImpacts
// on the example tensor, checked against properties that do not need upstream (upstream's numbers are the
// reference cases nonprofiled_impacts*, global_asym_impacts* of tests/reference): a nonprofiled row is a
// fresh fit with the frozen value moved, the grouped rows are envelopes of the per-source rows, the
// asymmetric global impacts tend to Sigma times the Gaussian global impacts, the Gaussian warm start
// reaches the same minima, and the bad combinations are one-line errors naming the option.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "rabbit/postfit/result_file.hpp"
#include "support/command.hpp"
#include "support/test_paths.hpp"

namespace fs = std::filesystem;
using rabbit::result::Hist;
using rabbit::result::ResultReader;
using rabbit::test::example_tensor;
using rabbit::test::run_rabbit_fit;
using rabbit::test::run_rabbit_fit_captured;
using rabbit::test::scratch_dir;

namespace {

const std::string kData = " -t 0 --unblind";

int64_t label_index(const Hist& h, size_t axis, const std::string& label) {
  const auto& l = h.axis_labels.at(axis);
  auto it = std::find(l.begin(), l.end(), label);
  EXPECT_NE(it, l.end()) << label;
  return it - l.begin();
}

// [source, downUpVar, parms] row-major.
double at(const Hist& h, int64_t source, int64_t side, int64_t parm) {
  return h.values.at((source * 2 + side) * h.shape.at(2) + parm);
}

Hist fit_and_read(const std::string& args, const std::string& dir_name, const std::string& hist) {
  auto dir = scratch_dir(dir_name);
  auto r = run_rabbit_fit_captured(example_tensor() + kData + " -o " + dir.string() + " " + args);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return ResultReader((dir / "fitresults.hdf5").string()).hist("results/" + hist);
}

}  // namespace

TEST(RefitImpacts, BadCombinationsAreOneLineErrorsNamingTheOption) {
  auto expect_error = [](const std::string& args, const std::string& message) {
    auto r = run_rabbit_fit_captured(example_tensor() + kData + " -o " + scratch_dir("refit_bad").string() +
                                     " " + args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.output;
    // The error is the run's last line, one line (the input's channels may be printed before it).
    const auto last = r.output.rfind("rabbit_fit: error: ");
    ASSERT_NE(last, std::string::npos) << r.output;
    EXPECT_NE(r.output.find(message, last), std::string::npos) << args << "\n" << r.output;
    EXPECT_EQ(std::count(r.output.begin() + static_cast<long>(last), r.output.end(), '\n'), 1) << r.output;
  };
  auto r = run_rabbit_fit(example_tensor() + " --nonProfiledImpacts -o " + scratch_dir("refit_bad").string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--nonProfiledImpacts: no parameter is frozen"), std::string::npos) << r.output;
  expect_error("--globalAsymImpactsSigma 2", "--globalAsymImpactsSigma needs --globalAsymImpacts");
  expect_error("--globalAsymImpactsInclude norm", "--globalAsymImpactsInclude needs --globalAsymImpacts");
  expect_error("--globalAsymImpactsLinearWarmstart",
               "--globalAsymImpactsLinearWarmstart needs --globalAsymImpacts");
  expect_error("--globalAsymImpacts --globalAsymImpactsSigma 0",
               "argument --globalAsymImpactsSigma: must be");
  expect_error("--globalAsymImpacts --globalAsymImpactsSigma nan", "--globalAsymImpactsSigma");
  // slope_signal is unconstrained: no centre to shift.
  expect_error("--globalAsymImpacts --globalAsymImpactsInclude slope_signal",
               "--globalAsymImpacts: no constrained parameter selected");
  expect_error("--globalAsymImpacts --globalAsymImpactsInclude 'norm(' ", "--globalAsymImpactsInclude");
  expect_error("--noHessian --globalAsymImpacts --globalAsymImpactsLinearWarmstart",
               "--noHessian is incompatible with: --globalAsymImpactsLinearWarmstart");
}

// A nonprofiled row is x̂ minus the fit with the frozen value (and centre) moved: the same as a fresh fit
// whose constraint minimum is moved by --setConstraintMinimum.
TEST(RefitImpacts, NonProfiledRowIsTheFitWithTheFrozenValueMoved) {
  const std::string freeze = "--freezeParameters norm slope_background";
  auto dir = scratch_dir("refit_nonprofiled");
  auto r = run_rabbit_fit_captured(example_tensor() + kData + " -o " + dir.string() + " " + freeze +
                                   " --nonProfiledImpacts");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ResultReader f((dir / "fitresults.hdf5").string());
  const Hist h = f.hist("results/nonprofiled_impacts_asym");
  const Hist parms = f.hist("results/parms");
  EXPECT_EQ(h.axis_names, std::vector<std::string>({"impacts", "downUpVar", "parms"}));
  // Index order of the parameters.
  EXPECT_EQ(h.axis_labels[0], std::vector<std::string>({"slope_background", "norm"}));
  const int64_t norm = label_index(h, 2, "norm"), sig = label_index(h, 2, "sig");
  const int64_t npar = h.shape[2];
  EXPECT_DOUBLE_EQ(at(h, 1, 0, norm), -1.0);  // x̂ − (x0 + 1σ), σ = 1
  EXPECT_DOUBLE_EQ(at(h, 1, 1, norm), 1.0);
  EXPECT_DOUBLE_EQ(at(h, 0, 0, label_index(h, 2, "slope_background")), -1.0);  // unconstrained: σ = 1

  const Hist moved =
      fit_and_read(freeze + " --setConstraintMinimum norm 1", "refit_nonprofiled_moved", "parms");
  const Hist moved_down =
      fit_and_read(freeze + " --setConstraintMinimum norm -1", "refit_nonprofiled_down", "parms");
  for (int64_t j = 0; j < npar; ++j) {
    const double sigma = std::sqrt(std::max(parms.variances[j], 1e-30));
    EXPECT_NEAR(parms.values[j] - at(h, 1, 0, j), moved.values[j], 1e-6 * sigma) << h.axis_labels[2][j];
    EXPECT_NEAR(parms.values[j] - at(h, 1, 1, j), moved_down.values[j], 1e-6 * sigma) << h.axis_labels[2][j];
  }
  EXPECT_GT(std::abs(at(h, 1, 0, sig)), 1e-4);  // the POI responds

  // Grouped: the groups holding a frozen parameter in input order, then Total; quadrature envelopes.
  const Hist g = f.hist("results/nonprofiled_impacts_asym_grouped");
  EXPECT_EQ(g.axis_labels[0], std::vector<std::string>({"norm", "slopes", "slopes_background", "Total"}));
  for (int64_t j = 0; j < npar; ++j) {
    double lo = 0.0, hi = 0.0;
    for (int64_t k = 0; k < 2; ++k) {
      const double a = at(h, k, 0, j), b = at(h, k, 1, j);
      lo += std::pow(std::min({0.0, a, b}), 2);
      hi += std::pow(std::max({0.0, a, b}), 2);
    }
    EXPECT_NEAR(at(g, 3, 0, j), -std::sqrt(lo), 1e-15) << j;
    EXPECT_NEAR(at(g, 3, 1, j), std::sqrt(hi), 1e-15) << j;
    EXPECT_NEAR(at(g, 0, 0, j), std::min({0.0, at(h, 1, 0, j), at(h, 1, 1, j)}), 1e-15) << j;  // norm alone
    EXPECT_NEAR(at(g, 2, 1, j), std::max({0.0, at(h, 0, 0, j), at(h, 0, 1, j)}), 1e-15) << j;
  }
}

// x̂(shift) − x̂ → shift · dx̂/dx0: at a small Sigma the rows are ±Sigma times the Gaussian global impacts;
// the Gaussian warm start ends at the same minima.
TEST(RefitImpacts, GlobalAsymTendsToSigmaTimesGaussianGlobalImpacts) {
  const double sigma = 1e-2;
  const std::string args =
      "--gaussianGlobalImpacts --globalAsymImpacts --globalAsymImpactsInclude 'bkg.*' norm "
      "--globalAsymImpactsExclude bkg_2_norm --globalAsymImpactsSigma 0.01";
  auto dir = scratch_dir("refit_global_asym");
  auto r = run_rabbit_fit_captured(example_tensor() + kData + " -o " + dir.string() + " " + args);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ResultReader f((dir / "fitresults.hdf5").string());
  const Hist h = f.hist("results/global_impacts_asym");
  const Hist gauss = f.hist("results/gaussian_global_impacts");  // [poinoi, impacts (all parameters)]
  const Hist parms = f.hist("results/parms");
  EXPECT_EQ(h.axis_labels[0], std::vector<std::string>({"bkg_norm", "norm"}));
  const int64_t ncol = gauss.shape[1];
  int checked = 0;
  for (size_t r_i = 0; r_i < gauss.axis_labels[0].size(); ++r_i) {
    const std::string& reported = gauss.axis_labels[0][r_i];
    const int64_t col = label_index(h, 2, reported);
    const double sigma_r = std::sqrt(parms.variances[col]);
    for (int64_t k = 0; k < 2; ++k) {
      const double g = gauss.values[r_i * ncol + label_index(gauss, 1, h.axis_labels[0][k])];
      EXPECT_NEAR(at(h, k, 1, col) / sigma, g, 0.03 * std::abs(g) + 1e-4 * sigma_r) << reported << " " << k;
      EXPECT_NEAR(-at(h, k, 0, col) / sigma, g, 0.03 * std::abs(g) + 1e-4 * sigma_r) << reported << " " << k;
      checked += std::abs(g) > 1e-3 * sigma_r;
    }
  }
  EXPECT_GE(checked, 3);

  const Hist warm = fit_and_read(args + " --globalAsymImpactsLinearWarmstart", "refit_global_asym_warm",
                                 "global_impacts_asym");
  ASSERT_EQ(warm.values.size(), h.values.size());
  for (size_t i = 0; i < h.values.size(); ++i) {
    const int64_t j = static_cast<int64_t>(i) % h.shape[2];
    EXPECT_NEAR(warm.values[i], h.values[i], 1e-6 * std::sqrt(std::max(parms.variances[j], 1e-30))) << i;
  }
}

// The contour points of --asymImpacts tend to the traditional impacts in a near-Gaussian fit: the scanned
// nuisance moves by ±σ, the POI/NOI by ±C[r, p]/σ_p; the grouped Total is the POI's ±σ and a group's entry
// its traditional grouped impact.
TEST(RefitImpacts, AsymImpactsTendToTraditionalImpacts) {
  auto dir = scratch_dir("refit_asym");
  auto r =
      run_rabbit_fit_captured(example_tensor() + kData + " -o " + dir.string() +
                              " --doImpacts --asymImpacts --asymImpactsInclude norm 'bkg.*' "
                              "--asymImpactsExclude bkg_2_norm --asymImpactsHess bfgs --asymImpactsTol 1e-7");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("--asymImpactsHess chooses the Hessian of SciPy's trust-constr"),
            std::string::npos);
  ResultReader f((dir / "fitresults.hdf5").string());
  const Hist h = f.hist("results/impacts_asym");
  const Hist trad = f.hist("results/impacts");  // [poinoi, impacts (all parameters)]
  const Hist trad_grouped = f.hist("results/impacts_grouped");
  const Hist parms = f.hist("results/parms");
  EXPECT_EQ(h.axis_labels[0], std::vector<std::string>({"bkg_norm", "norm"}));
  const int64_t ncol = trad.shape[1];
  for (int64_t k = 0; k < 2; ++k) {
    const std::string& source = h.axis_labels[0][k];
    const int64_t p = label_index(h, 2, source);
    const double sigma_p = std::sqrt(parms.variances[p]);
    EXPECT_NEAR(at(h, k, 0, p), -sigma_p, 0.1 * sigma_p) << source;
    EXPECT_NEAR(at(h, k, 1, p), sigma_p, 0.1 * sigma_p) << source;
    for (size_t row = 0; row < trad.axis_labels[0].size(); ++row) {
      const int64_t t = label_index(h, 2, trad.axis_labels[0][row]);
      const double imp = trad.values[row * ncol + label_index(trad, 1, source)];
      const double sigma_t = std::sqrt(parms.variances[t]);
      EXPECT_NEAR(at(h, k, 1, t), imp, 0.1 * std::abs(imp) + 1e-3 * sigma_t) << source << " " << t;
      EXPECT_NEAR(at(h, k, 0, t), -imp, 0.1 * std::abs(imp) + 1e-3 * sigma_t) << source << " " << t;
    }
  }
  const Hist g = f.hist("results/impacts_asym_grouped");
  std::vector<std::string> expected = trad_grouped.axis_labels[1];
  expected.erase(std::remove(expected.begin(), expected.end(), "binByBinStat"), expected.end());
  expected.push_back("Total");
  EXPECT_EQ(g.axis_labels[0], expected);
  const int64_t sig = label_index(g, 2, "sig"), total = label_index(g, 0, "Total");
  const double sigma_sig = std::sqrt(parms.variances[sig]);
  EXPECT_NEAR(at(g, total, 0, sig), -sigma_sig, 0.1 * sigma_sig);
  EXPECT_NEAR(at(g, total, 1, sig), sigma_sig, 0.1 * sigma_sig);
  const double norm_group = trad_grouped.values[label_index(trad_grouped, 1, "norm")];  // row 0: sig
  EXPECT_NEAR(at(g, label_index(g, 0, "norm"), 1, sig), norm_group, 0.1 * norm_group + 1e-3 * sigma_sig);
  EXPECT_TRUE(std::isnan(at(g, total, 0, label_index(g, 2, "norm"))));  // only the POI/NOI columns

  auto bad = run_rabbit_fit_captured(example_tensor() + " --asymImpacts --asymImpactsTol 0");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.output.find("argument --asymImpactsTol: must be a finite number > 0"), std::string::npos)
      << bad.output;
  bad = run_rabbit_fit_captured(example_tensor() + " --asymImpactsExclude norm");
  EXPECT_NE(bad.output.find("--asymImpactsExclude needs --asymImpacts"), std::string::npos) << bad.output;
  bad = run_rabbit_fit_captured(example_tensor() + " --noHessian --asymImpacts");
  EXPECT_NE(bad.output.find("--noHessian is incompatible with: --asymImpacts"), std::string::npos)
      << bad.output;
}
