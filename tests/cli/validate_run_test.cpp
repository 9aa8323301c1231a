// The run's front door (rabbit/cli/validate_run.hpp, docs/user-guide.md "Rules across options"): each
// rule gives its one-line message, on options and a three-bin input built in the test.
#include "rabbit/cli/validate_run.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <typeinfo>
#include <vector>

#include "rabbit/core/error.hpp"
#include "support/exception_message.hpp"

using rabbit::BBMode;
using rabbit::BBType;
using rabbit::DataLikelihood;
using rabbit::FitInputData;
using rabbit::OptionError;
using rabbit::ResourceError;
using rabbit::RunCapabilities;
using rabbit::cli::FitOptions;
using rabbit::test::message_of;

namespace {

// Three observed bins, two processes; every BB entry has sumw = 2, sumw2 = 1 (kstat 4).
FitInputData small_input() {
  FitInputData in;
  in.filename = "in.hdf5";
  in.nbins = in.nbinsfull = 3;
  in.nproc = 2;
  in.data_obs = Eigen::Vector3d(5.0, 6.0, 7.0);
  in.sumw.assign(6, 2.0);
  in.sumw2.assign(6, 1.0);
  in.pseudodatanames = {"ps0", "ps1"};
  in.pseudodata = Eigen::MatrixXd::Constant(3, 2, 4.0);
  return in;
}

RunCapabilities cuda_build() {
  RunCapabilities caps = rabbit::cli::known_capabilities();
  caps.cuda.built = true;
  return caps;
}

RunCapabilities cpu_build() {
  RunCapabilities caps = rabbit::cli::known_capabilities();
  caps.cuda.built = false;
  return caps;
}

std::string rule_error(const FitOptions& o) {
  return message_of<OptionError>([&] { rabbit::cli::check_option_rules(o); });
}

std::string run_error(const FitOptions& o, const FitInputData& in = small_input(),
                      const RunCapabilities& caps = cuda_build()) {
  return message_of<OptionError>([&] { rabbit::cli::validate_run(o, in, caps); });
}

}  // namespace

TEST(ValidateRun, DefaultsPass) {
  FitOptions o;
  EXPECT_NO_THROW(rabbit::cli::validate_run(o, small_input(), cpu_build()));
  EXPECT_NO_THROW(rabbit::cli::validate_run(o, small_input(), cuda_build()));
}

TEST(ValidateRun, ValueRules) {
  const std::vector<std::pair<std::function<void(FitOptions&)>, std::string>> cases = {
      {[](FitOptions& o) { o.model.min_bb_kstat = -1; }, "argument --minBBKstat: must be >= 0, got -1"},
      {[](FitOptions& o) { o.edm_tol = 0; }, "--edmTol must be a positive number, got 0"},
      {[](FitOptions& o) { o.scan_points = 0; }, "argument --scanPoints: must be >= 1"},
      {[](FitOptions& o) { o.stall_rel_tol = -0.5; }, "argument --stallRelTol: must be >= 0"},
      {[](FitOptions& o) { o.n_devices = 0; }, "argument --nDevices: must be >= 1"},
      {[](FitOptions& o) { o.hvp_batch = 0; }, "argument --hvpBatch: must be >= 1"},
      {[](FitOptions& o) { o.n_threads = -1; },
       "argument --nThreads: must be >= 0 (0: the CPUs the process may use)"},
      {[](FitOptions& o) { o.precondition_block_threshold = -0.5; },
       "argument --preconditionBlockThreshold: must be a finite number >= 0, got -0.5"},
      {[](FitOptions& o) { o.precondition_ridge = -1; },
       "argument --preconditionRidge: must be a finite number >= 0, got -1"},
      {[](FitOptions& o) { o.backend = "gpu"; },
       "argument --backend: invalid choice: 'gpu' (choose from 'auto', 'cpu', 'cuda')"},
      {[](FitOptions& o) { o.minimizer_method = "newton"; },
       "argument --minimizerMethod: invalid choice: 'newton'"},
  };
  for (const auto& [change, expected] : cases) {
    FitOptions o;
    change(o);
    const std::string msg = rule_error(o);
    EXPECT_EQ(msg.rfind(expected, 0), 0u) << msg;
    EXPECT_EQ(run_error(o), msg);  // validate_run applies the same rules
  }
}

TEST(ValidateRun, DeviceRules) {
  FitOptions o;
  o.n_devices = 2;
  o.devices = {0, -1};
  EXPECT_EQ(rule_error(o), "argument --devices: negative device index -1");
  o.devices = {0};
  EXPECT_EQ(rule_error(o), "--devices lists 1 indices but --nDevices is 2");
  o.devices = {1, 1};  // two shards on one GPU
  EXPECT_EQ(rule_error(o), "no " + std::string(typeid(OptionError).name()));
  o.devices = {1, 0};
  EXPECT_EQ(rule_error(o), "no " + std::string(typeid(OptionError).name()));
}

TEST(ValidateRun, RulesAcrossOptions) {
  FitOptions o;
  o.model.likelihood = DataLikelihood::covariance;
  o.model.bb_type = BBType::gamma;
  EXPECT_EQ(rule_error(o),
            "--covarianceFit with bin-by-bin statistics requires --binByBinStatType normal-additive, "
            "normal-multiplicative or automatic");
  o.model.bin_by_bin_stat = false;
  o.toys = {-1, 2};
  EXPECT_EQ(rule_error(o), "--toysDataRandomize poisson is not allowed with --covarianceFit");
  o.toys_data_randomize = "normal";
  EXPECT_EQ(rule_error(o), "no " + std::string(typeid(OptionError).name()));

  FitOptions e;
  e.external_postfit_result = "asimov";
  EXPECT_EQ(rule_error(e), "--externalPostfitResult needs --externalPostfit");

  FitOptions h;
  h.no_hessian = true;
  h.do_impacts = h.compute_variations = h.save_hists = h.compute_hist_errors = true;
  h.compute_hist_errors_per_process = h.compute_hist_cov = true;
  h.scan = std::vector<std::string>{};
  h.contour_scan = std::vector<std::string>{"sig"};
  EXPECT_EQ(
      rule_error(h),
      "--noHessian is incompatible with: --doImpacts, --computeVariations, --saveHists (without --noChi2), "
      "--computeHistErrors, --computeHistErrorsPerProcess, --computeHistCov, --scan (without "
      "--scanRangeUsePrefit), --contourScan");
}

TEST(ValidateRun, MultiDeviceRefusalsListEveryOption) {
  FitOptions o;
  o.n_devices = 2;
  o.model.likelihood = DataLikelihood::covariance;
  o.model.regularization = {{"SVD", {"Select", "ch0"}}};
  o.diagnostics = true;
  EXPECT_EQ(run_error(o, small_input(), cpu_build()),
            "--nDevices 2 (multi-device mode) is incompatible with: --covarianceFit (the dense data "
            "covariance couples "
            "all bins); "
            "--diagnostics "
            "with bin-by-bin statistics (the β-space EDM needs the full-length β Hessian; or add "
            "--noBinByBinStat). "
            "These need all bins on one device, which is what sharding exists to avoid. Drop --nDevices (run "
            "single-device), or rerun the step single-device from the fit output.");
  // Without BB the diagnostics run sharded; single-device everything runs.
  FitOptions d;
  d.n_devices = 2;
  d.diagnostics = true;
  d.model.bin_by_bin_stat = false;
  EXPECT_NO_THROW(rabbit::cli::validate_run(d, small_input(), cpu_build()));
  o.n_devices = 1;
  o.model.regularization.clear();
  EXPECT_NO_THROW(rabbit::cli::validate_run(o, small_input(), cpu_build()));
}

TEST(ValidateRun, BackendThisBuildLacks) {
  FitOptions o;
  o.backend = "cuda";
  EXPECT_EQ(message_of<ResourceError>([&] { rabbit::cli::validate_run(o, small_input(), cpu_build()); }),
            "--backend cuda: this build has no CUDA backend (configure with -DRABBIT_CUDA=ON)");
  o.backend = "auto";
  o.n_devices = 2;
  o.devices = {0, 1};
  EXPECT_EQ(message_of<ResourceError>([&] { rabbit::cli::validate_run(o, small_input(), cpu_build()); }),
            "--devices 0,1: this build has no CUDA backend");
  o.backend = "cpu";  // --devices are then not read
  EXPECT_NO_THROW(rabbit::cli::validate_run(o, small_input(), cpu_build()));
}

TEST(ValidateRun, WhatTheCudaBackendCannotDo) {
  FitOptions o;
  o.model.likelihood = DataLikelihood::covariance;
  EXPECT_NO_THROW(rabbit::cli::validate_run(o, small_input(), cuda_build()));  // auto: runs on the CPU
  o.backend = "cuda";
  EXPECT_EQ(run_error(o),
            "--backend cuda does not support --covarianceFit (the dense data covariance is evaluated on "
            "the CPU only); use --backend cpu");
  o.backend = "auto";
  o.devices = {3};
  EXPECT_EQ(run_error(o),
            "--devices 3 selects the CUDA backend, which does not support --covarianceFit (the dense "
            "data covariance is evaluated on the CPU only); drop --devices or use --backend cpu");

  FitOptions r;
  r.backend = "cuda";
  r.model.regularization = {{"SVD", {"Select", "ch0"}}};
  EXPECT_EQ(run_error(r),
            "--backend cuda does not support --regularization SVD (the regularizers read the predicted "
            "yields of all bins, which only the CPU backend evaluates); use --backend cpu");
}

TEST(ValidateRun, TheCudaBackendRefusesBinDependentParamModels) {
  FitOptions o;
  o.model.param_models = {{"Mu", {}}, {"ABCD", {"nonprompt", "ch_A", "ch_B", "ch_C", "ch_D"}}};
  EXPECT_NO_THROW(rabbit::cli::validate_run(o, small_input(), cuda_build()));  // auto: runs on the CPU
  o.n_devices = 2;  // CPU shards evaluate their own bins
  EXPECT_NO_THROW(rabbit::cli::validate_run(o, small_input(), cpu_build()));
  o.n_devices = 1;
  o.backend = "cuda";
  EXPECT_EQ(
      run_error(o),
      "--backend cuda does not support --paramModel ABCD (the GPU kernels take one rate per process, not "
      "per bin); use --backend cpu");
}

TEST(ValidateRun, CudaToysWithMaskedFullModeEntries) {
  FitOptions o;
  o.backend = "cuda";
  o.toys = {1};
  o.model.bb_mode = BBMode::full;
  FitInputData in = small_input();
  EXPECT_NO_THROW(rabbit::cli::validate_run(o, in, cuda_build()));  // no masked entry
  in.sumw2[3] = 0.0;
  const std::string expected =
      "--backend cuda does not support toys (-t N) with --toysSystRandomize frequentist and "
      "--binByBinStatMode full "
      "on an input with masked BB entries (the GPU pipeline does not differentiate BB centres beta0 != 1 on "
      "masked "
      "full-mode entries; or --binByBinStatType normal-additive); use --backend cpu";
  EXPECT_EQ(run_error(o, in), expected);
  // --minBBKstat masks entries too (kstat 4 < 5).
  in = small_input();
  o.model.min_bb_kstat = 5.0;
  EXPECT_EQ(run_error(o, in), expected);
  o.model.bb_type = BBType::normal_additive;
  EXPECT_NO_THROW(rabbit::cli::validate_run(o, in, cuda_build()));
  o.model.bb_type = BBType::automatic;
  o.toys_syst_randomize = "bayesian";
  EXPECT_NO_THROW(rabbit::cli::validate_run(o, in, cuda_build()));
  o.toys_syst_randomize = "frequentist";
  o.backend = "cpu";
  EXPECT_NO_THROW(rabbit::cli::validate_run(o, in, cuda_build()));
}

TEST(ValidateRun, CovarianceFitNeedsPositiveVariancesWithoutTheInverse) {
  FitOptions o;
  o.model.likelihood = DataLikelihood::covariance;
  FitInputData in = small_input();
  in.data_obs[1] = 0.0;
  EXPECT_EQ(run_error(o, in),
            "--covarianceFit: in.hdf5 has no hdata_cov_inv and the fallback diag(1/variance) needs "
            "positive variances (bin 1 has 0)");
  in.data_cov_inv = Eigen::MatrixXd::Identity(3, 3);
  EXPECT_NO_THROW(rabbit::cli::validate_run(o, in, cuda_build()));
}

TEST(ValidateRun, ChisqFitNeedsPositiveCountsInTheDataFit) {
  FitOptions o;
  o.model.likelihood = DataLikelihood::chisq;
  FitInputData in = small_input();
  in.data_obs[2] = 0.0;
  EXPECT_NO_THROW(rabbit::cli::validate_run(o, in, cuda_build()));  // -t -1 only: the data are not fitted
  o.toys = {-1, 0};
  EXPECT_EQ(run_error(o, in),
            "--chisqFit requires all observed counts to be > 0, but hdata_obs of in.hdf5 has 0 in bin 2 (the "
            "fit of -t 0)");
  o.pseudo_data = std::vector<std::string>{};
  EXPECT_NO_THROW(rabbit::cli::validate_run(o, in, cuda_build()));  // the pseudodata replace the data
  in.pseudodata(0, 1) = -1.0;
  EXPECT_EQ(run_error(o, in),
            "--chisqFit requires all observed counts to be > 0, but pseudodata set 'ps1' of in.hdf5 "
            "has -1 in bin 0 (the fit of -t 0)");
  o.pseudo_data = std::vector<std::string>{"ps0"};
  EXPECT_NO_THROW(rabbit::cli::validate_run(o, in, cuda_build()));
}
