#pragma once
// The CPU (Eigen + OpenMP) implementation of ShardEvaluator and of the host YieldModel.
#include <cstdint>
#include <memory>

#include "rabbit/model/model.hpp"
#include "rabbit/model/shard_evaluator.hpp"
#include "rabbit/model/yield_model.hpp"

namespace rabbit {

/// A CPU shard over observed bins [bin_begin, bin_end) using up to `threads` OpenMP threads
/// (0: all available).
std::unique_ptr<ShardEvaluator> make_cpu_shard(std::shared_ptr<const Model> model, int64_t bin_begin,
                                               int64_t bin_end, int threads = 0);

/// A host yield model over all observed bins of `model` (a CPU shard), for fits whose shards are
/// not CPU shards (docs/architecture.md "The seams").
std::unique_ptr<YieldModel> make_host_yield_model(std::shared_ptr<const Model> model, int threads = 0);

}  // namespace rabbit
