// BBStatistics (docs/likelihood.md "Per-entry BB statistics") equals the statistics the CPU shard
// computes itself, entry by entry and bit for bit, over the BB matrix, legacy per-bin input and
// --minBBKstat; its curvature is the constraint's second derivative per type.
#include "rabbit/model/bb_statistics.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "rabbit/backend/cpu/cpu_shard.hpp"
#include "rabbit/backend/cpu/cpu_shard_evaluator.hpp"
#include "rabbit/core/error.hpp"
#include "support/model_fixtures.hpp"
#include "support/shard_test_helpers.hpp"

namespace rabbit {
namespace {

using testing::ShardConfig;

std::vector<std::pair<std::string, ShardConfig>> configs() {
  std::vector<std::pair<std::string, ShardConfig>> out;
  for (bool sparse : {false, true})
    for (auto& [name, cfg] : fixtures::bb_mode_matrix(sparse)) out.push_back({name, cfg});
  ShardConfig c;
  c.legacy_kstat = true;
  out.push_back({"legacy_lite", c});
  c = ShardConfig();
  c.min_bb_kstat = 60.0;
  out.push_back({"min_bb_kstat_lite", c});
  c.bb_mode = BBMode::full;
  out.push_back({"min_bb_kstat_full", c});
  c = ShardConfig();
  c.zero_variance_process = false;
  out.push_back({"lite_without_zero_variance", c});
  return out;
}

TEST(BBStatistics, EqualsTheCpuShardsOwnStatistics) {
  for (const auto& [name, cfg] : configs()) {
    SCOPED_TRACE(name);
    auto model = testing::make_test_model(testing::make_test_input(cfg), cfg);
    const BBStatistics stats(*model);
    auto shard = make_cpu_shard(model, 0, model->input->nbins, 1);
    const auto& cpu = dynamic_cast<const CpuShardEvaluator&>(*shard);
    ASSERT_EQ(stats.on(), cpu.has_bb());
    ASSERT_EQ(stats.entries(), cpu.bb_entries());
    if (!stats.on()) continue;
    EXPECT_EQ(stats.full(), cpu.bb_full());
    for (int64_t e = 0; e < stats.entries(); ++e) {
      EXPECT_EQ(stats.kstat()[e], cpu.bb_kstat()[e]) << "entry " << e;
      EXPECT_EQ(stats.mask()[e], cpu.bb_mask()[e]) << "entry " << e;
    }
    EXPECT_EQ(stats.default_centres(), cpu.default_beta_centres());
    // √σ² as the CPU shard takes it (Eigen's cwiseSqrt, which may differ from std::sqrt in the last bit)
    for (int64_t e = 0; e < stats.entries(); ++e)
      EXPECT_DOUBLE_EQ(stats.sqrt_sigma2()[e], std::sqrt(stats.sigma2()[e])) << "entry " << e;
  }
}

TEST(BBStatistics, MaskAndZeroVarianceFlagsFollowTheInput) {
  ShardConfig cfg;  // lite gamma: bin 4 without MC statistics, process 2 without sumw2
  auto model = testing::make_test_model(testing::make_test_input(cfg), cfg);
  const BBStatistics stats(*model);
  const int64_t P = model->input->nproc;
  EXPECT_TRUE(stats.mask()[4]);
  EXPECT_EQ(stats.kstat()[4], 1.0);
  EXPECT_TRUE(stats.any_zero_var());
  for (int64_t b = 0; b < model->input->nbinsfull; ++b)
    EXPECT_EQ(stats.zero_var()[b * P + 2], model->input->sumw2[b * P + 2] == 0.0) << "bin " << b;
}

// Full mode: per (bin, process) the test data have k below 60 (lite sums stay above it).
TEST(BBStatistics, MinBBKstatMasksTheEntriesBelowIt) {
  {
    ShardConfig cfg;
    cfg.bb_mode = BBMode::full;
    cfg.min_bb_kstat = 60.0;
    auto model = testing::make_test_model(testing::make_test_input(cfg), cfg);
    const BBStatistics stats(*model);
    int below = 0;  // masked entries with MC statistics (the test data give them w̄ > 0)
    for (int64_t e = 0; e < stats.entries(); ++e) {
      if (stats.sigma2()[e] > 0.0 && stats.mask()[e]) ++below;
    }
    EXPECT_GT(below, 0) << "the threshold masks entries with MC statistics";
  }
}

TEST(BBStatistics, CurvatureIsTheConstraintsSecondDerivative) {
  for (BBType type : {BBType::gamma, BBType::normal_multiplicative, BBType::normal_additive}) {
    SCOPED_TRACE(to_string(type));
    ShardConfig cfg;
    cfg.bb_type = type;
    auto model = testing::make_test_model(testing::make_test_input(cfg), cfg);
    const BBStatistics stats(*model);
    const double beta = 0.9, beta0 = 1.2;
    for (int64_t e : {int64_t(0), int64_t(4)}) {  // a regular and a masked bin
      const double k = stats.kstat()[e];
      auto c = [&](double b) {
        if (type == BBType::gamma) return k * (b - beta0) - k * beta0 * (std::log(b) - std::log(beta0));
        return type == BBType::normal_multiplicative ? 0.5 * k * (b - beta0) * (b - beta0)
                                                     : 0.5 * (b - beta0) * (b - beta0);
      };
      const double h = 1e-4, fd = (c(beta + h) - 2.0 * c(beta) + c(beta - h)) / (h * h);
      const bool held = stats.mask()[e] && type != BBType::normal_additive;
      EXPECT_NEAR(stats.curvature(e, beta, beta0), held ? 0.0 : fd, 1e-6 * std::max(1.0, std::abs(fd))) << e;
    }
  }
}

TEST(BBStatistics, FullModeNeedsPerProcessStatistics) {
  ShardConfig cfg;
  cfg.legacy_kstat = true;
  cfg.bb_mode = BBMode::full;
  auto model = testing::make_test_model(testing::make_test_input(cfg), cfg);
  EXPECT_THROW(BBStatistics{*model}, InputError);
}

}  // namespace
}  // namespace rabbit
