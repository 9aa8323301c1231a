#pragma once
// What the CPU shard's determinism tests (cpu_shard_threads_test.cpp, cpu_shard_float32_test.cpp)
// read from one shard: value, gradient, HVP (at a new point and at the cached one), profiled β and,
// when asked, the Hessian, each from a fresh shard with a given thread count; and the bit-for-bit
// comparison of two such reads.
#include <gtest/gtest.h>

#include <Eigen/Core>
#include <cmath>
#include <memory>

#include "rabbit/backend/cpu/cpu_shard_evaluator.hpp"
#include "support/shard_test_helpers.hpp"

namespace rabbit::testing {

struct ShardOutputs {
  double f = 0, f_grad = 0, f_hvp = 0, f_cached = 0, f_hess = 0;
  Eigen::VectorXd g, g_hvp, g_hess, beta;
  Eigen::MatrixXd hv, hv_cached, H;
};

/// The outputs of a new CPU shard over all observed bins with `threads` threads, at test_point and at
/// a second point; the Hessian (at the second point) only with with_hessian.
inline ShardOutputs evaluate_shard(const std::shared_ptr<Model>& model, int threads, bool with_hessian) {
  CpuShardEvaluator shard(model, 0, model->input->nbins, threads);
  const Eigen::VectorXd xi = test_point(*model);
  Eigen::VectorXd x2 = xi;
  x2[0] += 0.01;
  Eigen::MatrixXd V(xi.size(), 3);
  for (int64_t i = 0; i < V.rows(); ++i)
    for (int j = 0; j < 3; ++j) V(i, j) = std::sin(0.7 * i + 1.3 * j);
  ShardOutputs o;
  o.f = shard.value(xi);
  o.f_grad = shard.value_grad(xi, o.g);
  Eigen::VectorXd g;
  o.f_cached = shard.value_grad_hvp(xi, V, g, o.hv_cached);  // at the point just evaluated: cached
  o.f_hvp = shard.value_grad_hvp(x2, V, o.g_hvp, o.hv);      // a new point
  if (with_hessian) o.f_hess = shard.value_grad_hess(x2, o.g_hess, o.H, true);
  o.beta = shard.profiled_beta(xi);
  return o;
}

/// Bit for bit; with_hessian = false leaves out the outputs of the Hessian call, whose n × n sums
/// are per thread and so the same for a fixed thread count only (docs/likelihood.md "Threads").
inline void expect_same(const ShardOutputs& a, const ShardOutputs& b, bool with_hessian) {
  EXPECT_EQ(a.f, b.f);
  EXPECT_EQ(a.f_grad, b.f_grad);
  EXPECT_EQ(a.f_cached, b.f_cached);
  EXPECT_EQ(a.f_hvp, b.f_hvp);
  EXPECT_EQ(a.g, b.g);
  EXPECT_EQ(a.g_hvp, b.g_hvp);
  EXPECT_EQ(a.hv, b.hv);
  EXPECT_EQ(a.hv_cached, b.hv_cached);
  EXPECT_EQ(a.beta, b.beta);
  if (!with_hessian) return;
  EXPECT_EQ(a.f_hess, b.f_hess);
  EXPECT_EQ(a.g_hess, b.g_hess);
  EXPECT_EQ(a.H, b.H);
}

}  // namespace rabbit::testing
