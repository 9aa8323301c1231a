// rabbit_fit end to end: the built executable on generated tensors, checking exit codes, messages
// and stored values (docs/user-guide.md "The run"; docs/output-format.md "Definitions"). Each test
// runs the executable at least once (run_rabbit_fit); its further runs are the same program in this
// process (run_rabbit_fit_captured), which skips the process start.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "rabbit/backend/cpu/cpu_shard_evaluator.hpp"
#include "rabbit/fit/make_fitter.hpp"
#include "rabbit/io/tensor_writer.hpp"
#include "rabbit/model/model.hpp"
#include "rabbit/postfit/result_file.hpp"
#include "support/command.hpp"
#include "support/error_measures.hpp"
#include "support/linear_tensor.hpp"
#include "support/test_paths.hpp"

namespace fs = std::filesystem;
using rabbit::result::ResultReader;
using rabbit::test::example_tensor;
using rabbit::test::kBkg;
using rabbit::test::kShape;
using rabbit::test::kSig;
using rabbit::test::relative_error;
using rabbit::test::run_rabbit_fit;
using rabbit::test::run_rabbit_fit_captured;
using rabbit::test::scratch_dir;
using rabbit::test::write_linear_tensor;

TEST(RabbitFit, BadArgumentsGiveOneLineAndExitCode) {
  auto r = run_rabbit_fit("--noSuchOption x.hdf5");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.output.rfind("rabbit_fit: error: ", 0), 0u) << r.output;
  EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;

  auto dir = scratch_dir("cli_bad_input");
  r = run_rabbit_fit((dir / "missing.hdf5").string() + " -o " + dir.string());
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("rabbit_fit: error: "), std::string::npos);
  EXPECT_FALSE(fs::exists(dir / "fitresults.hdf5"));

  r = run_rabbit_fit(example_tensor() + " -o " + dir.string() + " --scan noSuchParameter");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--scan: unknown parameter 'noSuchParameter'"), std::string::npos) << r.output;
  // The failed run leaves nothing under the final name, nor its temporary file.
  EXPECT_TRUE(fs::is_empty(dir)) << r.output;

  r = run_rabbit_fit(example_tensor() + " --minimizerMethod BFGS");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("--minimizerMethod"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("not implemented"), std::string::npos) << r.output;

  r = run_rabbit_fit("--help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.output.find("--computeHistErrorsPerProcess"), std::string::npos);
}
TEST(RabbitFit, AsimovIsAtDefaultsWithInverseHessianUncertainties) {
  auto dir = scratch_dir("cli_asimov");
  auto r = run_rabbit_fit(example_tensor() + " -t -1 --doImpacts -o " + dir.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("Perform iterative fit"), std::string::npos);  // Asimov is never minimised
  ResultReader f((dir / "fitresults.hdf5").string());
  EXPECT_EQ(f.result_groups(), std::vector<std::string>({"results_asimov"}));
  auto parms = f.hist("results_asimov/parms");
  auto prefit = f.hist("results_asimov/parms_prefit");
  ASSERT_EQ(parms.values.size(), prefit.values.size());
  for (size_t i = 0; i < parms.values.size(); ++i) EXPECT_EQ(parms.values[i], prefit.values[i]) << i;
  EXPECT_NEAR(f.scalar("results_asimov/nllvalreduced"), 0.0, 1e-9);
  EXPECT_LT(f.scalar("results_asimov/edmval"), 1e-12);

  // Independent Hessian at the defaults with Asimov data.
  auto input = std::make_shared<rabbit::FitInputData>(rabbit::read_fit_input(example_tensor()));
  auto model = rabbit::build_model(input, rabbit::ModelOptions{});
  auto fitter = rabbit::make_fitter(model, rabbit::FitterOptions{});
  auto* cpu = dynamic_cast<rabbit::CpuShardEvaluator*>(fitter->shards().front().get());
  ASSERT_NE(cpu, nullptr);
  Eigen::VectorXd x = model->parameters.x_default, xi, d1, d2, nu, g;
  model->parameters.transform(x, xi, d1, d2);
  cpu->expected_yields(xi, 0, input->nbins, rabbit::CpuShardEvaluator::BetaMode::stored, &nu);
  fitter->set_observed(nu, Eigen::VectorXd());
  Eigen::MatrixXd H;
  fitter->value_grad_hess(x, g, H);
  Eigen::MatrixXd C = H.inverse();
  for (Eigen::Index i = 0; i < C.rows(); ++i)
    EXPECT_LT(relative_error(parms.variances[i], C(i, i)), 1e-9) << model->parameters.names[i];
  auto cov = f.hist("results_asimov/cov");
  ASSERT_EQ(cov.values.size(), static_cast<size_t>(C.size()));
  EXPECT_LT(relative_error(cov.values[1], C(0, 1)), 1e-8);
  // Traditional impacts: the POI's own column holds its sigma.
  auto imp = f.hist("results_asimov/impacts");
  EXPECT_LT(relative_error(imp.values[0], std::sqrt(C(0, 0))), 1e-9);
}
TEST(RabbitFit, LinearModelClosures) {
  auto dir = scratch_dir("cli_linear");
  const std::string tensor = write_linear_tensor(dir);
  auto r = run_rabbit_fit(
      tensor +
      " -t 0 --unblind --chisqFit --allowNegativeParam --noBinByBinStat --doImpacts "
      "--globalImpacts --gaussianGlobalImpacts --saveHists --computeHistErrors --computeHistCov "
      "--computeVariations --scan sig --scanPoints 5 --scanRange 2 --contourScan sig --contourLevels 1 2 "
      "-o " +
      dir.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ResultReader f((dir / "fitresults.hdf5").string());
  auto parms = f.hist("results/parms");
  const auto& names = parms.axis_labels[0];
  ASSERT_EQ(names, std::vector<std::string>({"sig", "lumi", "shape"}));
  const double var_sig = parms.variances[0];
  const double sigma = std::sqrt(var_sig);
  EXPECT_LT(f.scalar("results/edmval"), 1e-10);

  // Global impacts equal the Gaussian ones on a linear model, and add up to the total variance.
  auto gl = f.hist("results/global_impacts"), ga = f.hist("results/gaussian_global_impacts");
  for (size_t i = 0; i < gl.values.size(); ++i) EXPECT_NEAR(gl.values[i], ga.values[i], 1e-9 * sigma) << i;
  auto glg = f.hist("results/global_impacts_grouped"),
       gag = f.hist("results/gaussian_global_impacts_grouped");
  ASSERT_EQ(glg.axis_labels[1], std::vector<std::string>({"all", "stat"}));
  for (size_t i = 0; i < glg.values.size(); ++i) EXPECT_NEAR(glg.values[i], gag.values[i], 1e-7 * sigma) << i;
  EXPECT_LT(relative_error(glg.values[0] * glg.values[0] + glg.values[1] * glg.values[1], var_sig), 1e-9);

  // Traditional grouped impacts: with every nuisance in one group, group ⊕ stat = total.
  auto tg = f.hist("results/impacts_grouped");
  ASSERT_EQ(tg.axis_labels[1], std::vector<std::string>({"all", "stat"}));
  EXPECT_LT(relative_error(tg.values[0] * tg.values[0] + tg.values[1] * tg.values[1], var_sig), 1e-9);

  // Histogram errors = J C Jᵀ with the explicit Jacobian of ν = x_sig S + B + θ_shape Δ + θ_lumi 0.05
  // (S·x_sig + B).
  auto cov = f.hist("results/cov");
  Eigen::Map<const Eigen::Matrix<double, 3, 3, Eigen::RowMajor>> C(cov.values.data());
  auto post = f.hist("results/mappings/BaseMapping/channels/ch0/hist_postfit_inclusive");
  auto hcov = f.hist("results/mappings/BaseMapping/hist_postfit_inclusive_cov");
  const double mu = parms.values[0], lumi = parms.values[1], shape = parms.values[2];
  Eigen::MatrixXd J(6, 3);
  for (int b = 0; b < 6; ++b) {
    const double nominal = mu * kSig[b] + kBkg[b];
    EXPECT_NEAR(post.values[b], nominal + shape * kShape[b] + lumi * 0.05 * (kSig[b] + kBkg[b]),
                1e-9 * nominal);
    J(b, 0) = kSig[b];
    J(b, 1) = 0.05 * (kSig[b] + kBkg[b]);
    J(b, 2) = kShape[b];
  }
  Eigen::MatrixXd expected = J * C * J.transpose();
  for (int b = 0; b < 6; ++b) {
    EXPECT_LT(relative_error(post.variances[b], expected(b, b)), 1e-9) << b;
    for (int c = 0; c < 6; ++c) EXPECT_NEAR(hcov.values[b * 6 + c], expected(b, c), 1e-9 * expected(b, b));
  }

  // Variations: y ∓ J[:, p] sqrt(C_pp), bin 0 down; prefit with the unconstrained POI at sigma 1.
  auto vars = f.hist("results/mappings/BaseMapping/channels/ch0/hist_postfit_inclusive_variations");
  ASSERT_EQ(vars.shape, std::vector<int64_t>({6, 3, 2}));
  auto pre = f.hist("results/mappings/BaseMapping/channels/ch0/hist_prefit_inclusive");
  auto prevars = f.hist("results/mappings/BaseMapping/channels/ch0/hist_prefit_inclusive_variations");
  for (int b = 0; b < 6; ++b)
    for (int p = 0; p < 3; ++p) {
      const double shift = J(b, p) * std::sqrt(C(p, p));
      EXPECT_NEAR(vars.values[(b * 3 + p) * 2 + 0], post.values[b] - shift, 1e-9 * post.values[b]);
      EXPECT_NEAR(vars.values[(b * 3 + p) * 2 + 1], post.values[b] + shift, 1e-9 * post.values[b]);
      // Prefit: J at the defaults (x_sig = 1, θ = 0) and sigmas 1.
      const double jpre = p == 0 ? kSig[b] : p == 1 ? 0.05 * (kSig[b] + kBkg[b]) : kShape[b];
      EXPECT_NEAR(prevars.values[(b * 3 + p) * 2 + 1], pre.values[b] + jpre, 1e-9 * pre.values[b]);
    }

  // 1D scan: symmetric, ΔNLL = ½ (k σ)² at offsets kσ (5 points over ±2σ).
  auto scan = f.hist("results/nll_scan_sig");
  ASSERT_EQ(scan.values.size(), 5u);
  const double expected_dnll[5] = {2.0, 0.5, 0.0, 0.5, 2.0};
  for (int i = 0; i < 5; ++i) EXPECT_NEAR(scan.values[i], expected_dnll[i], 1e-7) << i;

  // Contours: the displacement of sig at level c is ∓cσ (where the scan crosses ΔNLL = c²/2).
  auto contour = f.hist("results/contour_scan");
  ASSERT_EQ(contour.shape, std::vector<int64_t>({1, 2, 2, 3}));
  for (int l = 0; l < 2; ++l)
    for (int s = 0; s < 2; ++s) {
      const double d = contour.values[(l * 2 + s) * 3 + 0];
      EXPECT_NEAR(d, (s == 0 ? -1.0 : 1.0) * (l + 1) * sigma, 1e-6 * sigma) << l << s;
      // The other parameters follow the covariance column (profiled).
      EXPECT_NEAR(contour.values[(l * 2 + s) * 3 + 2], d * C(2, 0) / C(0, 0), 1e-6 * std::sqrt(C(2, 2)));
    }
  // The level-1 contour matches the scan: ΔNLL(±σ) = ½.
  EXPECT_NEAR(scan.values[1], 0.5, 1e-7);
}
TEST(RabbitFit, InterruptedRunLeavesNoFile) {
  auto dir = scratch_dir("cli_interrupt");
  const std::string exe = (rabbit::test::binary_dir() / "rabbit_fit").string();
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    int devnull = open("/dev/null", O_WRONLY);
    dup2(devnull, 1);
    dup2(devnull, 2);
    const std::string out = dir.string();
    const std::string in = example_tensor();
    execl(exe.c_str(), exe.c_str(), in.c_str(), "-t", "0", "--scan", "--scanPoints", "4001", "-o",
          out.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  // Wait until the temporary result file exists, then interrupt.
  bool saw_tmp = false;
  for (int i = 0; i < 200 && !saw_tmp; ++i) {
    usleep(25000);
    for (const auto& e : fs::directory_iterator(dir))
      if (e.path().filename().string().find(".tmp") != std::string::npos) saw_tmp = true;
  }
  kill(pid, SIGINT);
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(saw_tmp);
  EXPECT_TRUE(WIFSIGNALED(status));
  EXPECT_TRUE(fs::is_empty(dir));
}
TEST(RabbitFit, RunControlOptions) {
  auto dir = scratch_dir("cli_run_control");
  const std::string tensor = write_linear_tensor(dir);
  const std::string base = tensor + " --chisqFit --allowNegativeParam --noBinByBinStat -o " + dir.string();

  // --prefitOnly: prefit values only, no postfit entries.
  auto r = run_rabbit_fit(base + " -t 0 --prefitOnly -p prefit");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  {
    ResultReader f((dir / "fitresults_prefit.hdf5").string());
    EXPECT_TRUE(f.exists("results/parms_prefit"));
    EXPECT_FALSE(f.exists("results/parms"));
    EXPECT_FALSE(f.exists("results/nllvalreduced"));
  }

  // --expectSignal and --setConstraintMinimum move the defaults; Asimov stays at them.
  r = run_rabbit_fit_captured(base +
                              " -t -1 --expectSignal sig 2 --setConstraintMinimum shape 0.5 -p defaults");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  {
    ResultReader f((dir / "fitresults_defaults.hdf5").string());
    auto p = f.hist("results_asimov/parms");
    EXPECT_EQ(p.values[0], 2.0);
    EXPECT_EQ(p.values[2], 0.5);
  }
  r = run_rabbit_fit_captured(base + " -t -1 --setConstraintMinimum nope 0.5 -p bad");
  EXPECT_EQ(r.exit_code, 2);
  // The error is one line, the last one (info lines of the reader may precede it).
  auto last = r.output.rfind("rabbit_fit: error: ");
  ASSERT_NE(last, std::string::npos) << r.output;
  EXPECT_EQ(r.output.find('\n', last), r.output.size() - 1) << r.output;
  EXPECT_NE(r.output.find("nope", last), std::string::npos);

  // --freezeParameters: the frozen parameter stays at its start, keeps its prefit variance, and the
  // others' covariance is the inverse of the floating block.
  r = run_rabbit_fit_captured(base + " -t 0 --unblind --freezeParameters 'sha.*' --doImpacts -p frozen");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ResultReader fz((dir / "fitresults_frozen.hdf5").string());
  auto pz = fz.hist("results/parms");
  EXPECT_EQ(pz.values[2], 0.0);
  EXPECT_EQ(pz.variances[2], 1.0);
  auto cz = fz.hist("results/cov");
  EXPECT_EQ(cz.values[0 * 3 + 2], 0.0);
  auto iz = fz.hist("results/impacts");
  EXPECT_EQ(iz.values[2], 0.0);  // a frozen parameter has no traditional impact

  // --noHessian: the POI variance from CG equals the dense covariance diagonal; others are NaN.
  r = run_rabbit_fit_captured(base + " -t 0 --unblind -p dense");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = run_rabbit_fit_captured(base + " -t 0 --unblind --noHessian -p cg");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ResultReader fd((dir / "fitresults_dense.hdf5").string()), fc((dir / "fitresults_cg.hdf5").string());
  auto pd = fd.hist("results/parms"), pc = fc.hist("results/parms");
  EXPECT_LT(relative_error(pd.variances[0], pc.variances[0]), 1e-8);
  EXPECT_TRUE(std::isnan(pc.variances[1]));
  EXPECT_FALSE(fc.exists("results/cov"));
  EXPECT_NEAR(pd.values[0], pc.values[0], 1e-8);

  // Blinding: without --unblind the data fit of the POI is shifted by the hidden offset, and the
  // fitted expectation (hence the NLL) is the same.
  r = run_rabbit_fit_captured(base + " -t 0 -p blinded");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ResultReader fb((dir / "fitresults_blinded.hdf5").string());
  EXPECT_GT(std::abs(fb.hist("results/parms").values[0] - pd.values[0]), 1e-6);
  EXPECT_NEAR(fb.scalar("results/nllvalreduced"), fd.scalar("results/nllvalreduced"), 1e-8);

  // -v 4 logs every iteration with the loss, its change, the radius, |g| and the time.
  r = run_rabbit_fit_captured(base + " -t 0 --unblind -v 4 -p verbose");
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_NE(r.output.find("Iteration 1: loss "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("radius="), std::string::npos);
  EXPECT_NE(r.output.find("seconds total time"), std::string::npos);
}
TEST(RabbitFit, PseudoData) {
  auto dir = scratch_dir("cli_pseudodata");
  rabbit::TensorWriter w;
  w.add_channel("ch0", {rabbit::axis::regular(3, 0, 3, "x")});
  w.add_data("ch0", {20, 30, 25});
  w.add_pseudodata("original", "ch0", {22, 28, 26});
  w.add_pseudodata("other", "ch0", {18, 33, 24});
  w.add_process("ch0", "sig", {5, 10, 5}, true);
  w.add_process("ch0", "bkg", {15, 20, 20});
  w.add_norm_systematic("bkg_norm", {"bkg"}, "ch0", {1.1});
  const std::string path = (dir / "pd.hdf5").string();
  w.write(path);
  auto r = run_rabbit_fit(path + " -t 0 --unblind --pseudoData other -o " + dir.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ResultReader f((dir / "fitresults.hdf5").string());
  EXPECT_EQ(f.result_groups(), std::vector<std::string>({"results_other"}));
  r = run_rabbit_fit_captured(path + " -t 0 --unblind --pseudoData -o " + dir.string() + " -p all");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ResultReader fa((dir / "fitresults_all.hdf5").string());
  EXPECT_EQ(fa.result_groups(), std::vector<std::string>({"results_original", "results_other"}));
  EXPECT_NEAR(fa.hist("results_other/parms").values[0], f.hist("results_other/parms").values[0], 1e-10);
  r = run_rabbit_fit_captured(path + " -t 0 --pseudoData nope -o " + dir.string() + " -p nope");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("nope"), std::string::npos);
}
TEST(RabbitFit, TwoShardsGiveTheSameResult) {
  auto dir = scratch_dir("cli_shards");
  const std::string args = example_tensor() +
                           " -t 0 --unblind --doImpacts --globalImpacts --gaussianGlobalImpacts --saveHists "
                           "--saveHistsPerProcess --computeHistErrors --computeHistErrorsPerProcess -o " +
                           dir.string();
  auto r1 = run_rabbit_fit(args + " -p one");
  ASSERT_EQ(r1.exit_code, 0) << r1.output;
  auto r2 = run_rabbit_fit_captured(args + " -p two --nDevices 2");
  ASSERT_EQ(r2.exit_code, 0) << r2.output;
  ResultReader f1((dir / "fitresults_one.hdf5").string()), f2((dir / "fitresults_two.hdf5").string());
  for (const char* h :
       {"results/parms", "results/global_impacts_grouped", "results/gaussian_global_impacts_grouped",
        "results/mappings/BaseMapping/channels/ch1/hist_postfit",
        "results/mappings/BaseMapping/channels/ch0_masked/hist_postfit_inclusive"}) {
    auto a = f1.hist(h), b = f2.hist(h);
    ASSERT_EQ(a.values.size(), b.values.size()) << h;
    // The shards sum in another order, so the minimizer stops at a slightly different point:
    // docs/validation.md "Tolerances" (values to 1e-6 of their uncertainty, the rest 1e-5 relative).
    for (size_t i = 0; i < a.values.size(); ++i) {
      const double tol = a.variances.empty()
                             ? 1e-5 * std::abs(a.values[i]) + 1e-12
                             : std::max(1e-5 * std::abs(a.values[i]), 1e-5 * std::sqrt(a.variances[i]));
      EXPECT_NEAR(a.values[i], b.values[i], tol) << h << "[" << i << "]";
      if (!a.variances.empty()) {
        EXPECT_LT(relative_error(a.variances[i], b.variances[i]), 1e-5) << h << "[" << i << "]";
      }
    }
  }
}
TEST(RabbitFit, NoPostfitProfileBB) {
  auto dir = scratch_dir("cli_noprofile");
  const std::string args =
      example_tensor() + " -t 0 --unblind --saveHists --computeHistErrors -o " + dir.string();
  auto r1 = run_rabbit_fit(args + " -p prof");
  ASSERT_EQ(r1.exit_code, 0) << r1.output;
  auto r2 = run_rabbit_fit_captured(args + " -p noprof --noPostfitProfileBB");
  ASSERT_EQ(r2.exit_code, 0) << r2.output;
  EXPECT_EQ(r2.output.find("profile beta"), std::string::npos);
  ResultReader f1((dir / "fitresults_prof.hdf5").string()), f2((dir / "fitresults_noprof.hdf5").string());
  EXPECT_EQ(f1.scalar("results/postfit_profile"), 1.0);
  EXPECT_EQ(f2.scalar("results/postfit_profile"), 0.0);
  EXPECT_EQ(f1.hist("results/parms").values, f2.hist("results/parms").values);
  // Without the β profile the postfit histogram is the β = β⁰ expectation at x̂, which differs.
  auto a = f1.hist("results/mappings/BaseMapping/channels/ch0/hist_postfit_inclusive");
  auto b = f2.hist("results/mappings/BaseMapping/channels/ch0/hist_postfit_inclusive");
  double maxdiff = 0.0;
  for (size_t i = 0; i < a.values.size(); ++i)
    maxdiff = std::max(maxdiff, std::abs(a.values[i] - b.values[i]));
  EXPECT_GT(maxdiff, 1e-3);
}
TEST(RabbitFit, ShardingRefusalsComeBeforeTheFit) {
  auto dir = scratch_dir("cli_shard_refusal");
  auto r = run_rabbit_fit(example_tensor() + " -t 0 --covarianceFit --nDevices 2 -o " + dir.string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--nDevices 2 (multi-device mode) is incompatible with: --covarianceFit"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("Perform iterative fit"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(dir / "fitresults.hdf5"));
}
namespace {

// Two processes with MC-stat variances: bins 0 and 1 have few effective MC events (kstat ≈ 2 and
// 4); the others have kstat ≥ 100. zero_low_kstat writes sumw2 = 0 there instead (masked by
// docs/likelihood.md "Per-entry BB statistics").
std::string write_bb_tensor(const fs::path& dir, bool zero_low_kstat) {
  rabbit::TensorWriter w(rabbit::SystematicType::log_normal);
  w.add_channel("ch0", {rabbit::axis::regular(6, 0, 6, "x")});
  w.add_data("ch0", {118, 96, 104, 110, 85, 63});
  std::vector<double> sig_var = {12.5, 25.0, 0.2, 0.3, 0.2, 0.1};
  std::vector<double> bkg_var = {5000.0, 2000.0, 40.0, 30.0, 20.0, 10.0};
  if (zero_low_kstat) sig_var[0] = sig_var[1] = bkg_var[0] = bkg_var[1] = 0.0;
  w.add_process("ch0", "sig", kSig, true, sig_var);
  w.add_process("ch0", "bkg", kBkg, false, bkg_var);
  rabbit::SystematicOptions all;
  all.groups = std::vector<std::string>{"all"};
  w.add_norm_systematic("lumi", {"sig", "bkg"}, "ch0", {1.05}, all);
  const std::string path = (dir / (zero_low_kstat ? "bb_zeroed.hdf5" : "bb.hdf5")).string();
  w.write(path);
  return path;
}

}  // namespace

TEST(RabbitFit, MinBBKstatMasksLowStatisticsEntries) {
  // kstat of bins 0/1: (5+100)²/5012.5 ≈ 2.2 and (10+90)²/2025 ≈ 4.9; bins 2..5 have kstat > 100.
  // --minBBKstat 10 fixes those two β at β⁰ = 1, exactly as zero sumw2 does (docs/likelihood.md "Per-entry BB
  // statistics").
  auto dir = scratch_dir("cli_minbbkstat");
  const std::string full = write_bb_tensor(dir, false), zeroed = write_bb_tensor(dir, true);
  const std::string common = " -t 0 --unblind -o " + dir.string();
  auto r = run_rabbit_fit(full + common + " -p default");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = run_rabbit_fit_captured(full + common + " --minBBKstat 10 -p masked");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = run_rabbit_fit_captured(zeroed + common + " -p zeroed");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = run_rabbit_fit_captured(full + common + " --minBBKstat 1 -p low");  // below every kstat: nothing masked
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ResultReader fd((dir / "fitresults_default.hdf5").string()), fm((dir / "fitresults_masked.hdf5").string()),
      fz((dir / "fitresults_zeroed.hdf5").string()), fl((dir / "fitresults_low.hdf5").string());
  const auto pd = fd.hist("results/parms"), pm = fm.hist("results/parms"), pz = fz.hist("results/parms"),
             pl = fl.hist("results/parms");
  ASSERT_EQ(pm.values.size(), pz.values.size());
  for (size_t i = 0; i < pm.values.size(); ++i) {
    EXPECT_NEAR(pm.values[i], pz.values[i], 1e-6 * std::sqrt(pz.variances[i])) << i;
    EXPECT_LT(relative_error(pm.variances[i], pz.variances[i]), 1e-6) << i;
    EXPECT_EQ(pl.values[i], pd.values[i]) << i;
  }
  EXPECT_NEAR(fm.scalar("results/nllvalreduced"), fz.scalar("results/nllvalreduced"), 1e-8);
  // Masking changes the fit: the POI moves by a visible fraction of its uncertainty.
  EXPECT_GT(std::abs(pm.values[0] - pd.values[0]), 1e-3 * std::sqrt(pd.variances[0]));
  EXPECT_GT(std::abs(fm.scalar("results/nllvalreduced") - fd.scalar("results/nllvalreduced")), 1e-6);
}
TEST(RabbitFit, BlindingGroupsShareOneOffset) {
  // The example's NOIs slope_signal and slope_signal_ch0: the blinded x is x_true − o, so the
  // difference to an unblinded fit is the offset; one group gives both the same offset.
  auto dir = scratch_dir("cli_blinding_group");
  const std::string base = example_tensor() + " -t 0 -o " + dir.string();
  auto r = run_rabbit_fit(base + " --unblind -p unblinded");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = run_rabbit_fit_captured(base + " -p blinded");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = run_rabbit_fit_captured(base + " --blindingGroup 'slope_signal.*' -p grouped");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ResultReader fu((dir / "fitresults_unblinded.hdf5").string()),
      fb((dir / "fitresults_blinded.hdf5").string()), fg((dir / "fitresults_grouped.hdf5").string());
  const auto pu = fu.hist("results/parms"), pb = fb.hist("results/parms"), pg = fg.hist("results/parms");
  const auto& names = pu.axis_labels.at(0);
  const auto index = [&](const std::string& n) {
    return static_cast<size_t>(std::find(names.begin(), names.end(), n) - names.begin());
  };
  const size_t a = index("slope_signal"), b = index("slope_signal_ch0");
  ASSERT_LT(a, names.size());
  ASSERT_LT(b, names.size());
  const double tol = 1e-4;
  const double oa_plain = pu.values[a] - pb.values[a], ob_plain = pu.values[b] - pb.values[b];
  const double oa_group = pu.values[a] - pg.values[a], ob_group = pu.values[b] - pg.values[b];
  EXPECT_GT(std::abs(oa_plain - ob_plain), 0.1);  // separate seeds: different offsets
  EXPECT_NEAR(oa_group, ob_group, tol);           // one group seed: one offset
  EXPECT_GT(std::abs(oa_group - oa_plain), 0.1);  // and not the per-name one
  EXPECT_NEAR(fg.scalar("results/nllvalreduced"), fu.scalar("results/nllvalreduced"), 1e-8);
  EXPECT_NEAR(fb.scalar("results/nllvalreduced"), fu.scalar("results/nllvalreduced"), 1e-8);

  r = run_rabbit_fit_captured(base + " --unblind slope_signal --blindingGroup 'slope_signal.*' -p both");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  // The model is built (and the log written) before the check: the error is the one last line.
  const auto last_line = r.output.substr(r.output.rfind('\n', r.output.size() - 2) + 1);
  EXPECT_EQ(
      last_line.rfind("rabbit_fit: error: --unblind and --blindingGroup both match: slope_signal (group "
                      "'slope_signal.*')",
                      0),
      0u)
      << r.output;
  EXPECT_EQ(std::count(last_line.begin(), last_line.end(), '\n'), 1) << r.output;
  EXPECT_FALSE(fs::exists(dir / "fitresults_both.hdf5"));
}
