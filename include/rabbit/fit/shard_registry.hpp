#pragma once
// The shard kinds make_fitter can build, by name (docs/architecture.md "How to add a shard kind").
// "cpu" is built in; "cuda" is registered when the CUDA plugin is loaded (cuda_plugin_loader.hpp).
// A new kind (MPI ranks, another accelerator) registers a ShardKind and make_fitter places shards
// on it without knowing its type.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "rabbit/minimize/dense_linalg.hpp"
#include "rabbit/model/model.hpp"
#include "rabbit/model/shard_evaluator.hpp"

namespace rabbit {

/// What a shard kind is asked to build: the observed bins [bin_begin, bin_end) of the model on one
/// device.
struct ShardSpec {
  std::shared_ptr<const Model> model;
  int64_t bin_begin = 0;
  int64_t bin_end = 0;
  int device = 0;   // the kind's own device index (a CUDA ordinal); 0 for the CPU
  int threads = 0;  // host threads for this shard (the CPU kind's OpenMP threads; 0: all cores)
};

struct ShardKind {
  /// Builds one shard; errors are rabbit's exceptions (ResourceError for a device that is missing
  /// or too small).
  std::function<std::unique_ptr<ShardEvaluator>(const ShardSpec&)> create;
  /// Optional: the dense linear algebra of a fit whose shards are all of this kind, on the first
  /// shard's device (cuSOLVER for "cuda"); empty: the host's default_linalg().
  std::function<std::shared_ptr<const DenseLinalg>(int device)> dense_linalg;
  /// How dense_linalg is logged, e.g. "cuSOLVER".
  std::string dense_linalg_name;
};

/// Registers (or replaces) the kind `name`. Thread-safe.
void register_shard_kind(const std::string& name, ShardKind kind);

/// The kind `name`, or nullptr when none is registered under it. The returned kind stays valid
/// until it is replaced.
const ShardKind* find_shard_kind(const std::string& name);

/// The kind `name`; Error naming the registered kinds when there is none.
const ShardKind& shard_kind(const std::string& name);

/// The registered names, sorted.
std::vector<std::string> shard_kind_names();

}  // namespace rabbit
