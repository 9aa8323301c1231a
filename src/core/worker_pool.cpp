// The thread pool of a CPU shard (rabbit/core/worker_pool.hpp).
#include "rabbit/core/worker_pool.hpp"

#include <algorithm>
#include <chrono>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif
#ifdef __linux__
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#endif

namespace rabbit {
namespace {

// How long a thread spins before it sleeps: long enough to catch the next evaluation of a tight
// loop without a kernel round trip, short enough that a thread between evaluations does not take
// CPU from the rest of the fit or from other processes (docs/benchmarks.md "Threads").
constexpr auto kSpin = std::chrono::microseconds(30);

// the fields of WorkerPool::job_ and WorkerPool::gate_ below the run number
constexpr uint64_t kShared = uint64_t{1} << 31;
constexpr uint64_t kDetached = uint64_t{1} << 30;
constexpr uint64_t kThreadsMask = kDetached - 1;
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

// A worker asks the scheduler for a short slice. With Linux's EEVDF scheduler (6.12 and later) a woken
// SCHED_OTHER thread whose slice is shorter than the running task's preempts that task at once instead of
// waiting until its slice (about 3 ms) is used up: a worker woken for a 1-ms evaluation on a CPU that a
// busy process holds then joins it (docs/benchmarks.md "Contention, short evaluations"). Its CPU share
// is unchanged (that follows the nice value, kept as it is); older kernels ignore the field, and a
// refusal changes nothing but the latency, so the result is not checked.
void request_short_slice() {
#ifdef __linux__
  struct SchedAttr {  // struct sched_attr of the kernel's uapi (no glibc wrapper)
    uint32_t size = sizeof(SchedAttr);
    uint32_t policy = SCHED_OTHER;
    uint64_t flags = 0;
    int32_t nice = 0;
    uint32_t priority = 0;
    uint64_t runtime = 0, deadline = 0, period = 0;
    uint32_t util_min = 0, util_max = 0;
  } attr;
  if (sched_getscheduler(0) != SCHED_OTHER) return;  // batch, idle or real-time: left as it is
  errno = 0;
  const int nice = getpriority(PRIO_PROCESS, 0);  // this thread's (Linux: per thread)
  if (errno != 0) return;
  attr.nice = nice;
  attr.runtime = 100'000;  // ns: the shortest slice the kernel accepts
  syscall(SYS_sched_setattr, 0, &attr, 0u);
#endif
}

// The CPUs of the process's affinity mask (its main thread's, which a pool never pins), in order; empty
// where it cannot be read. Not the calling thread's: a pool created on a pinned worker would see one CPU.
std::vector<int> mask_cpus() {
  std::vector<int> cpus;
#ifdef __linux__
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(getpid(), sizeof set, &set) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
#endif
  return cpus;
}

// This thread onto `cpus` (one CPU, or the whole mask); a refusal leaves it where it was.
void keep_to(const std::vector<int>& cpus) {
#ifdef __linux__
  if (cpus.empty()) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cpus) CPU_SET(c, &set);
  sched_setaffinity(0, sizeof set, &set);
#else
  (void)cpus;
#endif
}

}  // namespace

std::atomic<void (*)()> WorkerPool::item_taken_hook{nullptr};

WorkerPool::WorkerPool(int threads) : threads_(std::max(1, threads)), errors_(threads_) {}

WorkerPool::~WorkerPool() {
  stop_.store(true, std::memory_order_release);
  job_.fetch_add(uint64_t{1} << 32, std::memory_order_acq_rel);
  job_.notify_all();
  for (auto& w : workers_) w.join();
}

void WorkerPool::start_workers() {
  // With one thread per CPU of the affinity mask (the default count), worker i keeps to the mask's CPU i
  // and the caller, thread 0, has CPU 0 to itself. Left free, a worker woken while a busy process holds
  // its CPU is placed by the kernel on the caller's CPU (the less loaded one) and takes turns with the
  // caller there, so that a 1-ms evaluation runs on one CPU; kept to its own CPU with a short slice it
  // preempts the busy process instead (docs/benchmarks.md "Contention, short evaluations"). With another
  // thread count (--nThreads, a cgroup quota) every worker gets the process's whole mask (not the creating
  // thread's, which may be a pinned worker's one CPU) and the kernel places it.
  const std::vector<int> cpus = mask_cpus();
  const bool keep = static_cast<int>(cpus.size()) == threads_;
  for (int i = 1; i < threads_; ++i)
    workers_.emplace_back([this, i, place = keep ? std::vector<int>{cpus[static_cast<size_t>(i)]} : cpus] {
      keep_to(place);
      work(i);
    });
}

void WorkerPool::work(int index) {
  request_short_slice();
  uint64_t seen = 0;
  for (;;) {
    wait_while_equal(job_, seen);
    seen = job_.load(std::memory_order_acquire);
    if (stop_.load(std::memory_order_acquire)) return;
    // A worker not needed in this run skips it. One that is needed by run() is waited for, so task_
    // stays this run's until it has reported back; one of a share() run enters only through the
    // gate while the caller is still in fn(0), and the caller then waits for it in the same way.
    if (index >= static_cast<int>(seen & kThreadsMask)) continue;
    if ((seen & kDetached) != 0) {
      work_detached(index, seen >> 32);
      continue;
    }
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

// A worker's part of a share_detached() run: it takes its own reference to the run's function, so
// that the function's state outlives the caller's return for as long as this worker is inside.
void WorkerPool::work_detached(int index, uint64_t run) {
  std::shared_ptr<const std::function<void(int)>> fn;
  {
    std::lock_guard<std::mutex> lock(detached_mutex_);
    if (detached_run_ != run || !detached_task_) return;  // the caller has returned: nothing left
    fn = detached_task_;
    detached_inside_.fetch_add(1, std::memory_order_relaxed);  // under the mutex: drain() sees it
  }
  try {
    (*fn)(index);
  } catch (...) {
    // dropped: the caller does this work again and meets the same exception
  }
  fn.reset();
  if (detached_inside_.fetch_sub(1, std::memory_order_acq_rel) == 1) detached_inside_.notify_all();
}

void WorkerPool::share_detached(int threads, std::shared_ptr<const std::function<void(int)>> fn) {
  const int T = std::clamp(threads, 1, threads_);
  std::unique_lock<std::mutex> lock(run_mutex_, std::try_to_lock);
  if (T == 1 || !lock.owns_lock()) {
    for (int t = 0; t < T; ++t) (*fn)(t);
    return;
  }
  if (workers_.empty()) start_workers();
  const uint64_t run = ((job_.load(std::memory_order_relaxed) >> 32) + 1) & 0xffffffffu;
  {
    std::lock_guard<std::mutex> task_lock(detached_mutex_);
    detached_task_ = fn;
    detached_run_ = run;
  }
  job_.store((run << 32) | kDetached | static_cast<uint64_t>(T), std::memory_order_release);
  job_.notify_all();
  // close the run when fn(0) returns or throws: a worker that has not taken fn by then skips it
  struct Close {
    WorkerPool& pool;
    ~Close() {
      std::lock_guard<std::mutex> task_lock(pool.detached_mutex_);
      pool.detached_task_.reset();
    }
  } close{*this};
  (*fn)(0);
}

void WorkerPool::drain() {
  for (int32_t inside; (inside = detached_inside_.load(std::memory_order_acquire)) != 0;)
    wait_while_equal(detached_inside_, inside);
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
