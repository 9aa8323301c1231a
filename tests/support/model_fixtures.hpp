#pragma once
// Fitter-level fixtures shared by the CUDA backend tests (tests/backend/cuda) and the sharding
// tests (tests/fit): the in-memory test models come from the CPU shard's helpers
// (backend/cpu/shard_test_helpers.hpp); this header adds what the sharded / GPU comparisons need
// on top — fitters over given shards, the comparison metric (scaled_max_error, from
// support/error_measures.hpp), data without empty bins, and the GPU-skip guard.
#include <gtest/gtest.h>

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "rabbit/backend/cpu/cpu_shard.hpp"
#include "rabbit/fit/devices.hpp"
#include "rabbit/fit/fitter.hpp"
#include "rabbit/fit/multi_device_fitter.hpp"
#include "support/error_measures.hpp"
#include "support/shard_test_helpers.hpp"

/// Skips the test with a message when the build has no CUDA or no GPU is visible.
#define RABBIT_REQUIRE_GPU()                                                  \
  do {                                                                        \
    if (!::rabbit::built_with_cuda())                                         \
      GTEST_SKIP() << "built without CUDA (configure with -DRABBIT_CUDA=ON)"; \
    std::string rabbit_no_gpu_reason;                                         \
    if (::rabbit::visible_gpus(&rabbit_no_gpu_reason).empty())                \
      GTEST_SKIP() << "no GPU visible: " << rabbit_no_gpu_reason;             \
  } while (0)

namespace rabbit::fixtures {

using test::scaled_max_error;

/// Replaces empty observed bins by 3 events (the GPU tests' data). Lite Poisson empty bins (the n = 0
/// roots, docs/likelihood.md "Corner cases chosen") are compared between the backends by the host-emulated
/// pipeline tests, which keep them.
inline void fill_empty_bins(FitInputData& input) {
  for (int64_t b = 0; b < input.data_obs.size(); ++b)
    if (input.data_obs[b] == 0.0) input.data_obs[b] = 3.0;
}

/// The test model of `cfg` on data without empty bins.
inline std::shared_ptr<Model> regular_model(const testing::ShardConfig& cfg) {
  auto in = testing::make_test_input(cfg);
  fill_empty_bins(*in);
  return testing::make_test_model(in, cfg);
}

/// Fitter over the given shards: a plain Fitter for one, a MultiDeviceFitter for several.
inline std::unique_ptr<Fitter> fitter_over(std::shared_ptr<Model> model,
                                           std::vector<std::unique_ptr<ShardEvaluator>> shards) {
  if (shards.size() == 1) return std::make_unique<Fitter>(std::move(model), std::move(shards));
  return std::make_unique<MultiDeviceFitter>(std::move(model), std::move(shards));
}

/// One CPU shard over all observed bins (the reference of every comparison).
inline std::unique_ptr<Fitter> single_cpu_fitter(std::shared_ptr<Model> model, int threads = 1) {
  std::vector<std::unique_ptr<ShardEvaluator>> shards;
  shards.push_back(make_cpu_shard(model, 0, model->input->nbins, threads));
  return std::make_unique<Fitter>(std::move(model), std::move(shards));
}

/// CPU shards over [edges[s], edges[s+1]) (edges from 0 to nbins; repeated edges give empty shards),
/// always a MultiDeviceFitter.
inline std::unique_ptr<Fitter> cpu_shards_at(std::shared_ptr<Model> model,
                                             const std::vector<int64_t>& edges) {
  std::vector<std::unique_ptr<ShardEvaluator>> shards;
  for (size_t s = 0; s + 1 < edges.size(); ++s)
    shards.push_back(make_cpu_shard(model, edges[s], edges[s + 1], 1));
  return std::make_unique<MultiDeviceFitter>(std::move(model), std::move(shards));
}

/// k deterministic, dense HVP directions of length n.
inline Eigen::MatrixXd test_directions(int64_t n, int k) {
  Eigen::MatrixXd V(n, k);
  for (int64_t i = 0; i < n; ++i)
    for (int j = 0; j < k; ++j) V(i, j) = std::cos(0.3 + i * 0.9 + j * 0.4);
  return V;
}

/// One named shard configuration of a parameterised backend test.
struct NamedConfig {
  std::string name;
  testing::ShardConfig cfg;
};

/// The BB matrix every backend is checked over: no BB, then lite/full × gamma/normal-multiplicative/
/// normal-additive × Poisson/chi2, for dense or sparse storage ("dense_lite_gamma_chisq", ...).
inline std::vector<NamedConfig> bb_mode_matrix(bool sparse) {
  using testing::ShardConfig;
  const std::string tag = sparse ? "sparse" : "dense";
  std::vector<NamedConfig> out;
  ShardConfig c;
  c.sparse = sparse;
  c.bb = false;
  out.push_back({tag + "_nobb", c});
  for (BBMode mode : {BBMode::lite, BBMode::full})
    for (BBType type : {BBType::gamma, BBType::normal_multiplicative, BBType::normal_additive})
      for (DataLikelihood lk : {DataLikelihood::poisson, DataLikelihood::chisq}) {
        ShardConfig d;
        d.sparse = sparse;
        d.bb_mode = mode;
        d.bb_type = type;
        d.likelihood = lk;
        out.push_back({tag + (mode == BBMode::lite ? "_lite_" : "_full_") +
                           (type == BBType::gamma             ? "gamma"
                            : type == BBType::normal_additive ? "nadd"
                                                              : "nmult") +
                           (lk == DataLikelihood::chisq ? "_chisq" : ""),
                       d});
      }
  return out;
}

}  // namespace rabbit::fixtures
