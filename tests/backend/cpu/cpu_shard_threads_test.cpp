// The CPU shard's threads (docs/architecture.md "Threads"): value, gradient and HVP are the same
// bit for bit for any thread count (fixed bin chunks, sums added in chunk order), on models large
// enough to be cut into many chunks, uncoupled and coupled (covariance fit), at a new point and at
// the cached point; the Hessian agrees across thread counts to rounding.
#include <gtest/gtest.h>

#include "rabbit/backend/cpu/cpu_shard_evaluator.hpp"
#include "shard_outputs.hpp"
#include "support/shard_test_helpers.hpp"

namespace rabbit {
namespace {

using Eigen::MatrixXd;
using Eigen::VectorXd;
using testing::ShardConfig;

void expect_same_for_any_thread_count(const ShardConfig& c) {
  auto model = testing::make_test_model(testing::make_test_input(c), c);
  const testing::ShardOutputs one = testing::evaluate_shard(model, 1, /*with_hessian=*/false);
  for (int threads : {2, 3, 5}) {
    SCOPED_TRACE("threads " + std::to_string(threads));
    testing::expect_same(testing::evaluate_shard(model, threads, /*with_hessian=*/false), one,
                         /*with_hessian=*/false);
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
