// A logk held as float32 (docs/input-reader.md "Precision"): the CPU shard converts each value to
// double before it enters a product and accumulates in double. On a tensor whose values are float32
// numbers, the value, gradient, HVP, Hessian and profiled β of float32 storage agree with those of
// double storage within 1e-12 relative (dense bin blocks are multiplied by row_block_products.hpp and
// sparse rows · m summed in four partial sums, which round differently from the double path), and
// they are bitwise the same run to run and for any thread count (the Hessian: for a fixed thread
// count), dense and sparse, log-normal and normal, uncoupled and coupled, at a new point and at the
// cached one.
#include <gtest/gtest.h>

#include <cmath>

#include "rabbit/backend/cpu/cpu_shard_evaluator.hpp"
#include "shard_outputs.hpp"
#include "support/shard_test_helpers.hpp"

namespace rabbit {
namespace {

using Eigen::MatrixXd;
using Eigen::VectorXd;
using testing::evaluate_shard;
using testing::expect_same;
using testing::ShardConfig;
using testing::ShardOutputs;

/// The test input with its logk rounded to float32 values, held as double (`.first`) and as
/// float32 (`.second`).
std::pair<std::shared_ptr<FitInputData>, std::shared_ptr<FitInputData>> both_precisions(
    const ShardConfig& c) {
  auto as_double = testing::make_test_input(c);
  for (double& v : as_double->logk) v = static_cast<float>(v);
  for (double& v : as_double->logk_sparse.values) v = static_cast<float>(v);
  auto as_float = std::make_shared<FitInputData>(*as_double);
  as_float->logk_float32 = true;
  as_float->logk_f32.assign(as_double->logk.begin(), as_double->logk.end());
  as_float->logk_sparse.values_f32.assign(as_double->logk_sparse.values.begin(),
                                          as_double->logk_sparse.values.end());
  as_float->logk.clear();
  as_float->logk_sparse.values.clear();
  return {as_double, as_float};
}

/// a within 1e-12 of b relative to b's largest element (an element near zero by cancellation is
/// held to the scale of the output it belongs to).
template <class A>
void expect_close(const A& a, const A& b, const char* what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  if (b.size() == 0) return;
  const double scale = b.cwiseAbs().maxCoeff();
  EXPECT_LE((a - b).cwiseAbs().maxCoeff(), 1e-12 * scale) << what;
}
void expect_close(double a, double b, const char* what) {
  EXPECT_LE(std::abs(a - b), 1e-12 * std::abs(b)) << what;
}

void expect_close(const ShardOutputs& f, const ShardOutputs& d) {
  expect_close(f.f, d.f, "value");
  expect_close(f.f_grad, d.f_grad, "value with gradient");
  expect_close(f.f_cached, d.f_cached, "value at the cached point");
  expect_close(f.f_hvp, d.f_hvp, "value with HVP");
  expect_close(f.f_hess, d.f_hess, "value with Hessian");
  expect_close(f.g, d.g, "gradient");
  expect_close(f.g_hvp, d.g_hvp, "gradient with HVP");
  expect_close(f.g_hess, d.g_hess, "gradient with Hessian");
  expect_close(f.hv, d.hv, "HVP");
  expect_close(f.hv_cached, d.hv_cached, "HVP at the cached point");
  expect_close(f.H, d.H, "Hessian");
  expect_close(f.beta, d.beta, "profiled beta");
}

void expect_float32_storage_is_the_double_path(const ShardConfig& c) {
  const auto [as_double, as_float] = both_precisions(c);
  const auto model64 = testing::make_test_model(as_double, c);
  const auto model32 = testing::make_test_model(as_float, c);
  const ShardOutputs f1 = evaluate_shard(model32, 1, true);
  for (int threads : {1, 3}) {
    SCOPED_TRACE("threads " + std::to_string(threads));
    const ShardOutputs d = evaluate_shard(model64, threads, true), f = evaluate_shard(model32, threads, true);
    expect_same(f, evaluate_shard(model32, threads, true), /*with_hessian=*/true);  // run to run
    expect_same(f, f1, /*with_hessian=*/threads == 1);                              // any thread count
    expect_close(f, d);
  }
}

TEST(CpuShardFloat32, DenseLogNormalGammaLite) {
  ShardConfig c;
  c.nbins = 3000;  // several bin chunks and threads
  expect_float32_storage_is_the_double_path(c);
}

TEST(CpuShardFloat32, DenseSymmetricNormalChisqFull) {
  ShardConfig c;
  c.symmetric = true;
  c.lognormal = false;
  c.likelihood = DataLikelihood::chisq;
  c.bb_mode = BBMode::full;
  c.bb_type = BBType::normal_additive;
  expect_float32_storage_is_the_double_path(c);
}

TEST(CpuShardFloat32, SparseLogNormalBBFull) {
  ShardConfig c;
  c.nbins = 3000;
  c.sparse = true;
  c.bb_mode = BBMode::full;
  expect_float32_storage_is_the_double_path(c);
}

TEST(CpuShardFloat32, SparseSymmetricNormalNoBB) {
  ShardConfig c;
  c.sparse = true;
  c.symmetric = true;
  c.lognormal = false;
  c.bb = false;
  expect_float32_storage_is_the_double_path(c);
}

TEST(CpuShardFloat32, CovarianceFit) {
  ShardConfig c;
  c.nbins = 200;
  c.likelihood = DataLikelihood::covariance;
  c.bb = false;
  expect_float32_storage_is_the_double_path(c);
}

TEST(CpuShardFloat32, FloatStorageIsNotSilentlyIgnored) {
  // The float32 copy must be what the shard reads: with its values changed the value changes.
  ShardConfig c;
  auto [as_double, as_float] = both_precisions(c);
  for (float& v : as_float->logk_f32) v *= 1.5f;
  const auto model64 = testing::make_test_model(as_double, c);
  const auto model32 = testing::make_test_model(as_float, c);
  CpuShardEvaluator d(model64, 0, c.nbins, 1), f(model32, 0, c.nbins, 1);
  const VectorXd xi = testing::test_point(*model64);
  EXPECT_NE(f.value(xi), d.value(xi));
}

}  // namespace
}  // namespace rabbit
