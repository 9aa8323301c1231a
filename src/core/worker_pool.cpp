// The thread pool of a CPU shard (rabbit/core/worker_pool.hpp).
#include "rabbit/core/worker_pool.hpp"

#include <algorithm>
#include <chrono>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace rabbit {
namespace {

// How long a thread spins before it sleeps: long enough to catch the next evaluation of a tight
// loop without a kernel round trip, short enough that a thread between evaluations does not take
// CPU from the rest of the fit or from other processes (docs/benchmarks.md "Threads").
constexpr auto kSpin = std::chrono::microseconds(30);

// the fields of WorkerPool::job_ and WorkerPool::gate_ below the run number
constexpr uint64_t kShared = uint64_t{1} << 31;
constexpr uint64_t kThreadsMask = kShared - 1;
constexpr uint64_t kOpen = uint64_t{1} << 31;
constexpr uint64_t kInside = kOpen - 1;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#endif
}

// Waits until `value` differs from `old`: spins for kSpin, then sleeps on the futex.
template <class T>
void wait_while_equal(const std::atomic<T>& value, T old) {
  const auto until = std::chrono::steady_clock::now() + kSpin;
  for (int i = 1; value.load(std::memory_order_acquire) == old; ++i) {
    cpu_relax();
    if (i % 64 == 0 && std::chrono::steady_clock::now() > until) {
      while (value.load(std::memory_order_acquire) == old) value.wait(old, std::memory_order_acquire);
      return;
    }
  }
}

}  // namespace

WorkerPool::WorkerPool(int threads) : threads_(std::max(1, threads)), errors_(threads_) {}

WorkerPool::~WorkerPool() {
  stop_.store(true, std::memory_order_release);
  job_.fetch_add(uint64_t{1} << 32, std::memory_order_acq_rel);
  job_.notify_all();
  for (auto& w : workers_) w.join();
}

void WorkerPool::start_workers() {
  for (int i = 1; i < threads_; ++i) workers_.emplace_back([this, i] { work(i); });
}

void WorkerPool::work(int index) {
  uint64_t seen = 0;
  for (;;) {
    wait_while_equal(job_, seen);
    seen = job_.load(std::memory_order_acquire);
    if (stop_.load(std::memory_order_acquire)) return;
    // A worker not needed in this run skips it. One that is needed by run() is waited for, so task_
    // stays this run's until it has reported back; one of a share() run enters only through the
    // gate while the caller is still in fn(0), and the caller then waits for it in the same way.
    if (index >= static_cast<int>(seen & kThreadsMask)) continue;
    const bool shared = (seen & kShared) != 0;
    if (shared) {
      const uint64_t run = seen >> 32;
      uint64_t g = gate_.load(std::memory_order_acquire);
      bool joined = false;
      while ((g >> 32) == (run & 0xffffffffu) && (g & kOpen) != 0 && !joined)
        joined = gate_.compare_exchange_weak(g, g + 1, std::memory_order_acq_rel, std::memory_order_acquire);
      if (!joined) continue;
    }
    try {
      (*task_)(index);
    } catch (...) {
      errors_[index] = std::current_exception();
    }
    if (shared) {
      // the caller closes the gate before it waits, so the last one out after that wakes it
      const uint64_t g = gate_.fetch_sub(1, std::memory_order_acq_rel) - 1;
      if ((g & kInside) == 0 && (g & kOpen) == 0) gate_.notify_one();
    } else if (remaining_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      remaining_.notify_one();
    }
  }
}

void WorkerPool::run(int threads, const std::function<void(int)>& fn) {
  dispatch(threads, false, fn);
}

void WorkerPool::share(int threads, const std::function<void(int)>& fn) {
  dispatch(threads, true, fn);
}

void WorkerPool::dispatch(int threads, bool shared, const std::function<void(int)>& fn) {
  const int T = std::clamp(threads, 1, threads_);
  std::unique_lock<std::mutex> lock(run_mutex_, std::try_to_lock);
  if (T == 1 || !lock.owns_lock()) {
    for (int t = 0; t < T; ++t) fn(t);
    return;
  }
  if (workers_.empty()) start_workers();
  for (auto& e : errors_) e = nullptr;
  task_ = &fn;
  const uint64_t run = ((job_.load(std::memory_order_relaxed) >> 32) + 1) & 0xffffffffu;
  if (shared) {
    gate_.store((run << 32) | kOpen, std::memory_order_release);
  } else {
    remaining_.store(T - 1, std::memory_order_relaxed);
  }
  job_.store((run << 32) | (shared ? kShared : 0) | static_cast<uint64_t>(T),
             std::memory_order_release);  // publishes task_ and the gate
  job_.notify_all();
  try {
    fn(0);
  } catch (...) {
    errors_[0] = std::current_exception();
  }
  if (shared) {
    // close the gate: workers that have not entered by now skip this run
    for (uint64_t g = gate_.fetch_and(~kOpen, std::memory_order_acq_rel) & ~kOpen; (g & kInside) != 0;
         g = gate_.load(std::memory_order_acquire))
      wait_while_equal(gate_, g);
  } else {
    for (int32_t left; (left = remaining_.load(std::memory_order_acquire)) != 0;)
      wait_while_equal(remaining_, left);
  }
  task_ = nullptr;
  for (auto& e : errors_)
    if (e) std::rethrow_exception(e);
}

}  // namespace rabbit
