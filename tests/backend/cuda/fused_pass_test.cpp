// The CUDA shard's fused loss+grad pass and per-point cache (docs/sharding-and-gpu.md "Fused loss+grad
// pass", "Per-point cache") through the host policy: the tiling plan; the fused pass against the CPU
// shard at several tilings (one bin per tile, tiles of several bins with an uneven last one, one block,
// the two-pass fallback) for every BB mode with a masked channel; and, with an Ops that counts full
// reads of the tensor, one read per loss+grad, two per HVP at the last point, three at a new one, and
// the cache dropped by every call that changes the state it keeps.
#include <gtest/gtest.h>

#include <atomic>

#include "fitter_evaluation.hpp"
#include "host_ops.hpp"
#include "rabbit/backend/cpu/cpu_shard.hpp"
#include "rabbit/backend/cpu/cpu_shard_evaluator.hpp"
#include "rabbit/fit/multi_device_fitter.hpp"
#include "support/model_fixtures.hpp"

namespace rabbit {
namespace {

using fixtures::Evaluation;
using fixtures::expect_close;
using fixtures::scaled_max_error;
using pipeline::FusedTiles;
using pipeline::plan_fused_tiles;
using testing::ShardConfig;

// The host policy, counting every pass over the whole tensor: a dense or sparse product (any number
// of columns reads the tensor once) or a fused loss+grad pass.
struct CountingOps : testing::HostOps {
  static std::atomic<int64_t>& reads() {
    static std::atomic<int64_t> n{0};
    return n;
  }
  void k2_dense(bool t, const double* K2, int64_t E, int64_t W, const double* X, double* Y, int k) {
    ++reads();
    HostOps::k2_dense(t, K2, E, W, X, Y, k);
  }
  void csr_multiply(const pipeline::CsrSegments& plan, int64_t width, const int64_t* rowptr,
                    const int32_t* cols, const double* vals, const double* x, double* y, double* partial,
                    int k) {
    ++reads();
    HostOps::csr_multiply(plan, width, rowptr, cols, vals, x, y, partial, k);
  }
  // The SYRK Hessian reads the tensor tile by tile: one pass over all tiles, counted at the first.
  void theta_tile(const double* K2, int64_t W, int64_t S, bool symmetric, const double* h1, int64_t e0,
                  int64_t rows, double* G) {
    if (e0 == 0) ++reads();
    HostOps::theta_tile(K2, W, S, symmetric, h1, e0, rows, G);
  }
  void fused_loss_grad(const pipeline::FusedPass& a) {
    ++reads();
    HostOps::fused_loss_grad(a);
  }
};

struct Tiling {
  uint64_t l2 = 0;
  int blocks = 0;
};

std::unique_ptr<ShardEvaluator> counting_shard(std::shared_ptr<const Model> model, int64_t a, int64_t b,
                                               Tiling t) {
  auto ops = std::make_unique<CountingOps>();
  ops->l2_bytes = t.l2;
  ops->max_blocks = t.blocks;
  return std::make_unique<pipeline::ShardPipeline<CountingOps>>(std::move(model), a, b, std::move(ops));
}

TEST(FusedTiling, WholeBinsWithinHalfTheCache) {
  const int P = 3;
  const int64_t W = 8, bin = P * W * 8;
  for (int64_t nbins : {1, 7, 60, 20000})
    for (int max_blocks : {1, 4, 132})
      for (uint64_t l2 : {uint64_t(2 * bin * 132), uint64_t(50) << 20}) {
        const FusedTiles t = plan_fused_tiles(nbins, P, W, l2, max_blocks);
        ASSERT_TRUE(t.fused()) << nbins << " " << max_blocks << " " << l2;
        EXPECT_LE(t.blocks, max_blocks);
        EXPECT_LE(uint64_t(t.blocks) * t.bins_per_tile * bin, l2 / 2);  // the tiles in flight fit
        EXPECT_GE(t.bins_per_tile * t.tiles, nbins);                    // every bin in a tile
        EXPECT_LT(t.bins_per_tile * (t.tiles - 1), nbins);              // no empty tile
        EXPECT_LE(t.blocks, t.tiles);                                   // no idle block
        EXPECT_GE(t.blocks * 2, std::min<int64_t>(nbins, max_blocks));  // at least half the device
      }
  // Uneven: 60 bins at 8 per tile, the last tile of 4, three blocks of 3, 3 and 2 tiles.
  const FusedTiles t = plan_fused_tiles(60, P, W, 2 * 26 * bin, 3);
  EXPECT_EQ(t.bins_per_tile, 8);
  EXPECT_EQ(t.tiles, 8);
  EXPECT_EQ(t.blocks, 3);
  // Less than half the blocks hold a bin each: the two-pass path.
  EXPECT_FALSE(plan_fused_tiles(60, P, W, 2 * 2 * bin, 5).fused());
  EXPECT_FALSE(plan_fused_tiles(60, P, W, 2 * bin - 1, 1).fused());
  EXPECT_FALSE(plan_fused_tiles(0, P, W, uint64_t(1) << 30, 4).fused());
}

// Every path of the fused pass and the per-point cache: loss+grad, the HVP at that point, the Hessian
// with β profiled and with β fixed.
Evaluation evaluate(Fitter& fitter, const Eigen::VectorXd& x, const Eigen::MatrixXd& V) {
  return fixtures::evaluate(fitter, x, V, {.loss_grad_first = true, .fixed_beta_hessian = true});
}

// 60 observed bins + a masked channel of 3, 3 processes, 4 asymmetric systematics: 192 bytes per bin.
constexpr uint64_t kBinBytes = 3 * 8 * 8;
const std::vector<std::pair<std::string, Tiling>>& tilings() {
  static const std::vector<std::pair<std::string, Tiling>> t = {
      {"one_bin_one_block", {2 * kBinBytes, 1}},           {"one_bin_four_blocks", {2 * 7 * kBinBytes, 4}},
      {"eight_bins_uneven_last", {2 * 26 * kBinBytes, 3}}, {"whole_shard_per_block", {uint64_t(1) << 20, 7}},
      {"two_pass_fallback", {2 * 2 * kBinBytes, 5}},
  };
  return t;
}

class FusedPassModes : public ::testing::TestWithParam<fixtures::NamedConfig> {};
TEST_P(FusedPassModes, AgreesWithCpuShardAtEveryTiling) {
  ShardConfig cfg = GetParam().cfg;
  cfg.nbins = 60;
  auto model = testing::make_test_model(testing::make_test_input(cfg), cfg);
  const Eigen::VectorXd x = testing::test_point(*model);
  const Eigen::MatrixXd V = fixtures::test_directions(model->parameters.size(), 3);
  const Evaluation ref = evaluate(*fixtures::single_cpu_fitter(model), x, V);
  for (const auto& [name, tiling] : tilings()) {
    SCOPED_TRACE(name);
    std::vector<std::unique_ptr<ShardEvaluator>> shards;
    shards.push_back(counting_shard(model, 0, 23, tiling));
    shards.push_back(counting_shard(model, 23, 60, tiling));
    expect_close(evaluate(*fixtures::fitter_over(model, std::move(shards)), x, V), ref);
  }
}
INSTANTIATE_TEST_SUITE_P(Dense, FusedPassModes, ::testing::ValuesIn(fixtures::bb_mode_matrix(false)),
                         [](const auto& info) { return info.param.name; });

// 20,000 bins (and the masked channel) over two uneven shards, full gamma: the fused pass at 11 bins
// per tile (the last tile of each shard shorter) equals the CPU shard and reads the tensor once per shard.
TEST(FusedPassScale, TwentyThousandBinsOneReadPerShard) {
  ShardConfig cfg;
  cfg.nbins = 20000;
  cfg.bb_mode = BBMode::full;
  auto model = testing::make_test_model(testing::make_test_input(cfg), cfg);
  const Eigen::VectorXd x = testing::test_point(*model);
  const Eigen::MatrixXd V = fixtures::test_directions(model->parameters.size(), 3);
  const Tiling tiling{2 * 66 * kBinBytes, 6};
  EXPECT_EQ(plan_fused_tiles(7001, 3, 8, tiling.l2, tiling.blocks).bins_per_tile, 11);
  std::vector<std::unique_ptr<ShardEvaluator>> shards;
  shards.push_back(counting_shard(model, 0, 7001, tiling));
  shards.push_back(counting_shard(model, 7001, 20000, tiling));
  auto gpu = fixtures::fitter_over(model, std::move(shards));
  Eigen::VectorXd g;
  const int64_t before = CountingOps::reads();
  gpu->value_grad(x, g);
  EXPECT_EQ(CountingOps::reads() - before, 2);
  expect_close(evaluate(*gpu, x, V), evaluate(*fixtures::single_cpu_fitter(model), x, V));
}

// Full reads of the tensor per call: 1 for loss+grad, 2 for an HVP at the point of the last derivative
// call, 3 at a new point (dense, fused), the dense Hessian 2 + 1 (π columns, θθ tiles) plus 1 at a new point;
// the cache is dropped by value(), profiled_beta(), another profile flag, set_observed and set_beta_centres,
// after which the results follow the new state.
TEST(FusedPassReads, PerCallAndPerPointCache) {
  ShardConfig cfg;
  cfg.nbins = 60;
  cfg.bb_mode = BBMode::full;
  auto model = testing::make_test_model(testing::make_test_input(cfg), cfg);
  const Eigen::VectorXd x = testing::test_point(*model);
  const Eigen::VectorXd y = x + Eigen::VectorXd::Constant(x.size(), 0.03);
  const int64_t n = model->parameters.size(), B = model->input->nbins;
  const Eigen::MatrixXd V = fixtures::test_directions(n, 3);
  std::vector<std::unique_ptr<ShardEvaluator>> shards;
  shards.push_back(counting_shard(model, 0, B, {uint64_t(64) << 10, 5}));
  Fitter gpu(model, std::move(shards));
  auto cpu = fixtures::single_cpu_fitter(model);
  auto& reads = CountingOps::reads();
  Eigen::VectorXd g, gc;
  Eigen::MatrixXd hv, hvc, h;
  auto reads_of = [&](auto&& call) {
    const int64_t before = reads;
    call();
    return reads - before;
  };
  EXPECT_EQ(reads_of([&] { gpu.value_grad(x, g); }), 1) << "loss+grad";
  EXPECT_EQ(reads_of([&] { gpu.value_grad(x, g); }), 0) << "loss+grad at the last point";
  EXPECT_EQ(reads_of([&] { gpu.value_grad_hvp(x, V, g, hv); }), 2) << "HVP at the last point";
  EXPECT_EQ(reads_of([&] { gpu.value_grad_hvp(y, V, g, hv); }), 3) << "HVP at a new point";
  // The dense Hessian (SYRK path): the π columns as one HVP batch (2 reads) and the θθ block's tiles (1).
  EXPECT_EQ(reads_of([&] { gpu.value_grad_hess(y, g, h, true); }), 3) << "Hessian at the last point";
  EXPECT_EQ(reads_of([&] { gpu.value_grad_hess(y, g, h, false); }), 4) << "Hessian, β held fixed";
  EXPECT_EQ(reads_of([&] { gpu.value_grad_hvp(y, V, g, hv); }), 3) << "HVP after the fixed-β Hessian";
  EXPECT_EQ(reads_of([&] { gpu.value(y); }), 1) << "value";
  EXPECT_EQ(reads_of([&] { gpu.value_grad_hvp(y, V, g, hv); }), 3) << "HVP after value()";
  EXPECT_EQ(reads_of([&] { gpu.profiled_beta(y); }), 1) << "profiled_beta";
  EXPECT_EQ(reads_of([&] { gpu.value_grad_hvp(y, V, g, hv); }), 3) << "HVP after profiled_beta()";
  auto agrees = [&] {
    const double f = gpu.value_grad_hvp(y, V, g, hv), fc = cpu->value_grad_hvp(y, V, gc, hvc);
    EXPECT_NEAR(f, fc, 1e-10 * std::max(1.0, std::abs(fc)));
    EXPECT_LE(scaled_max_error(g, gc), 1e-10);
    EXPECT_LE(scaled_max_error(hv, hvc), 1e-10);
  };

  const Eigen::VectorXd nobs = model->input->data_obs.array() + 2.0;
  gpu.set_observed(nobs, nobs);
  cpu->set_observed(nobs, nobs);
  EXPECT_EQ(reads_of(agrees), 3) << "HVP after set_observed";

  auto& c = static_cast<CpuShardEvaluator&>(*cpu->shards().front());
  Eigen::VectorXd beta0 = c.default_beta_centres();
  for (int64_t i = 0; i < beta0.size(); ++i)
    if (!c.bb_mask()[i]) beta0[i] += 0.2 * std::sin(1.0 + 0.7 * i);
  gpu.set_beta_centres(beta0);
  cpu->set_beta_centres(beta0);
  EXPECT_EQ(reads_of(agrees), 3) << "HVP after set_beta_centres";
  EXPECT_EQ(reads_of(agrees), 2) << "HVP at the last point again";
}

// The paths that keep two passes for loss+grad: sparse tensors, and a dense one whose tiles do not fit.
TEST(FusedPassReads, TwoPassesForSparseAndUnfittingTiles) {
  for (bool sparse : {true, false}) {
    SCOPED_TRACE(sparse ? "sparse" : "dense, two bins of cache for five blocks");
    ShardConfig cfg;
    cfg.nbins = 60;
    cfg.sparse = sparse;
    auto model = testing::make_test_model(testing::make_test_input(cfg), cfg);
    const Eigen::VectorXd x = testing::test_point(*model);
    const Eigen::MatrixXd V = fixtures::test_directions(model->parameters.size(), 3);
    auto shard = counting_shard(model, 0, model->input->nbins, {2 * 2 * kBinBytes, 5});
    auto& reads = CountingOps::reads();
    Eigen::VectorXd g;
    Eigen::MatrixXd hv;
    int64_t before = reads;
    shard->value_grad(x, g);
    EXPECT_EQ(reads - before, 2);
    before = reads;
    shard->value_grad_hvp(x, V, g, hv);
    EXPECT_EQ(reads - before, 2) << "HVP at the last point";
    before = reads;
    shard->value_grad_hvp(x + Eigen::VectorXd::Constant(x.size(), 0.03), V, g, hv);
    EXPECT_EQ(reads - before, 4) << "HVP at a new point";
  }
}

}  // namespace
}  // namespace rabbit
