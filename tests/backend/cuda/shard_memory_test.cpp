// The CUDA shard's device memory plan (src/backend/cuda/shard_memory.hpp), on the host: the memory
// check at construction asks for what the pipeline needs at its narrowest HVP batch (one column), not
// for a batch of fixed width (docs/sharding-and-gpu.md "Memory check first", "HVP batch width").
#include <gtest/gtest.h>

#include "host_ops.hpp"
#include "support/model_fixtures.hpp"

namespace rabbit {
namespace {

using pipeline::batch_budget_of_free;
using pipeline::batch_columns;
using pipeline::plan_shard_memory;
using testing::ShardConfig;

// One column by the formula of docs/sharding-and-gpu.md "HVP batch width": 8·(2E + 3·B·P + 2W + 2P).
uint64_t expected_column_bytes(const FitInputData& in, uint64_t entries) {
  const uint64_t B = in.nbins, P = in.nproc, W = in.logk_width();
  return 8 * (2 * entries + 3 * B * P + 2 * W + 2 * P);
}

uint64_t entries_of(const FitInputData& in) {
  if (!in.sparse) return static_cast<uint64_t>(in.nbins) * in.nproc;
  uint64_t n = 0;
  for (int64_t i : in.norm_index) n += i < in.nbins * in.nproc;
  return n;
}

std::unique_ptr<ShardEvaluator> shard_with_free(std::shared_ptr<Model> model, uint64_t free_bytes) {
  auto ops = std::make_unique<testing::HostOps>();
  ops->free_bytes = free_bytes;
  // The budget the GPU policy would take from what the shard leaves free.
  const int64_t nbins = model->input->nbins;
  const auto plan = plan_shard_memory(*model, 0, nbins);
  ops->batch_budget_bytes = batch_budget_of_free(free_bytes - std::min(free_bytes, plan.resident));
  return std::make_unique<pipeline::ShardPipeline<testing::HostOps>>(std::move(model), 0, nbins,
                                                                     std::move(ops));
}

class ShardMemoryPlan : public ::testing::TestWithParam<bool> {};

// The plan's column is the pipeline's column, dense (every bin-process) and sparse (stored entries).
TEST_P(ShardMemoryPlan, ColumnBytesFollowTheShard) {
  ShardConfig cfg;
  cfg.sparse = GetParam();
  auto model = fixtures::regular_model(cfg);
  const FitInputData& in = *model->input;
  const auto plan = plan_shard_memory(*model, 0, in.nbins);
  EXPECT_EQ(plan.per_column, expected_column_bytes(in, entries_of(in)));
  EXPECT_GE(plan.resident, uint64_t(64) << 20);  // the cuBLAS workspace slack
  // An empty shard holds no column but the per-column parameter vectors.
  EXPECT_EQ(plan_shard_memory(*model, 2, 2).per_column, 8 * (2 * in.logk_width() + 2 * in.nproc));
}

// At the planned minimum the batch budget holds exactly one column; one byte less holds none. With a
// batch of fixed width (the former plan, 256 columns) the minimum would leave room for min(npar, 256).
TEST_P(ShardMemoryPlan, MinimumLeavesExactlyOneColumn) {
  ShardConfig cfg;
  cfg.sparse = GetParam();
  auto model = fixtures::regular_model(cfg);
  const int64_t npar = model->parameters.size();
  ASSERT_GT(npar, 1);
  for (int64_t b : {int64_t(1), model->input->nbins}) {
    const auto plan = plan_shard_memory(*model, 0, b);
    const uint64_t left = plan.minimum_bytes() - plan.resident;
    EXPECT_EQ(batch_columns(batch_budget_of_free(left), plan.per_column, npar), 1) << b << " bins";
    EXPECT_EQ(batch_columns(batch_budget_of_free(left - 1), plan.per_column, npar), 0) << b << " bins";
  }
  // The width is capped at one column per parameter.
  EXPECT_EQ(batch_columns(uint64_t(1) << 40, 8, npar), npar);
}

// The pipeline's check at construction: accepted at the minimum (and its HVPs, one column per batch,
// agree with the CPU shard), refused one byte below with one line naming the shard and the memory.
TEST_P(ShardMemoryPlan, ShardRunsAtTheMinimumAndIsRefusedBelow) {
  ShardConfig cfg;
  cfg.sparse = GetParam();
  auto model = fixtures::regular_model(cfg);
  const uint64_t minimum = plan_shard_memory(*model, 0, model->input->nbins).minimum_bytes();
  const Eigen::VectorXd x = testing::test_point(*model);
  const int64_t npar = model->parameters.size();
  const Eigen::MatrixXd V = Eigen::MatrixXd::Identity(npar, npar).leftCols(3);
  std::vector<std::unique_ptr<ShardEvaluator>> shards;
  shards.push_back(shard_with_free(model, minimum));
  auto fitter = fixtures::fitter_over(model, std::move(shards));
  Eigen::VectorXd g, g_ref;
  Eigen::MatrixXd hv, hv_ref;
  const double f = fitter->value_grad_hvp(x, V, g, hv);
  const double f_ref = fixtures::single_cpu_fitter(model)->value_grad_hvp(x, V, g_ref, hv_ref);
  EXPECT_NEAR(f, f_ref, 1e-10 * std::max(1.0, std::abs(f_ref)));
  EXPECT_LE(fixtures::scaled_max_error(hv, hv_ref), 1e-10);
  try {
    shard_with_free(model, minimum - 1);
    FAIL() << "expected ResourceError";
  } catch (const ResourceError& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    EXPECT_NE(msg.find("host-emulation: the shard over bins [0, "), std::string::npos) << msg;
    EXPECT_NE(msg.find("use more shards (--nDevices) or --backend cpu"), std::string::npos) << msg;
  }
}

INSTANTIATE_TEST_SUITE_P(DenseAndSparse, ShardMemoryPlan, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "sparse" : "dense"; });

}  // namespace
}  // namespace rabbit
