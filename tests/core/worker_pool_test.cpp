// The threads of a CPU shard (docs/architecture.md "Threads"): every index runs once per run, on
// distinct threads with the caller as index 0; runs follow each other many times without loss;
// a nested run and exceptions behave as documented in rabbit/core/worker_pool.hpp.
#include "rabbit/core/worker_pool.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

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
