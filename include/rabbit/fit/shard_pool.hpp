#pragma once
// ShardPool: runs fn(0) … fn(N−1) concurrently, one host thread per shard (docs/sharding-and-gpu.md
// "MultiDeviceFitter"). Shard 0 runs on the calling thread, shard i > 0 always on persistent worker i
// (so a CUDA shard's device and a CPU shard's first-touched memory stay with one thread). Exceptions
// thrown by a shard are rethrown on the caller, the lowest shard first. Used by MultiDeviceFitter and
// by an MPI rank over its local shards (docs/mpi.md "Local shards of a rank").
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace rabbit {

class ShardPool {
 public:
  explicit ShardPool(size_t n);
  ~ShardPool();
  ShardPool(const ShardPool&) = delete;
  ShardPool& operator=(const ShardPool&) = delete;

  size_t size() const { return errors_.size(); }
  /// fn(i) for every i < size(), concurrently; returns when all are done.
  void run(const std::function<void(size_t)>& fn);

 private:
  void work(size_t index);

  std::mutex mutex_;
  std::condition_variable start_, done_;
  std::vector<std::thread> workers_;
  std::vector<std::exception_ptr> errors_;
  const std::function<void(size_t)>* task_ = nullptr;
  size_t pending_ = 0;
  uint64_t generation_ = 0;
  bool stop_ = false;
};

}  // namespace rabbit
