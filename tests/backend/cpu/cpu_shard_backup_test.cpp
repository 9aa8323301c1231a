// Backup execution of the CPU shard's chunks (docs/architecture.md "Threads"): threads are made late
// at random while they hold a chunk (WorkerPool::item_taken_hook), so that the caller recomputes
// chunks they still hold and returns without them, and those threads resume during the following
// evaluations, set_observed and the shard's destruction. Value, gradient, HVP (new and cached
// point) and profiled β stay bit for bit those of one thread, evaluation after evaluation.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <random>
#include <thread>
#include <vector>

#include "rabbit/backend/cpu/cpu_shard_evaluator.hpp"
#include "rabbit/core/worker_pool.hpp"
#include "support/shard_test_helpers.hpp"

namespace rabbit {
namespace {

using Eigen::MatrixXd;
using Eigen::VectorXd;
using testing::ShardConfig;

std::atomic<uint64_t> next_seed{1};

// 3 of 8 chunks: sleep 50 µs – 2 ms after taking the chunk (a thread descheduled while it holds it)
void sleep_sometimes() {
  thread_local std::mt19937_64 rng(next_seed.fetch_add(1));
  if (rng() % 8 < 3) std::this_thread::sleep_for(std::chrono::microseconds(50 + rng() % 1950));
}

struct LateThreads {
  LateThreads() { WorkerPool::item_taken_hook.store(&sleep_sometimes); }
  ~LateThreads() { WorkerPool::item_taken_hook.store(nullptr); }
};

struct Outputs {
  double f = 0, f_grad = 0, f_hvp = 0, f_cached = 0;
  VectorXd g, g_hvp, g_cached, beta;
  MatrixXd hv, hv_cached;
};

// value_grad and an HVP at x (the cached point), an HVP at a new point, β̂ and the value at x
Outputs evaluate(CpuShardEvaluator& shard, const VectorXd& x, const MatrixXd& V) {
  Outputs o;
  o.f_grad = shard.value_grad(x, o.g);
  o.f_cached = shard.value_grad_hvp(x, V, o.g_cached, o.hv_cached);
  VectorXd x2 = x;
  x2[1] += 0.003;
  o.f_hvp = shard.value_grad_hvp(x2, V, o.g_hvp, o.hv);
  o.beta = shard.profiled_beta(x);
  o.f = shard.value(x);
  return o;
}

void expect_identical(const Outputs& o, const Outputs& one) {
  EXPECT_EQ(o.f, one.f);
  EXPECT_EQ(o.f_grad, one.f_grad);
  EXPECT_EQ(o.f_cached, one.f_cached);
  EXPECT_EQ(o.f_hvp, one.f_hvp);
  EXPECT_EQ(o.g, one.g);
  EXPECT_EQ(o.g_cached, one.g_cached);
  EXPECT_EQ(o.g_hvp, one.g_hvp);
  EXPECT_EQ(o.hv, one.hv);
  EXPECT_EQ(o.hv_cached, one.hv_cached);
  EXPECT_EQ(o.beta, one.beta);
}

void stress(const ShardConfig& c, int points) {
  auto model = testing::make_test_model(testing::make_test_input(c), c);
  const int64_t B = model->input->nbins;
  const VectorXd x0 = testing::test_point(*model);
  MatrixXd V(x0.size(), 2);
  for (int64_t i = 0; i < V.rows(); ++i)
    for (int j = 0; j < 2; ++j) V(i, j) = std::cos(0.3 * i + 1.1 * j);
  std::vector<VectorXd> xs;
  for (int j = 0; j < points; ++j) {
    VectorXd x = x0;
    for (int64_t i = 0; i < x.size(); ++i) x[i] += 1e-3 * std::sin(0.9 * i + 1.7 * j);
    xs.push_back(x);
  }
  // the second half of the points after new observations (a toy): set_observed while late threads run
  VectorXd toy = model->input->data_obs;
  for (int64_t b = 0; b < toy.size(); ++b) toy[b] = std::round(toy[b] * (1.0 + 0.05 * std::sin(0.37 * b)));
  std::vector<Outputs> expected;
  {
    CpuShardEvaluator one(model, 0, B, 1);
    for (int j = 0; j < points; ++j) {
      if (j == points / 2) one.set_observed(toy, VectorXd());
      expected.push_back(evaluate(one, xs[j], V));
    }
  }
  LateThreads late;
  for (int threads : {2, 3}) {
    CpuShardEvaluator shard(model, 0, B, threads);
    for (int j = 0; j < points; ++j) {
      SCOPED_TRACE("threads " + std::to_string(threads) + " point " + std::to_string(j));
      if (j == points / 2) shard.set_observed(toy, VectorXd());
      expect_identical(evaluate(shard, xs[j], V), expected[j]);
    }
  }
}

TEST(CpuShardBackup, PoissonBBLiteIdenticalWithLateThreads) {
  ShardConfig c;
  c.nbins = 4000;
  stress(c, 16);
}

TEST(CpuShardBackup, SparseChisqBBFullIdenticalWithLateThreads) {
  ShardConfig c;
  c.nbins = 4000;
  c.sparse = true;
  c.likelihood = DataLikelihood::chisq;
  c.bb_mode = BBMode::full;
  c.bb_type = BBType::normal_multiplicative;
  stress(c, 8);
}

// the covariance fit's phase B (covariance_fit.cpp): 1,400 bins for 2 threads on a value
TEST(CpuShardBackup, CovarianceFitIdenticalWithLateThreads) {
  ShardConfig c;
  c.nbins = 1400;
  c.likelihood = DataLikelihood::covariance;
  c.bb = false;
  stress(c, 4);
}

}  // namespace
}  // namespace rabbit
