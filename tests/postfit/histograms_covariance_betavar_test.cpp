// Postfit histogram variances of a covariance fit with beta variations (docs/likelihood.md "Beta
// variations"): the β part is rabbit's pdexpdbeta H_ββ⁻¹ pdexpdbetaᵀ with the masked bins' rows carrying the
// cross terms to the observed entries (CpuShardEvaluator::beta_yield_partials).
#include <gtest/gtest.h>

#include <Eigen/LU>
#include <cmath>
#include <random>

#include "rabbit/backend/cpu/cpu_shard.hpp"
#include "rabbit/fit/fitter.hpp"
#include "rabbit/postfit/histograms.hpp"
#include "support/shard_test_helpers.hpp"

namespace rabbit::testing {
namespace {

using Eigen::MatrixXd;
using Eigen::VectorXd;
using Mode = CpuShardEvaluator::BetaMode;
using postfit::compute_histograms;
using postfit::HistogramRequest;
using postfit::HistogramResult;

TEST(Histograms, CovarianceFitBetaVariationVariances) {
  ShardConfig c;
  c.likelihood = DataLikelihood::covariance;
  auto in = make_test_input(c);
  {
    std::mt19937 rng(21);
    std::uniform_real_distribution<double> uni(-1.0, 1.0);
    const int64_t B = in->nbins, Bf = in->nbinsfull, P = in->nproc;
    std::vector<double> bv(Bf * B * P, 0.0);
    for (int64_t b = B; b < Bf; ++b)
      for (int64_t j = 0; j < B; ++j)
        for (int64_t p = 0; p < P; ++p) bv[(b * B + j) * P + p] = 0.4 * in->norm[b * P + p] * uni(rng);
    in->betavariations = bv;
  }
  ModelOptions opt;
  opt.likelihood = DataLikelihood::covariance;
  opt.bin_by_bin_stat = true;
  opt.bb_type = BBType::normal_multiplicative;
  opt.bb_mode = BBMode::full;
  auto model = build_model(in, opt);
  std::vector<std::unique_ptr<ShardEvaluator>> shards;
  shards.push_back(make_cpu_shard(model, 0, in->nbins, 1));
  Fitter fitter(model, std::move(shards));
  auto& shard = dynamic_cast<CpuShardEvaluator&>(*fitter.shards()[0]);
  ASSERT_TRUE(shard.beta_variations_active());
  const int64_t n = fitter.size(), B = in->nbins, Bf = in->nbinsfull;
  VectorXd x = model->parameters.x_default;
  for (int64_t i = 0; i < n; ++i) x[i] += 0.1 * std::sin(1.0 + i);
  MatrixXd cov = 0.01 * MatrixXd::Identity(n, n);
  cov(0, 1) = cov(1, 0) = 0.002;
  HistogramRequest req;
  req.errors = true;
  req.covariance = true;
  const HistogramResult h = compute_histograms(*model, shard, fitter, x, cov, req);

  VectorXd xi, d1, d2;
  model->parameters.transform(x, xi, d1, d2);
  const MatrixXd J = shard.yield_jacobian(xi, 0, Bf, Mode::profiled) * d1.asDiagonal();
  const MatrixXd U = shard.beta_yield_partials(xi, 0, Bf, Mode::profiled);  // [Bf × entries]
  MatrixXd H = U.topRows(B).transpose() * (*in->data_cov_inv) * U.topRows(B);
  for (int64_t e = 0; e < H.rows(); ++e) {
    if (!shard.bb_mask()[e]) H(e, e) += shard.bb_kstat()[e];
    if (H(e, e) == 0.0) H(e, e) = 1.0;
  }
  const MatrixXd expected = J * cov * J.transpose() + U * H.inverse() * U.transpose();
  const double scale = expected.cwiseAbs().maxCoeff();
  EXPECT_LT((h.inclusive_cov - expected).cwiseAbs().maxCoeff(), 1e-10 * scale);
  EXPECT_LT((h.inclusive_var - expected.diagonal()).cwiseAbs().maxCoeff(), 1e-10 * scale);
  // the cross terms matter: masked rows differ from their own-entry-only part
  MatrixXd own = U;
  own.bottomRows(Bf - B).leftCols(B * in->nproc).setZero();
  const MatrixXd without = J * cov * J.transpose() + own * H.inverse() * own.transpose();
  EXPECT_GT((expected.diagonal().tail(Bf - B) - without.diagonal().tail(Bf - B)).cwiseAbs().maxCoeff(),
            1e-3 * scale);
}

// Legacy per-bin input, normal-additive lite, χ²: in a bin with a negative total yield rabbit adds s·β,
// so ∂ν/∂β = s and the bin's BB variance is s²/(1 + s²/v) (β curvature 1, data curvature 1/v).
TEST(Histograms, LegacyAdditiveLiteNegativeBinTotal) {
  ShardConfig c;
  c.likelihood = DataLikelihood::chisq;
  c.legacy_kstat = true;
  auto in = make_test_input(c);
  ModelOptions opt;
  opt.likelihood = DataLikelihood::chisq;
  opt.bin_by_bin_stat = true;
  opt.bb_type = BBType::normal_additive;
  opt.bb_mode = BBMode::lite;
  opt.allow_negative_param = true;
  auto model = build_model(in, opt);
  std::vector<std::unique_ptr<ShardEvaluator>> shards;
  shards.push_back(make_cpu_shard(model, 0, in->nbins, 1));
  Fitter fitter(model, std::move(shards));
  auto& shard = dynamic_cast<CpuShardEvaluator&>(*fitter.shards()[0]);
  const int64_t n = fitter.size(), Bf = in->nbinsfull;
  VectorXd x = model->parameters.x_default, xi, d1, d2;
  model->parameters.transform(x, xi, d1, d2);
  MatrixXd N;
  shard.expected_yields(xi, 0, Bf, Mode::none, nullptr, &N);
  x[0] = -1.5 * (N(2, 1) + N(2, 2)) / N(2, 0) * x[0];  // signal ∝ x[0] outweighs the backgrounds of bin 2
  model->parameters.transform(x, xi, d1, d2);
  VectorXd nu0;
  shard.expected_yields(xi, 0, Bf, Mode::none, &nu0);
  ASSERT_LT(nu0[2], 0.0);
  const MatrixXd cov = 0.01 * MatrixXd::Identity(n, n);
  HistogramRequest req;
  req.errors = true;
  const HistogramResult h = compute_histograms(*model, shard, fitter, x, cov, req);
  const MatrixXd J = shard.yield_jacobian(xi, 0, Bf, Mode::profiled) * d1.asDiagonal();
  const double s2 = in->sumw2[2];
  const double v = fitter.observed_variances().size() ? fitter.observed_variances()[2] : fitter.observed()[2];
  const double expected = (J.row(2) * cov * J.row(2).transpose())(0, 0) + s2 / (1.0 + s2 / v);
  EXPECT_NEAR(h.inclusive_var[2], expected, 1e-10 * expected);
}

}  // namespace
}  // namespace rabbit::testing
