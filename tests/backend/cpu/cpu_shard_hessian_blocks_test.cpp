// The dense Hessian by column blocks (src/backend/cpu/hessian_blocks.cpp, docs/architecture.md
// "Threads"): with threads made late at random after they take a block (WorkerPool::item_taken_hook),
// the Hessian is bit for bit the same for every thread count above one and every schedule; value and
// gradient are those of one thread; the Hessian agrees with one thread's to rounding.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <random>
#include <thread>

#include "rabbit/backend/cpu/cpu_shard_evaluator.hpp"
#include "rabbit/core/worker_pool.hpp"
#include "support/shard_test_helpers.hpp"

namespace rabbit {
namespace {

using Eigen::MatrixXd;
using Eigen::VectorXd;
using testing::ShardConfig;

std::atomic<uint64_t> next_seed{11};

// half of the blocks: sleep 0.2 – 5 ms after taking the block (a thread descheduled while it holds it)
void sleep_sometimes() {
  thread_local std::mt19937_64 rng(next_seed.fetch_add(1));
  if (rng() % 2 == 0) std::this_thread::sleep_for(std::chrono::microseconds(200 + rng() % 4800));
}

struct LateThreads {
  LateThreads() { WorkerPool::item_taken_hook.store(&sleep_sometimes); }
  ~LateThreads() { WorkerPool::item_taken_hook.store(nullptr); }
};

struct HessOutputs {
  double f = 0;
  VectorXd g;
  MatrixXd H;
};

HessOutputs hessian(CpuShardEvaluator& shard, const VectorXd& x) {
  HessOutputs o;
  o.f = shard.value_grad_hess(x, o.g, o.H, true);
  return o;
}

void check(const ShardConfig& c) {
  auto model = testing::make_test_model(testing::make_test_input(c), c);
  const int64_t B = model->input->nbins;
  const VectorXd x0 = testing::test_point(*model);
  ASSERT_GE(x0.size(), 256);  // n: 4 column blocks of at least 64 columns
  std::vector<VectorXd> xs;
  for (int j = 0; j < 2; ++j) {
    VectorXd x = x0;
    for (int64_t i = 0; i < x.size(); ++i) x[i] += 1e-3 * std::sin(0.9 * i + 1.7 * j);
    xs.push_back(x);
  }
  std::vector<HessOutputs> one, two;
  {
    CpuShardEvaluator single(model, 0, B, 1), pair(model, 0, B, 2);
    for (const VectorXd& x : xs) {
      one.push_back(hessian(single, x));
      two.push_back(hessian(pair, x));
    }
  }
  for (size_t j = 0; j < xs.size(); ++j) {
    EXPECT_EQ(two[j].f, one[j].f);
    EXPECT_EQ(two[j].g, one[j].g);
    EXPECT_LT((two[j].H - one[j].H).cwiseAbs().maxCoeff(), 1e-12 * one[j].H.cwiseAbs().maxCoeff());
  }
  LateThreads late;
  for (int threads : {2, 3, 4}) {
    CpuShardEvaluator shard(model, 0, B, threads);
    for (int round = 0; round < 2; ++round)
      for (size_t j = 0; j < xs.size(); ++j) {
        SCOPED_TRACE("threads " + std::to_string(threads) + " point " + std::to_string(j));
        const HessOutputs o = hessian(shard, xs[j]);
        EXPECT_EQ(o.f, two[j].f);
        EXPECT_EQ(o.g, two[j].g);
        EXPECT_EQ(o.H, two[j].H);
      }
  }
}

TEST(CpuShardHessianBlocks, PoissonBBLiteGammaIdenticalWithLateThreads) {
  ShardConfig c;
  c.nbins = 2800;  // 8,400 entries: enough work for 4 threads (shard_evaluation.cpp kMinWorkPerThread)
  c.nsyst = 256;
  check(c);
}

TEST(CpuShardHessianBlocks, SparseChisqBBFullIdenticalWithLateThreads) {
  ShardConfig c;
  c.nbins = 2800;  // 8,400 entries: enough work for 4 threads (shard_evaluation.cpp kMinWorkPerThread)
  c.nsyst = 256;
  c.sparse = true;
  c.likelihood = DataLikelihood::chisq;
  c.bb_mode = BBMode::full;
  c.bb_type = BBType::normal_multiplicative;
  c.symmetric = true;
  check(c);
}

}  // namespace
}  // namespace rabbit
