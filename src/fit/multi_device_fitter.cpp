#include "rabbit/fit/multi_device_fitter.hpp"

#include "rabbit/fit/shard_pool.hpp"

namespace rabbit {

MultiDeviceFitter::MultiDeviceFitter(std::shared_ptr<Model> model,
                                     std::vector<std::unique_ptr<ShardEvaluator>> shards)
    : Fitter(std::move(model), std::move(shards)),
      pool_(std::make_unique<ShardPool>(this->shards().size())) {}

// The pool goes first (members before the base), so no worker touches a shard being destroyed.
MultiDeviceFitter::~MultiDeviceFitter() = default;

void MultiDeviceFitter::for_each_shard(const std::function<void(size_t)>& fn) {
  if (!pool_ || shards().size() == 1) {
    Fitter::for_each_shard(fn);
    return;
  }
  pool_->run(fn);
}

}  // namespace rabbit
