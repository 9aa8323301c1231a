// rabbit_fit end to end: the built executable on generated tensors, checking exit codes, messages
// and stored values (docs/user-guide.md "The run"; docs/output-format.md "Definitions").
#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <Eigen/Dense>
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
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
#include "support/test_paths.hpp"

namespace fs = std::filesystem;
using rabbit::result::ResultReader;
using rabbit::test::relative_error;

namespace {

struct RunResult {
  int code = -1;
  std::string output;  // stdout + stderr
};

RunResult run_fit(const std::string& args) {
  const auto r = rabbit::test::run_command((rabbit::test::binary_dir() / "rabbit_fit").string() + " " + args);
  return {r.exit_code, r.output};
}

std::string example() { return (rabbit::test::source_dir() / "examples" / "example_tensor.hdf5").string(); }

// The linear model: additive ("normal") symmetric systematics, one signal with x = mu
// (--allowNegativeParam), chi2 data term, no MC stat: the NLL is exactly quadratic.
const std::vector<double> kSig = {5, 10, 20, 30, 20, 10};
const std::vector<double> kBkg = {100, 90, 80, 70, 60, 50};
const std::vector<double> kShape = {4, 2, 1, -1, -2, -4};  // additive shift per unit of "shape"
const std::vector<double> kData = {112, 104, 98, 112, 83, 58};

std::string write_linear_tensor(const fs::path& dir) {
  rabbit::TensorWriter w(rabbit::SystematicType::normal);
  w.add_channel("ch0", {rabbit::axis::regular(6, 0, 6, "x")});
  w.add_data("ch0", kData);
  w.add_process("ch0", "sig", kSig, true);
  w.add_process("ch0", "bkg", kBkg);
  rabbit::SystematicOptions all;
  all.groups = std::vector<std::string>{"all"};
  std::vector<double> shape_var(6);
  for (int b = 0; b < 6; ++b) shape_var[b] = kBkg[b] + kShape[b];
  w.add_systematic("shape", "bkg", "ch0", shape_var, all);
  w.add_norm_systematic("lumi", {"sig", "bkg"}, "ch0", {1.05}, all);
  const std::string path = (dir / "linear.hdf5").string();
  w.write(path);
  return path;
}

}  // namespace

TEST(RabbitFit, BadArgumentsGiveOneLineAndExitCode) {
  auto r = run_fit("--noSuchOption x.hdf5");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.output.rfind("rabbit_fit: error: ", 0), 0u) << r.output;
  EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;

  auto dir = rabbit::test::scratch_dir("cli_bad_input");
  r = run_fit((dir / "missing.hdf5").string() + " -o " + dir.string());
  EXPECT_EQ(r.code, 3) << r.output;
  EXPECT_NE(r.output.find("rabbit_fit: error: "), std::string::npos);
  EXPECT_FALSE(fs::exists(dir / "fitresults.hdf5"));

  r = run_fit(example() + " -o " + dir.string() + " --scan noSuchParameter");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("--scan: unknown parameter 'noSuchParameter'"), std::string::npos) << r.output;
  // The failed run leaves nothing under the final name, nor its temporary file.
  EXPECT_TRUE(fs::is_empty(dir)) << r.output;

  r = run_fit(example() + " --asymImpacts");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output.find("option --asymImpacts is not implemented yet"), std::string::npos);

  r = run_fit("--help");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.output.find("--computeHistErrorsPerProcess"), std::string::npos);
}

TEST(RabbitFit, AsimovIsAtDefaultsWithInverseHessianUncertainties) {
  auto dir = rabbit::test::scratch_dir("cli_asimov");
  auto r = run_fit(example() + " -t -1 --doImpacts -o " + dir.string());
  ASSERT_EQ(r.code, 0) << r.output;
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
  auto input = std::make_shared<rabbit::FitInputData>(rabbit::read_fit_input(example()));
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
  auto dir = rabbit::test::scratch_dir("cli_linear");
  const std::string tensor = write_linear_tensor(dir);
  auto r = run_fit(tensor + " -t 0 --unblind --chisqFit --allowNegativeParam --noBinByBinStat --doImpacts "
                            "--globalImpacts --gaussianGlobalImpacts --saveHists --computeHistErrors --computeHistCov "
                            "--computeVariations --scan sig --scanPoints 5 --scanRange 2 --contourScan sig --contourLevels 1 2 -o " +
                   dir.string());
  ASSERT_EQ(r.code, 0) << r.output;
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
  auto glg = f.hist("results/global_impacts_grouped"), gag = f.hist("results/gaussian_global_impacts_grouped");
  ASSERT_EQ(glg.axis_labels[1], std::vector<std::string>({"all", "stat"}));
  for (size_t i = 0; i < glg.values.size(); ++i) EXPECT_NEAR(glg.values[i], gag.values[i], 1e-7 * sigma) << i;
  EXPECT_LT(relative_error(glg.values[0] * glg.values[0] + glg.values[1] * glg.values[1], var_sig), 1e-9);

  // Traditional grouped impacts: with every nuisance in one group, group ⊕ stat = total.
  auto tg = f.hist("results/impacts_grouped");
  ASSERT_EQ(tg.axis_labels[1], std::vector<std::string>({"all", "stat"}));
  EXPECT_LT(relative_error(tg.values[0] * tg.values[0] + tg.values[1] * tg.values[1], var_sig), 1e-9);

  // Histogram errors = J C Jᵀ with the explicit Jacobian of ν = x_sig S + B + θ_shape Δ + θ_lumi 0.05 (S·x_sig + B).
  auto cov = f.hist("results/cov");
  Eigen::Map<const Eigen::Matrix<double, 3, 3, Eigen::RowMajor>> C(cov.values.data());
  auto post = f.hist("results/mappings/BaseMapping/channels/ch0/hist_postfit_inclusive");
  auto hcov = f.hist("results/mappings/BaseMapping/hist_postfit_inclusive_cov");
  const double mu = parms.values[0], lumi = parms.values[1], shape = parms.values[2];
  Eigen::MatrixXd J(6, 3);
  for (int b = 0; b < 6; ++b) {
    const double nominal = mu * kSig[b] + kBkg[b];
    EXPECT_NEAR(post.values[b], nominal + shape * kShape[b] + lumi * 0.05 * (kSig[b] + kBkg[b]), 1e-9 * nominal);
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

TEST(RabbitFit, LikelihoodVariantsRun) {
  auto dir = rabbit::test::scratch_dir("cli_variants");
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
      {"poisson_gamma_full", false, rabbit::SystematicType::log_normal, true, false, "--binByBinStatMode full --binByBinStatType gamma"},
      {"poisson_mult_full", true, rabbit::SystematicType::log_normal, true, false, "--binByBinStatMode full"},
      {"poisson_additive", false, rabbit::SystematicType::log_normal, false, false, "--binByBinStatType normal-additive"},
      {"chisq_normal", false, rabbit::SystematicType::normal, false, false, "--chisqFit --binByBinStatType normal-multiplicative"},
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
    auto r = run_fit(path + " -t -1 0 --unblind --doImpacts --globalImpacts --saveHists --saveHistsPerProcess "
                            "--computeHistErrors --computeHistErrorsPerProcess --computeHistCov --computeVariations --fullNll -p " + v.name + " -o " +
                     dir.string() + " " + v.args);
    ASSERT_EQ(r.code, 0) << v.name << "\n" << r.output;
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
    for (int b = 0; b < 5; ++b) EXPECT_LT(relative_error(hc.values[b * 7 + b], hi.variances[b]), 1e-10) << v.name;
    for (int b = 0; b < 2; ++b) EXPECT_LT(relative_error(hc.values[(5 + b) * 7 + 5 + b], hm.variances[b]), 1e-10) << v.name;
    // Per-process sums: the inclusive value is the sum of the processes.
    for (int b = 0; b < 5; ++b) EXPECT_NEAR(hp.values[b * 2] + hp.values[b * 2 + 1], hi.values[b], 1e-9 * hi.values[b]);
    EXPECT_GT(f.scalar("results/mappings/BaseMapping/chi2"), 0.0) << v.name;
  }
}

TEST(RabbitFit, InterruptedRunLeavesNoFile) {
  auto dir = rabbit::test::scratch_dir("cli_interrupt");
  const std::string exe = (rabbit::test::binary_dir() / "rabbit_fit").string();
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    int devnull = open("/dev/null", O_WRONLY);
    dup2(devnull, 1);
    dup2(devnull, 2);
    const std::string out = dir.string();
    const std::string in = example();
    execl(exe.c_str(), exe.c_str(), in.c_str(), "-t", "0", "--scan", "--scanPoints", "4001", "-o", out.c_str(),
          static_cast<char*>(nullptr));
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
  auto dir = rabbit::test::scratch_dir("cli_run_control");
  const std::string tensor = write_linear_tensor(dir);
  const std::string base = tensor + " --chisqFit --allowNegativeParam --noBinByBinStat -o " + dir.string();

  // --prefitOnly: prefit values only, no postfit entries.
  auto r = run_fit(base + " -t 0 --prefitOnly -p prefit");
  ASSERT_EQ(r.code, 0) << r.output;
  {
    ResultReader f((dir / "fitresults_prefit.hdf5").string());
    EXPECT_TRUE(f.exists("results/parms_prefit"));
    EXPECT_FALSE(f.exists("results/parms"));
    EXPECT_FALSE(f.exists("results/nllvalreduced"));
  }

  // --expectSignal and --setConstraintMinimum move the defaults; Asimov stays at them.
  r = run_fit(base + " -t -1 --expectSignal sig 2 --setConstraintMinimum shape 0.5 -p defaults");
  ASSERT_EQ(r.code, 0) << r.output;
  {
    ResultReader f((dir / "fitresults_defaults.hdf5").string());
    auto p = f.hist("results_asimov/parms");
    EXPECT_EQ(p.values[0], 2.0);
    EXPECT_EQ(p.values[2], 0.5);
  }
  r = run_fit(base + " -t -1 --setConstraintMinimum nope 0.5 -p bad");
  EXPECT_EQ(r.code, 2);
  // The error is one line, the last one (info lines of the reader may precede it).
  auto last = r.output.rfind("rabbit_fit: error: ");
  ASSERT_NE(last, std::string::npos) << r.output;
  EXPECT_EQ(r.output.find('\n', last), r.output.size() - 1) << r.output;
  EXPECT_NE(r.output.find("nope", last), std::string::npos);

  // --freezeParameters: the frozen parameter stays at its start, keeps its prefit variance, and the
  // others' covariance is the inverse of the floating block.
  r = run_fit(base + " -t 0 --unblind --freezeParameters 'sha.*' --doImpacts -p frozen");
  ASSERT_EQ(r.code, 0) << r.output;
  ResultReader fz((dir / "fitresults_frozen.hdf5").string());
  auto pz = fz.hist("results/parms");
  EXPECT_EQ(pz.values[2], 0.0);
  EXPECT_EQ(pz.variances[2], 1.0);
  auto cz = fz.hist("results/cov");
  EXPECT_EQ(cz.values[0 * 3 + 2], 0.0);
  auto iz = fz.hist("results/impacts");
  EXPECT_EQ(iz.values[2], 0.0);  // a frozen parameter has no traditional impact

  // --noHessian: the POI variance from CG equals the dense covariance diagonal; others are NaN.
  r = run_fit(base + " -t 0 --unblind -p dense");
  ASSERT_EQ(r.code, 0) << r.output;
  r = run_fit(base + " -t 0 --unblind --noHessian -p cg");
  ASSERT_EQ(r.code, 0) << r.output;
  ResultReader fd((dir / "fitresults_dense.hdf5").string()), fc((dir / "fitresults_cg.hdf5").string());
  auto pd = fd.hist("results/parms"), pc = fc.hist("results/parms");
  EXPECT_LT(relative_error(pd.variances[0], pc.variances[0]), 1e-8);
  EXPECT_TRUE(std::isnan(pc.variances[1]));
  EXPECT_FALSE(fc.exists("results/cov"));
  EXPECT_NEAR(pd.values[0], pc.values[0], 1e-8);

  // Blinding: without --unblind the data fit of the POI is shifted by the hidden offset, and the
  // fitted expectation (hence the NLL) is the same.
  r = run_fit(base + " -t 0 -p blinded");
  ASSERT_EQ(r.code, 0) << r.output;
  ResultReader fb((dir / "fitresults_blinded.hdf5").string());
  EXPECT_GT(std::abs(fb.hist("results/parms").values[0] - pd.values[0]), 1e-6);
  EXPECT_NEAR(fb.scalar("results/nllvalreduced"), fd.scalar("results/nllvalreduced"), 1e-8);

  // -v 4 logs every iteration with the loss, its change, the radius, |g| and the time.
  r = run_fit(base + " -t 0 --unblind -v 4 -p verbose");
  ASSERT_EQ(r.code, 0);
  EXPECT_NE(r.output.find("Iteration 1: loss "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("radius="), std::string::npos);
  EXPECT_NE(r.output.find("seconds total time"), std::string::npos);
}

TEST(RabbitFit, PseudoData) {
  auto dir = rabbit::test::scratch_dir("cli_pseudodata");
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
  auto r = run_fit(path + " -t 0 --unblind --pseudoData other -o " + dir.string());
  ASSERT_EQ(r.code, 0) << r.output;
  ResultReader f((dir / "fitresults.hdf5").string());
  EXPECT_EQ(f.result_groups(), std::vector<std::string>({"results_other"}));
  r = run_fit(path + " -t 0 --unblind --pseudoData -o " + dir.string() + " -p all");
  ASSERT_EQ(r.code, 0) << r.output;
  ResultReader fa((dir / "fitresults_all.hdf5").string());
  EXPECT_EQ(fa.result_groups(), std::vector<std::string>({"results_original", "results_other"}));
  EXPECT_NEAR(fa.hist("results_other/parms").values[0], f.hist("results_other/parms").values[0], 1e-10);
  r = run_fit(path + " -t 0 --pseudoData nope -o " + dir.string() + " -p nope");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.output.find("nope"), std::string::npos);
}

TEST(RabbitFit, ToysAreDeterministic) {
  auto dir = rabbit::test::scratch_dir("cli_toys");
  const std::string tensor = write_linear_tensor(dir);
  const std::string base = tensor + " --chisqFit --allowNegativeParam --noBinByBinStat --toysDataRandomize normal -o " +
                           dir.string();
  auto r = run_fit(base + " -t 3 --seed 7 -p a");
  ASSERT_EQ(r.code, 0) << r.output;
  r = run_fit(base + " -t 2 --seed 7 -p b");
  ASSERT_EQ(r.code, 0) << r.output;
  r = run_fit(base + " -t 2 --seed 8 -p c");
  ASSERT_EQ(r.code, 0) << r.output;
  ResultReader fa((dir / "fitresults_a.hdf5").string()), fb((dir / "fitresults_b.hdf5").string()),
      fc((dir / "fitresults_c.hdf5").string());
  EXPECT_EQ(fa.hist("results_toy2/parms").values, fb.hist("results_toy2/parms").values);  // same seed
  EXPECT_NE(fa.hist("results_toy2/parms").values, fc.hist("results_toy2/parms").values);  // other seed
  EXPECT_EQ(fa.hist("results_toy2/parms_prefit").values, fa.hist("results_toy1/parms_prefit").values);
  // The statistics of toys are tested on 1,000 toys in toys_test.cpp.
  r = run_fit(tensor + " --covarianceFit --noBinByBinStat -t 1 -o " + dir.string() + " -p d");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output.find("--toysDataRandomize poisson is not allowed with --covarianceFit"), std::string::npos)
      << r.output;
}

TEST(RabbitFit, TwoShardsGiveTheSameResult) {
  auto dir = rabbit::test::scratch_dir("cli_shards");
  const std::string args = example() + " -t 0 --unblind --doImpacts --globalImpacts --gaussianGlobalImpacts --saveHists "
                                       "--saveHistsPerProcess --computeHistErrors --computeHistErrorsPerProcess -o " + dir.string();
  auto r1 = run_fit(args + " -p one");
  ASSERT_EQ(r1.code, 0) << r1.output;
  auto r2 = run_fit(args + " -p two --nDevices 2");
  ASSERT_EQ(r2.code, 0) << r2.output;
  ResultReader f1((dir / "fitresults_one.hdf5").string()), f2((dir / "fitresults_two.hdf5").string());
  for (const char* h : {"results/parms", "results/global_impacts_grouped", "results/gaussian_global_impacts_grouped",
                        "results/mappings/BaseMapping/channels/ch1/hist_postfit",
                        "results/mappings/BaseMapping/channels/ch0_masked/hist_postfit_inclusive"}) {
    auto a = f1.hist(h), b = f2.hist(h);
    ASSERT_EQ(a.values.size(), b.values.size()) << h;
    // The shards sum in another order, so the minimizer stops at a slightly different point:
    // docs/validation.md "Tolerances" (values to 1e-6 of their uncertainty, the rest 1e-5 relative).
    for (size_t i = 0; i < a.values.size(); ++i) {
      const double tol = a.variances.empty() ? 1e-5 * std::abs(a.values[i]) + 1e-12
                                             : std::max(1e-5 * std::abs(a.values[i]), 1e-5 * std::sqrt(a.variances[i]));
      EXPECT_NEAR(a.values[i], b.values[i], tol) << h << "[" << i << "]";
      if (!a.variances.empty()) {
        EXPECT_LT(relative_error(a.variances[i], b.variances[i]), 1e-5) << h << "[" << i << "]";
      }
    }
  }
}

TEST(RabbitFit, NoPostfitProfileBB) {
  auto dir = rabbit::test::scratch_dir("cli_noprofile");
  const std::string args = example() + " -t 0 --unblind --saveHists --computeHistErrors -o " + dir.string();
  auto r1 = run_fit(args + " -p prof");
  ASSERT_EQ(r1.code, 0) << r1.output;
  auto r2 = run_fit(args + " -p noprof --noPostfitProfileBB");
  ASSERT_EQ(r2.code, 0) << r2.output;
  EXPECT_EQ(r2.output.find("profile beta"), std::string::npos);
  ResultReader f1((dir / "fitresults_prof.hdf5").string()), f2((dir / "fitresults_noprof.hdf5").string());
  EXPECT_EQ(f1.scalar("results/postfit_profile"), 1.0);
  EXPECT_EQ(f2.scalar("results/postfit_profile"), 0.0);
  EXPECT_EQ(f1.hist("results/parms").values, f2.hist("results/parms").values);
  // Without the β profile the postfit histogram is the β = β⁰ expectation at x̂, which differs.
  auto a = f1.hist("results/mappings/BaseMapping/channels/ch0/hist_postfit_inclusive");
  auto b = f2.hist("results/mappings/BaseMapping/channels/ch0/hist_postfit_inclusive");
  double maxdiff = 0.0;
  for (size_t i = 0; i < a.values.size(); ++i) maxdiff = std::max(maxdiff, std::abs(a.values[i] - b.values[i]));
  EXPECT_GT(maxdiff, 1e-3);
}

TEST(RabbitFit, ShardingRefusalsComeBeforeTheFit) {
  auto dir = rabbit::test::scratch_dir("cli_shard_refusal");
  auto r = run_fit(example() + " -t 0 --covarianceFit --nDevices 2 -o " + dir.string());
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("--nDevices 2 (multi-device mode) is incompatible with: --covarianceFit"), std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("Perform iterative fit"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(dir / "fitresults.hdf5"));
}

TEST(RabbitFit, ThreeMinimizersReachTheSameMinimum) {
  // Issue 4: trust-krylov (GLTR), trust-ncg (Steihaug-CG) and trust-exact (More–Sorensen) on the
  // example model end at the same NLL to 1e-8; parameters agree to a small fraction of their
  // uncertainty (an NLL difference of 1e-8 allows shifts of ~1e-4 σ).
  auto dir = rabbit::test::scratch_dir("cli_three_minimizers");
  const std::string base = example() + " -t 0 --unblind -o " + dir.string();
  std::vector<std::unique_ptr<ResultReader>> results;
  for (const char* method : {"trust-krylov", "trust-ncg", "trust-exact"}) {
    auto r = run_fit(base + " --minimizerMethod " + method + " -p " + method);
    ASSERT_EQ(r.code, 0) << method << ": " << r.output;
    results.push_back(std::make_unique<ResultReader>((dir / (std::string("fitresults_") + method + ".hdf5")).string()));
  }
  const double nll = results[0]->scalar("results/nllvalreduced");
  const auto parms = results[0]->hist("results/parms");
  for (size_t m = 1; m < results.size(); ++m) {
    EXPECT_NEAR(results[m]->scalar("results/nllvalreduced"), nll, 1e-8) << m;
    EXPECT_LT(results[m]->scalar("results/edmval"), 1e-6) << m;
    const auto p = results[m]->hist("results/parms");
    ASSERT_EQ(p.values.size(), parms.values.size());
    for (size_t i = 0; i < p.values.size(); ++i)
      EXPECT_NEAR(p.values[i], parms.values[i], 1e-3 * std::sqrt(parms.variances[i])) << m << " parameter " << i;
  }
}

TEST(RabbitFit, PreconditionerDoesNotChangeTheFit) {
  // The preconditioner is a change of variables only (docs/minimizers.md "Preconditioner"): the same
  // minimum, NLL to 1e-8, with every method and reference matrix.
  auto dir = rabbit::test::scratch_dir("cli_precondition");
  const std::string base = example() + " -t 0 --unblind -o " + dir.string();
  for (const char* method : {"trust-krylov", "trust-exact", "trust-ncg"}) {
    SCOPED_TRACE(method);
    const std::string plain = std::string("plain_") + method;
    auto r = run_fit(base + " --minimizerMethod " + method + " -p " + plain);
    ASSERT_EQ(r.code, 0) << r.output;
    ResultReader ref((dir / ("fitresults_" + plain + ".hdf5")).string());
    const auto ref_parms = ref.hist("results/parms");
    const std::vector<std::pair<std::string, std::string>> variants = {
        {"default", "--precondition -v 4"},  // default scope: the unconstrained parameters, auto blocks
        {"all", "--precondition --preconditionParams '.*' --preconditionBlocks none -v 4"},
        {"gn", "--precondition --preconditionParams '.*' --preconditionFrom gaussnewton --preconditionBlocks "
               "--preconditionBlockThreshold 0.01 -v 4"},
        {"spectral", "--precondition --preconditionParams '.*' --preconditionTransform spectral "
                     "--preconditionRidge 1e-6 -v 4"},
        // "slopes" and "norm" are systematic groups (8 and 1 members), "sig" a parameter name.
        {"groups", "--precondition --preconditionParams slopes norm sig --preconditionBlocks expressions"},
    };
    for (const auto& [tag, args] : variants) {
      SCOPED_TRACE(tag);
      const std::string postfix = tag + "_" + method;
      r = run_fit(base + " --minimizerMethod " + method + " " + args + " -p " + postfix);
      ASSERT_EQ(r.code, 0) << r.output;
      EXPECT_NE(r.output.find("Preconditioned"), std::string::npos) << r.output;  // it was really applied
      if (tag == "groups") {
        EXPECT_NE(r.output.find("Preconditioned 3 of 3 block(s), 10 parameters"), std::string::npos) << r.output;
      }
      ResultReader f((dir / ("fitresults_" + postfix + ".hdf5")).string());
      EXPECT_NEAR(f.scalar("results/nllvalreduced"), ref.scalar("results/nllvalreduced"), 1e-8);
      const auto parms = f.hist("results/parms");
      ASSERT_EQ(parms.values.size(), ref_parms.values.size());
      for (size_t i = 0; i < parms.values.size(); ++i) {
        EXPECT_NEAR(parms.values[i], ref_parms.values[i], 1e-3 * std::sqrt(ref_parms.variances[i])) << i;
        EXPECT_LT(relative_error(parms.variances[i], ref_parms.variances[i]), 1e-5) << i;
      }
    }
  }
  // Bad values are refused before anything is read: exit code 2, one line naming the option.
  for (const std::string bad : {"--preconditionRidge -1", "--preconditionFrom fisher", "--preconditionBlocks diag",
                                "--preconditionBlockThreshold nan"}) {
    auto r = run_fit(base + " --precondition " + bad + " -p bad");
    EXPECT_EQ(r.code, 2) << bad << ": " << r.output;
    EXPECT_EQ(r.output.rfind("rabbit_fit: error: argument --precondition", 0), 0u) << r.output;
    EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
  }
  EXPECT_FALSE(fs::exists(dir / "fitresults_bad.hdf5"));
}

namespace {

// Two processes with MC-stat variances: bins 0 and 1 have few effective MC events (kstat ≈ 2 and
// 4); the others have kstat ≥ 100. zero_low_kstat writes sumw2 = 0 there instead (masked by docs/likelihood.md "Per-entry BB statistics").
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
  // --minBBKstat 10 fixes those two β at β⁰ = 1, exactly as zero sumw2 does (docs/likelihood.md "Per-entry BB statistics").
  auto dir = rabbit::test::scratch_dir("cli_minbbkstat");
  const std::string full = write_bb_tensor(dir, false), zeroed = write_bb_tensor(dir, true);
  const std::string common = " -t 0 --unblind -o " + dir.string();
  auto r = run_fit(full + common + " -p default");
  ASSERT_EQ(r.code, 0) << r.output;
  r = run_fit(full + common + " --minBBKstat 10 -p masked");
  ASSERT_EQ(r.code, 0) << r.output;
  r = run_fit(zeroed + common + " -p zeroed");
  ASSERT_EQ(r.code, 0) << r.output;
  r = run_fit(full + common + " --minBBKstat 1 -p low");  // below every kstat: nothing masked
  ASSERT_EQ(r.code, 0) << r.output;
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
  auto dir = rabbit::test::scratch_dir("cli_blinding_group");
  const std::string base = example() + " -t 0 -o " + dir.string();
  auto r = run_fit(base + " --unblind -p unblinded");
  ASSERT_EQ(r.code, 0) << r.output;
  r = run_fit(base + " -p blinded");
  ASSERT_EQ(r.code, 0) << r.output;
  r = run_fit(base + " --blindingGroup 'slope_signal.*' -p grouped");
  ASSERT_EQ(r.code, 0) << r.output;
  ResultReader fu((dir / "fitresults_unblinded.hdf5").string()), fb((dir / "fitresults_blinded.hdf5").string()),
      fg((dir / "fitresults_grouped.hdf5").string());
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

  r = run_fit(base + " --unblind slope_signal --blindingGroup 'slope_signal.*' -p both");
  EXPECT_EQ(r.code, 2) << r.output;
  // The model is built (and the log written) before the check: the error is the one last line.
  const auto last_line = r.output.substr(r.output.rfind('\n', r.output.size() - 2) + 1);
  EXPECT_EQ(last_line.rfind("rabbit_fit: error: --unblind and --blindingGroup both match: slope_signal (group "
                            "'slope_signal.*')", 0),
            0u)
      << r.output;
  EXPECT_EQ(std::count(last_line.begin(), last_line.end(), '\n'), 1) << r.output;
  EXPECT_FALSE(fs::exists(dir / "fitresults_both.hdf5"));
}

TEST(RabbitFit, GaussNewtonPreconditionerLeavesTheObservedDataAlone) {
  // The Gauss-Newton reference matrix is built by swapping in Asimov data; the stored NLL is
  // evaluated after the fit with whatever the fitter holds, so it must be the data's NLL at x̂.
  auto dir = rabbit::test::scratch_dir("cli_precondition_gn_data");
  auto r = run_fit(example() + " -t -1 0 --unblind --precondition --preconditionParams '.*' --preconditionFrom "
                               "gaussnewton -o " + dir.string());
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("Preconditioned"), std::string::npos) << r.output;
  ResultReader f((dir / "fitresults.hdf5").string());
  const auto parms = f.hist("results/parms");
  auto input = std::make_shared<rabbit::FitInputData>(rabbit::read_fit_input(example()));
  auto model = rabbit::build_model(input, rabbit::ModelOptions{});
  auto fitter = rabbit::make_fitter(model, rabbit::FitterOptions{});
  fitter->set_observed(input->data_obs, Eigen::VectorXd());
  Eigen::VectorXd x = Eigen::Map<const Eigen::VectorXd>(parms.values.data(), static_cast<Eigen::Index>(parms.values.size()));
  EXPECT_LT(relative_error(fitter->value(x), f.scalar("results/nllvalreduced")), 1e-12);
  // And the minimum is the plain fit's.
  r = run_fit(example() + " -t 0 --unblind -o " + dir.string() + " -p plain");
  ASSERT_EQ(r.code, 0) << r.output;
  ResultReader p((dir / "fitresults_plain.hdf5").string());
  EXPECT_NEAR(p.scalar("results/nllvalreduced"), f.scalar("results/nllvalreduced"), 1e-8);
}

TEST(RabbitFit, ToysRandomizeParametersStartElsewhereAndEndAtTheSameMinimum) {
  auto dir = rabbit::test::scratch_dir("cli_toys_randomize_parameters");
  const std::string base = example() + " -t 3 --seed 11 -o " + dir.string();
  auto r = run_fit(base + " -p plain");
  ASSERT_EQ(r.code, 0) << r.output;
  r = run_fit(base + " --toysRandomizeParameters -p rnd1");
  ASSERT_EQ(r.code, 0) << r.output;
  r = run_fit(base + " --toysRandomizeParameters -p rnd2");
  ASSERT_EQ(r.code, 0) << r.output;
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

namespace {

// The plain --externalPostfit layout: top-level datasets x, parms (vlen strings) and optionally cov.
void write_plain_postfit(const std::string& path, const std::vector<std::string>& names, const std::vector<double>& x) {
  rabbit::h5::Handle file(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT));
  const hsize_t n = names.size();
  rabbit::h5::Handle space(H5Screate_simple(1, &n, nullptr));
  rabbit::h5::Handle xs(H5Dcreate2(file, "x", H5T_IEEE_F64LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
  H5Dwrite(xs, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, x.data());
  rabbit::h5::Handle str(H5Tcopy(H5T_C_S1));
  H5Tset_size(str, H5T_VARIABLE);
  std::vector<const char*> ptrs;
  for (const auto& s : names) ptrs.push_back(s.c_str());
  rabbit::h5::Handle ps(H5Dcreate2(file, "parms", str, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
  H5Dwrite(ps, str, H5S_ALL, H5S_ALL, H5P_DEFAULT, ptrs.data());
}

}  // namespace

TEST(RabbitFit, ExternalPostfitReproducesTheLoadedResult) {
  auto dir = rabbit::test::scratch_dir("cli_external_postfit");
  const std::string base = example() + " -t 0 --unblind --saveHists --computeHistErrors -o " + dir.string();
  auto r = run_fit(base + " -p fit");
  ASSERT_EQ(r.code, 0) << r.output;
  const std::string fitted = (dir / "fitresults_fit.hdf5").string();
  // The fit's own result, no refit: x, cov, variances, NLL and postfit histograms are the fit's.
  r = run_fit(base + " -p nofit --noFit --externalPostfit " + fitted);
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("External postfit " + fitted + ": 13 of 13 parameters loaded with their covariance"),
            std::string::npos)
      << r.output;
  // Refit from there: already at the minimum.
  r = run_fit(base + " -p refit --externalPostfit " + fitted + " --externalPostfitResult");
  EXPECT_EQ(r.code, 2) << r.output;  // --externalPostfitResult needs a value
  r = run_fit(base + " -p refit --externalPostfit " + fitted);
  ASSERT_EQ(r.code, 0) << r.output;
  ResultReader ff(fitted), fn((dir / "fitresults_nofit.hdf5").string()), fr((dir / "fitresults_refit.hdf5").string());
  EXPECT_EQ(fn.hist("results/parms").values, ff.hist("results/parms").values);
  EXPECT_EQ(fn.hist("results/parms").variances, ff.hist("results/parms").variances);
  EXPECT_EQ(fn.hist("results/cov").values, ff.hist("results/cov").values);
  EXPECT_EQ(fn.scalar("results/nllvalreduced"), ff.scalar("results/nllvalreduced"));
  const std::string h = "results/mappings/BaseMapping/channels/ch0/hist_postfit_inclusive";
  const auto hf = ff.hist(h), hn = fn.hist(h);
  for (size_t i = 0; i < hf.values.size(); ++i) {
    EXPECT_LT(relative_error(hn.values[i], hf.values[i]), 1e-12) << i;
    EXPECT_LT(relative_error(hn.variances[i], hf.variances[i]), 1e-10) << i;
  }
  EXPECT_NEAR(fr.scalar("results/nllvalreduced"), ff.scalar("results/nllvalreduced"), 1e-10);
  const auto pr = fr.hist("results/parms"), pf = ff.hist("results/parms");
  for (size_t i = 0; i < pf.values.size(); ++i) {
    EXPECT_NEAR(pr.values[i], pf.values[i], 1e-4 * std::sqrt(pf.variances[i])) << i;
    EXPECT_LT(relative_error(pr.variances[i], pf.variances[i]), 1e-5) << i;
  }

  // The plain layout, names in another order and without cov: values mapped by name, the
  // Hessian computed at the loaded point.
  auto names = pf.axis_labels.at(0);
  std::vector<double> x(pf.values.rbegin(), pf.values.rend());
  std::reverse(names.begin(), names.end());
  names.push_back("not_in_this_fit");
  x.push_back(42.0);
  const std::string plain = (dir / "plain.hdf5").string();
  write_plain_postfit(plain, names, x);
  r = run_fit(base + " -p plain --noFit --externalPostfit " + plain);
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("13 of 13 parameters loaded\n"), std::string::npos) << r.output;
  ResultReader fp((dir / "fitresults_plain.hdf5").string());
  const auto pp = fp.hist("results/parms");
  EXPECT_EQ(pp.values, pf.values);
  for (size_t i = 0; i < pf.values.size(); ++i) EXPECT_LT(relative_error(pp.variances[i], pf.variances[i]), 1e-9) << i;
  EXPECT_EQ(fp.scalar("results/nllvalreduced"), ff.scalar("results/nllvalreduced"));

  // A result key that the file does not have, and impacts that would need the skipped Hessian.
  r = run_fit(base + " -p badkey --externalPostfit " + fitted + " --externalPostfitResult nokey");
  EXPECT_EQ(r.code, 3) << r.output;
  EXPECT_NE(r.output.find("no result group results_nokey (available: results)"), std::string::npos) << r.output;
  r = run_fit(base + " -p impacts --noFit --doImpacts --externalPostfit " + fitted);
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("impacts need"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir / "fitresults_impacts.hdf5"));
}
