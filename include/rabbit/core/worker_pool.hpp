#pragma once
// WorkerPool: the threads of one CPU shard (docs/architecture.md "Threads"). run(T, fn) calls fn(t)
// for t = 0 … T−1, t = 0 on the calling thread, and returns when all calls have returned. Idle
// workers spin for a few tens of microseconds, then sleep in the kernel (futex): a pool never burns
// a core between evaluations, which OpenMP's default spinning did (docs/benchmarks.md "Threads").
#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace rabbit {

class WorkerPool {
 public:
  /// A pool of `threads` (≥ 1) including the caller; the threads start at the first run() that needs them.
  explicit WorkerPool(int threads);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  int size() const { return threads_; }

  /// fn(0) … fn(T−1) with T = min(threads, size()), fn(0) on the caller; rethrows the first
  /// exception (by t). A run() from inside fn, or from a second thread while a run is in progress,
  /// calls fn(0) … fn(T−1) one after the other on its caller.
  void run(int threads, const std::function<void(int)>& fn);

  /// Work sharing, for loops whose calls take their items from a shared queue (bin_chunks.hpp
  /// ChunkQueue), so that any set of callers finishes the work: fn(0) on the caller, fn(t),
  /// 1 ≤ t < T, on each worker that starts before fn(0) has returned; a worker that starts later
  /// skips this run. Returns when fn(0) and every worker that started have returned; rethrows the
  /// first exception (by t). A worker that is descheduled behind another process when the run
  /// begins therefore costs the caller nothing (docs/architecture.md "Threads"). Nested or
  /// concurrent calls behave as for run().
  void share(int threads, const std::function<void(int)>& fn);

 private:
  void start_workers();
  void work(int index);
  void dispatch(int T, bool shared, const std::function<void(int)>& fn);

  const int threads_;
  std::mutex run_mutex_;  // one run at a time; try_lock fails on a nested run
  std::vector<std::thread> workers_;
  std::vector<std::exception_ptr> errors_;
  const std::function<void(int)>* task_ = nullptr;
  // (run number << 32) | kShared for a share() run | threads of that run, one word so that a worker
  // never pairs a run with another run's kind or thread count; workers wait on it
  std::atomic<uint64_t> job_{0};
  std::atomic<int32_t> remaining_{0};  // workers of the current run() still busy
  // share(): (run number << 32) | kOpen while the caller is in fn(0) | workers inside fn; a worker
  // joins by incrementing it while it is open and carries its own run number
  std::atomic<uint64_t> gate_{0};
  std::atomic<bool> stop_{false};
};

}  // namespace rabbit
