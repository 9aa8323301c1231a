// compute_histograms for a mapping of the per-process yields N (needs_processes; docs/architecture.md
// "Process-selecting mappings"): a mapping of ν seen as one of N (∂y/∂N_bp = ∂y/∂ν_b for every process)
// must give what the mapping of ν gives — values, variances, covariance, the global impacts and their
// MC-stat parts, and the Gaussian impacts — which the process path computes through ∂N/∂x, ∂N/∂β and the
// per-bin blocks of H_ββ⁻¹ instead of ∂ν/∂x and ∂ν/∂β.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "rabbit/backend/cpu/cpu_shard.hpp"
#include "rabbit/fit/fitter.hpp"
#include "rabbit/postfit/histograms.hpp"
#include "rabbit/postfit/mapping.hpp"
#include "support/shard_test_helpers.hpp"

namespace rabbit::testing {
namespace {

using Eigen::MatrixXd;
using Eigen::VectorXd;
using postfit::compute_histograms;
using postfit::HistogramRequest;
using postfit::HistogramResult;
using postfit::Mapping;
using postfit::MappingJacobian;

/// Another mapping as a function of N: apply_processes and jacobian_processes are the interface's
/// defaults (ν = Σ_p N[:, p]), so compute_histograms takes its process path for the same y.
class AsProcessMapping final : public Mapping {
 public:
  explicit AsProcessMapping(std::unique_ptr<Mapping> inner) : inner_(std::move(inner)) {}
  std::string name() const override { return "AsProcess"; }
  std::string key() const override { return "AsProcess " + inner_->key(); }
  const std::vector<ChannelInfo>& channels() const override { return inner_->channels(); }
  int64_t observed_size() const override { return 0; }
  bool has_data() const override { return false; }
  bool needs_processes() const override { return true; }
  bool has_per_process() const override { return false; }
  VectorXd apply(const VectorXd& nu) const override { return inner_->apply(nu); }
  MappingJacobian jacobian(const VectorXd& nu) const override { return inner_->jacobian(nu); }
  MatrixXd apply_per_process(const MatrixXd& n) const override { return inner_->apply_per_process(n); }
  MappingJacobian jacobian_per_process(const MatrixXd& n) const override {
    return inner_->jacobian_per_process(n);
  }

 private:
  std::unique_ptr<Mapping> inner_;
};

struct Case {
  const char* name;
  DataLikelihood likelihood;
  BBType bb_type;
  BBMode bb_mode;
};

void expect_near(const MatrixXd& got, const MatrixXd& want, const std::string& what) {
  ASSERT_EQ(got.rows(), want.rows()) << what;
  ASSERT_EQ(got.cols(), want.cols()) << what;
  if (want.size() == 0) return;  // per-process MC-stat parts exist in full mode only
  const double scale = std::max(1.0, want.cwiseAbs().maxCoeff());
  EXPECT_LT((got - want).cwiseAbs().maxCoeff(), 1e-9 * scale) << what;
}

void check_process_path(const Case& k) {
  SCOPED_TRACE(k.name);
  ShardConfig c;
  c.likelihood = k.likelihood;
  auto in = make_test_input(c);
  set_obs_and_masked_channels(*in);
  ModelOptions opt;
  opt.likelihood = k.likelihood;
  opt.bin_by_bin_stat = true;
  opt.bb_type = k.bb_type;
  opt.bb_mode = k.bb_mode;
  auto model = build_model(in, opt);
  std::vector<std::unique_ptr<ShardEvaluator>> shards;
  shards.push_back(make_cpu_shard(model, 0, in->nbins, 1));
  Fitter fitter(model, std::move(shards));
  auto& shard = dynamic_cast<CpuShardEvaluator&>(*fitter.shards()[0]);
  const int64_t n = fitter.size();
  VectorXd x = model->parameters.x_default;
  for (int64_t i = 0; i < n; ++i) x[i] += 0.1 * std::sin(1.0 + i);
  MatrixXd cov = 0.01 * MatrixXd::Identity(n, n);
  cov(0, 1) = cov(1, 0) = 0.002;
  // rabbit refuses the Gaussian kind with a covariance fit and BB (gaussian_hist_impacts)
  const bool gaussian = k.likelihood != DataLikelihood::covariance;
  for (const std::vector<std::string> tokens : {std::vector<std::string>{"BaseMapping"},
                                                {"Project", "obs"},
                                                {"Normalize", "obs", "x"},
                                                {"Project", "masked", "x"}}) {
    const auto inner = postfit::make_mapping(*in, tokens);
    const AsProcessMapping by_process(postfit::make_mapping(*in, tokens));
    for (bool prefit : {true, false}) {
      SCOPED_TRACE(inner->key() + (prefit ? " prefit" : " postfit"));
      HistogramRequest req;
      req.prefit = prefit;
      req.errors = req.covariance = req.global_impacts = true;
      req.gaussian_global_impacts = gaussian;
      const HistogramResult want = compute_histograms(*model, shard, fitter, *inner, x, cov, req);
      const HistogramResult got = compute_histograms(*model, shard, fitter, by_process, x, cov, req);
      expect_near(got.inclusive, want.inclusive, "values");
      expect_near(got.inclusive_var, want.inclusive_var, "variances");
      expect_near(got.inclusive_cov, want.inclusive_cov, "covariance");
      expect_near(got.impacts, want.impacts, "impacts per parameter");
      expect_near(got.impacts_bb_sq, want.impacts_bb_sq, "MC-stat impacts");
      expect_near(got.impacts_bb_proc_sq, want.impacts_bb_proc_sq, "MC-stat impacts per process");
      ASSERT_GT(want.impacts_bb_sq.size(), 0);
      if (!gaussian) continue;
      expect_near(got.gaussian_stat_sq, want.gaussian_stat_sq, "Gaussian data-stat impacts");
      expect_near(got.gaussian_bb_sq, want.gaussian_bb_sq, "Gaussian MC-stat impacts");
      expect_near(got.gaussian_bb_proc_sq, want.gaussian_bb_proc_sq, "Gaussian MC-stat impacts per process");
      ASSERT_GT(want.gaussian_stat_sq.cwiseAbs().maxCoeff(), 0.0);
    }
  }
}

TEST(ProcessMappingHistograms, PoissonGammaLite) {
  check_process_path({"poisson gamma lite", DataLikelihood::poisson, BBType::gamma, BBMode::lite});
}

TEST(ProcessMappingHistograms, PoissonGammaFull) {
  check_process_path({"poisson gamma full", DataLikelihood::poisson, BBType::gamma, BBMode::full});
}

TEST(ProcessMappingHistograms, ChisqNormalMultiplicativeFull) {
  check_process_path({"chisq normal-multiplicative full", DataLikelihood::chisq,
                      BBType::normal_multiplicative, BBMode::full});
}

TEST(ProcessMappingHistograms, PoissonNormalAdditiveLite) {
  check_process_path(
      {"poisson normal-additive lite", DataLikelihood::poisson, BBType::normal_additive, BBMode::lite});
}

TEST(ProcessMappingHistograms, CovarianceFitFull) {
  check_process_path({"covariance normal-multiplicative full", DataLikelihood::covariance,
                      BBType::normal_multiplicative, BBMode::full});
}

}  // namespace
}  // namespace rabbit::testing
