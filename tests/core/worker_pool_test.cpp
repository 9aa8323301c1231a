// The threads of a CPU shard (docs/architecture.md "Threads"): every index runs once per run, on
// distinct threads with the caller as index 0; runs follow each other many times without loss;
// a nested run and exceptions behave as documented in rabbit/core/worker_pool.hpp.
#include "rabbit/core/worker_pool.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#ifdef __linux__
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#endif

using rabbit::WorkerPool;

TEST(WorkerPool, EveryIndexOnceCallerIsZero) {
  WorkerPool pool(4);
  for (int T : {1, 2, 3, 4, 7}) {
    std::vector<std::atomic<int>> calls(8);
    std::vector<std::thread::id> ids(8);
    pool.run(T, [&](int t) {
      ++calls[t];
      ids[t] = std::this_thread::get_id();
    });
    const int used = std::min(T, 4);
    for (int t = 0; t < 8; ++t) EXPECT_EQ(calls[t].load(), t < used ? 1 : 0) << "T=" << T << " t=" << t;
    EXPECT_EQ(ids[0], std::this_thread::get_id());
    std::set<std::thread::id> distinct(ids.begin(), ids.begin() + used);
    EXPECT_EQ(static_cast<int>(distinct.size()), used);
  }
}

TEST(WorkerPool, ManyRunsOfVaryingWidth) {
  WorkerPool pool(3);
  std::atomic<long> sum{0};
  long expected = 0;
  for (int r = 0; r < 2000; ++r) {
    const int T = 1 + r % 3;
    pool.run(T, [&](int t) { sum += t + 1; });
    expected += T * (T + 1) / 2;
  }
  EXPECT_EQ(sum.load(), expected);
}

TEST(WorkerPool, NestedRunIsSerialOnItsCaller) {
  WorkerPool pool(2);
  std::atomic<int> inner{0};
  pool.run(2, [&](int) {
    const auto me = std::this_thread::get_id();
    pool.run(2, [&](int) {
      EXPECT_EQ(std::this_thread::get_id(), me);
      ++inner;
    });
  });
  EXPECT_EQ(inner.load(), 4);
}

TEST(WorkerPool, ExceptionOfAWorkerReachesTheCaller) {
  WorkerPool pool(3);
  EXPECT_THROW(pool.run(3,
                        [](int t) {
                          if (t == 2) throw std::runtime_error("worker 2");
                        }),
               std::runtime_error);
  // the pool still works afterwards
  std::atomic<int> n{0};
  pool.run(3, [&](int) { ++n; });
  EXPECT_EQ(n.load(), 3);
}

// share(): the items of a shared queue are each done once, whoever joins; a worker never runs a
// share() call's function after that call has returned (a late worker skips the run).
TEST(WorkerPool, ShareDoesEveryItemOnceAndNothingAfterReturning) {
  WorkerPool pool(3);
  constexpr int kItems = 16;
  std::atomic<int> finished{-1}, late{0};
  for (int r = 0; r < 2000; ++r) {
    std::vector<std::atomic<int>> done(kItems);
    std::atomic<int> next{0};
    pool.share(1 + r % 3, [&](int) {
      if (finished.load() >= r) ++late;
      for (int i; (i = next.fetch_add(1)) < kItems;) ++done[i];
      if (finished.load() >= r) ++late;
    });
    finished.store(r);
    for (int i = 0; i < kItems; ++i) ASSERT_EQ(done[i].load(), 1) << "run " << r << " item " << i;
    // give a late worker time to find this run before the next one starts
    if (r % 4 == 0) std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  EXPECT_EQ(late.load(), 0);
}

// A worker that starts while the caller is still in fn(0) is waited for.
TEST(WorkerPool, ShareWaitsForAWorkerThatJoined) {
  WorkerPool pool(2);
  for (int r = 0; r < 50; ++r) {
    std::atomic<bool> worker_in{false}, worker_out{false};
    pool.share(2, [&](int t) {
      if (t == 0) {
        while (!worker_in.load()) std::this_thread::yield();
      } else {
        worker_in = true;
        std::this_thread::sleep_for(std::chrono::microseconds(200));
        worker_out = true;
      }
    });
    EXPECT_TRUE(worker_out.load()) << "run " << r;
  }
}

TEST(WorkerPool, ShareRethrowsAWorkersException) {
  WorkerPool pool(2);
  std::atomic<bool> worker_in{false};
  EXPECT_THROW(pool.share(2,
                          [&](int t) {
                            if (t == 0) {
                              while (!worker_in.load()) std::this_thread::yield();
                            } else {
                              worker_in = true;
                              throw std::runtime_error("worker 1");
                            }
                          }),
               std::runtime_error);
  std::atomic<int> n{0};
  pool.run(2, [&](int) { ++n; });
  EXPECT_EQ(n.load(), 2);
}

// share_detached(): the caller returns when fn(0) returns, while a worker is still inside fn; the
// worker's own reference keeps fn (and what it owns) alive until it leaves; drain() waits for it.
TEST(WorkerPool, ShareDetachedReturnsWithoutAWorkerStillInside) {
  WorkerPool pool(2);
  for (int r = 0; r < 10; ++r) {
    auto inside = std::make_shared<std::atomic<bool>>(false);
    auto released = std::make_shared<std::atomic<bool>>(false);
    auto outcome =
        std::make_shared<std::atomic<int>>(0);  // 1: the worker was released after the caller returned
    std::weak_ptr<const std::function<void(int)>> watch;
    {
      auto fn = std::make_shared<const std::function<void(int)>>([=](int t) {
        const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        if (t == 0) {
          while (!inside->load() && std::chrono::steady_clock::now() < until)
            std::this_thread::sleep_for(std::chrono::microseconds(100));
        } else {
          inside->store(true);
          while (!released->load() && std::chrono::steady_clock::now() < until)
            std::this_thread::sleep_for(std::chrono::microseconds(100));
          outcome->store(released->load() ? 1 : 2);
        }
      });
      watch = fn;
      pool.share_detached(2, fn);
    }
    ASSERT_TRUE(inside->load()) << "run " << r;
    EXPECT_EQ(outcome->load(), 0) << "run " << r;  // the worker is still inside
    EXPECT_FALSE(watch.expired()) << "run " << r;  // and holds fn
    released->store(true);
    pool.drain();
    EXPECT_EQ(outcome->load(), 1) << "run " << r;
    EXPECT_TRUE(watch.expired()) << "run " << r;
  }
  // the pool still runs and joins as before
  std::atomic<int> n{0};
  pool.run(2, [&](int) { ++n; });
  EXPECT_EQ(n.load(), 2);
}

// Each index runs at most once per run, index 0 on the caller; fn(0)'s exception reaches the caller.
TEST(WorkerPool, ShareDetachedRunsEachIndexAtMostOnceAndRethrowsTheCallers) {
  WorkerPool pool(3);
  const auto me = std::this_thread::get_id();
  for (int r = 0; r < 500; ++r) {
    auto calls = std::make_shared<std::vector<std::atomic<int>>>(3);
    auto caller_ok = std::make_shared<std::atomic<bool>>(false);
    pool.share_detached(3, std::make_shared<const std::function<void(int)>>([=](int t) {
                          ++(*calls)[t];
                          if (t == 0) caller_ok->store(std::this_thread::get_id() == me);
                        }));
    pool.drain();
    EXPECT_TRUE(caller_ok->load()) << "run " << r;
    EXPECT_EQ((*calls)[0].load(), 1) << "run " << r;
    for (int t = 1; t < 3; ++t) EXPECT_LE((*calls)[t].load(), 1) << "run " << r << " index " << t;
  }
  EXPECT_THROW(pool.share_detached(2, std::make_shared<const std::function<void(int)>>([](int t) {
                                     if (t == 0) throw std::runtime_error("caller");
                                   })),
               std::runtime_error);
  std::atomic<int> n{0};
  pool.run(3, [&](int) { ++n; });
  EXPECT_EQ(n.load(), 3);
}

#ifdef __linux__
namespace {

std::vector<int> this_threads_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}

// sched_attr.sched_runtime of this thread: the slice a SCHED_OTHER thread asked for (Linux ≥ 6.12).
uint64_t this_threads_slice_request() {
  struct {
    uint32_t size, policy;
    uint64_t flags;
    int32_t nice;
    uint32_t priority;
    uint64_t runtime, deadline, period;
    uint32_t util_min, util_max;
  } attr{};
  if (syscall(SYS_sched_getattr, 0, &attr, sizeof attr, 0u) != 0) return 0;
  return attr.runtime;
}

// Whether a new thread here may ask for a 0.1-ms slice and reads it back (Linux ≥ 6.12, not refused by
// a sandbox's seccomp filter).
bool slice_requests_work() {
  bool works = false;
  std::thread([&] {
    struct {
      uint32_t size = 56, policy = SCHED_OTHER;
      uint64_t flags = 0;
      int32_t nice = 0;
      uint32_t priority = 0;
      uint64_t runtime = 100'000, deadline = 0, period = 0;
      uint32_t util_min = 0, util_max = 0;
    } attr;
    attr.nice = getpriority(PRIO_PROCESS, 0);
    works = sched_getscheduler(0) == SCHED_OTHER && syscall(SYS_sched_setattr, 0, &attr, 0u) == 0 &&
            this_threads_slice_request() == 100'000u;
  }).join();
  return works;
}

}  // namespace

TEST(WorkerPool, OneThreadPerCpuKeepsEachWorkerToItsCpu) {
  // docs/benchmarks.md "Contention, short evaluations": worker i on the mask's CPU i, the caller free.
  const std::vector<int> cpus = this_threads_cpus();
  if (cpus.size() < 2) GTEST_SKIP() << "one CPU in the affinity mask";
  const int n = static_cast<int>(cpus.size());
  std::vector<std::vector<int>> seen(static_cast<size_t>(n));
  std::vector<uint64_t> slice(static_cast<size_t>(n));
  {
    WorkerPool pool(n);
    pool.run(n, [&](int t) {
      seen[static_cast<size_t>(t)] = this_threads_cpus();
      slice[static_cast<size_t>(t)] = this_threads_slice_request();
    });
  }
  EXPECT_EQ(seen[0], cpus);  // the caller keeps its mask
  for (int t = 1; t < n; ++t) {
    EXPECT_EQ(seen[static_cast<size_t>(t)], std::vector<int>{cpus[static_cast<size_t>(t)]}) << "worker " << t;
    if (slice_requests_work()) EXPECT_EQ(slice[static_cast<size_t>(t)], 100'000u) << "worker " << t;
  }
  // More threads than CPUs: the kernel places them (every worker keeps the whole mask).
  std::vector<std::vector<int>> few(2);
  {
    WorkerPool pool(n + 1);
    pool.run(2, [&](int t) { few[static_cast<size_t>(t)] = this_threads_cpus(); });
  }
  EXPECT_EQ(few[1], cpus);
  // A pool created on a pinned worker: its workers get the process's mask, not the worker's one CPU.
  std::vector<int> nested;
  {
    WorkerPool outer(n);
    outer.run(2, [&](int t) {
      if (t != 1) return;
      WorkerPool inner(n + 1);
      inner.run(2, [&](int u) {
        if (u == 1) nested = this_threads_cpus();
      });
    });
  }
  EXPECT_EQ(nested, cpus);
}
#endif
