// The threads of a CPU shard (docs/architecture.md "Threads"): every index runs once per run, on
// distinct threads with the caller as index 0; runs follow each other many times without loss;
// a nested run and exceptions behave as documented in rabbit/core/worker_pool.hpp.
#include "rabbit/core/worker_pool.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
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
