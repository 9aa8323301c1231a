#pragma once
// MultiDeviceFitter: a Fitter over N shards that evaluates the shards concurrently, one host
// thread per shard (docs/sharding-and-gpu.md "MultiDeviceFitter"). It owns no likelihood math: the base
// Fitter sums the shards' ξ-space partials in shard order, adds the global terms once and applies the chain
// rule once, so a sharded fit differs from a single-device one only in orchestration.
//
// Threads: a ShardPool (shard_pool.hpp); shard 0 runs on the calling thread, shard i > 0 always on
// worker i. Exceptions thrown by a shard are rethrown on the caller, the lowest shard first.
#include <memory>
#include <vector>

#include "rabbit/fit/fitter.hpp"

namespace rabbit {

class ShardPool;

class MultiDeviceFitter : public Fitter {
 public:
  MultiDeviceFitter(std::shared_ptr<Model> model, std::vector<std::unique_ptr<ShardEvaluator>> shards);
  ~MultiDeviceFitter() override;

 protected:
  void for_each_shard(const std::function<void(size_t)>& fn) override;

 private:
  std::unique_ptr<ShardPool> pool_;
};

}  // namespace rabbit
