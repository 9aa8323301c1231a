// The CPU shard's threads (docs/architecture.md "Threads"): value, gradient and HVP are the same
// bit for bit for any thread count (fixed bin chunks, sums added in chunk order), on models large
// enough to be cut into many chunks, uncoupled and coupled (covariance fit), at a new point and at
// the cached point; the Hessian agrees across thread counts to rounding.
#include <gtest/gtest.h>

#include "rabbit/backend/cpu/cpu_shard_evaluator.hpp"
#include "support/shard_test_helpers.hpp"

namespace rabbit {
namespace {

using Eigen::MatrixXd;
using Eigen::VectorXd;
using testing::ShardConfig;

struct Outputs {
  double f = 0, f_grad = 0, f_hvp = 0, f_cached = 0;
  VectorXd g, g_hvp, beta;
  MatrixXd hv, hv_cached;
};

Outputs evaluate(const std::shared_ptr<Model>& model, int threads) {
  CpuShardEvaluator shard(model, 0, model->input->nbins, threads);
  const VectorXd xi = testing::test_point(*model);
  VectorXd x2 = xi;
  x2[0] += 0.01;
  MatrixXd V(xi.size(), 3);
  for (int64_t i = 0; i < V.rows(); ++i)
    for (int j = 0; j < 3; ++j) V(i, j) = std::sin(0.7 * i + 1.3 * j);
  Outputs o;
  o.f = shard.value(xi);
  o.f_grad = shard.value_grad(xi, o.g);
  VectorXd g;
  o.f_cached = shard.value_grad_hvp(xi, V, g, o.hv_cached);  // at the point just evaluated: cached
  o.f_hvp = shard.value_grad_hvp(x2, V, o.g_hvp, o.hv);      // a new point
  o.beta = shard.profiled_beta(xi);
  return o;
}

void expect_same_for_any_thread_count(const ShardConfig& c) {
  auto model = testing::make_test_model(testing::make_test_input(c), c);
  const Outputs one = evaluate(model, 1);
  for (int threads : {2, 3, 5}) {
    SCOPED_TRACE("threads " + std::to_string(threads));
    const Outputs o = evaluate(model, threads);
    EXPECT_EQ(o.f, one.f);
    EXPECT_EQ(o.f_grad, one.f_grad);
    EXPECT_EQ(o.f_hvp, one.f_hvp);
    EXPECT_EQ(o.f_cached, one.f_cached);
    EXPECT_EQ(o.g, one.g);
    EXPECT_EQ(o.g_hvp, one.g_hvp);
    EXPECT_EQ(o.hv, one.hv);
    EXPECT_EQ(o.hv_cached, one.hv_cached);
    EXPECT_EQ(o.beta, one.beta);
  }
}

TEST(CpuShardThreads, PoissonBBLiteGammaIsIndependentOfThreads) {
  ShardConfig c;
  c.nbins = 4000;  // 12,000 entries: enough work for 5 threads (shard_evaluation.cpp kMinWorkPerThread)
  expect_same_for_any_thread_count(c);
}

TEST(CpuShardThreads, SparseChisqBBFullIsIndependentOfThreads) {
  ShardConfig c;
  c.nbins = 4000;
  c.sparse = true;
  c.likelihood = DataLikelihood::chisq;
  c.bb_mode = BBMode::full;
  c.bb_type = BBType::normal_multiplicative;
  expect_same_for_any_thread_count(c);
}

TEST(CpuShardThreads, CovarianceFitIsIndependentOfThreads) {
  ShardConfig c;
  c.nbins = 1400;  // B × B covariance: smaller, still 2 threads for a value and 5 for an HVP
  c.likelihood = DataLikelihood::covariance;
  c.bb = false;
  expect_same_for_any_thread_count(c);
}

TEST(CpuShardThreads, HessianAgreesAcrossThreadCounts) {
  ShardConfig c;
  c.nbins = 4000;
  auto model = testing::make_test_model(testing::make_test_input(c), c);
  const VectorXd xi = testing::test_point(*model);
  VectorXd g1, g2;
  MatrixXd H1, H2;
  CpuShardEvaluator one(model, 0, c.nbins, 1), three(model, 0, c.nbins, 3);
  one.value_grad_hess(xi, g1, H1, true);
  three.value_grad_hess(xi, g2, H2, true);
  EXPECT_LT((H1 - H2).cwiseAbs().maxCoeff(), 1e-12 * H1.cwiseAbs().maxCoeff());
  EXPECT_LT((g1 - g2).cwiseAbs().maxCoeff(), 1e-12 * std::max(1.0, g1.cwiseAbs().maxCoeff()));
  // and the same thread count twice: identical
  CpuShardEvaluator again(model, 0, c.nbins, 3);
  VectorXd g3;
  MatrixXd H3;
  again.value_grad_hess(xi, g3, H3, true);
  EXPECT_EQ(H3, H2);
  EXPECT_EQ(g3, g2);
}

}  // namespace
}  // namespace rabbit
