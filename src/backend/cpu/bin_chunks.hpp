#pragma once
// The bins of a CPU shard cut into fixed chunks that the shard's threads take one at a time
// (docs/architecture.md "Threads"). Each chunk sums into its own accumulator and the accumulators
// are added in chunk order, so a value, gradient or HVP does not depend on how many threads ran or
// which thread took which chunk; a thread that is descheduled holds up one chunk, not a fixed half
// of the bins.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>

#include "rabbit/core/worker_pool.hpp"

namespace rabbit::cpu_detail {

struct BinChunks {
  int64_t begin = 0, end = 0, per_chunk = 1;

  /// Chunks of the bins [begin, end) holding `entries` entries, for sums of `width` doubles per
  /// column (the accumulator's W + per-process rows) over 1 + k columns. At most kMaxChunks chunks,
  /// and few enough that zeroing and adding the chunks' sums stays under 1/8 of the evaluation's
  /// reads of the tensor (entries · W doubles): depends on the model and k, never on the threads.
  static BinChunks make(int64_t begin, int64_t end, int64_t entries, int64_t W, int64_t width, int64_t k) {
    constexpr int64_t kMaxChunks = 64;
    const int64_t nb = std::max<int64_t>(end - begin, 0);
    const double by_memory = static_cast<double>(entries) * static_cast<double>(W) /
                             (8.0 * static_cast<double>((1 + k) * std::max<int64_t>(width, 1)));
    const int64_t count = std::clamp<int64_t>(static_cast<int64_t>(std::min(by_memory, 1e9)), 1,
                                              std::max<int64_t>(1, std::min(kMaxChunks, nb)));
    BinChunks c;
    c.begin = begin;
    c.end = std::max(begin, end);
    c.per_chunk = std::max<int64_t>(1, (nb + count - 1) / count);
    return c;
  }
  int64_t count() const { return (end - begin + per_chunk - 1) / per_chunk; }
  int64_t first(int64_t c) const { return begin + c * per_chunk; }
  int64_t last(int64_t c) const { return std::min(end, first(c) + per_chunk); }
};

/// Hands out chunk numbers 0, 1, … to whichever thread asks next.
class ChunkQueue {
 public:
  explicit ChunkQueue(int64_t count) : count_(count) {}
  /// The next chunk nobody has taken, or −1 when all are taken.
  int64_t take() {
    const int64_t c = next_.fetch_add(1, std::memory_order_relaxed);
    return c < count_ ? c : -1;
  }

 private:
  std::atomic<int64_t> next_{0};
  const int64_t count_;
};

/// The chunks of one evaluation with backup execution (docs/architecture.md "Threads"): threads take
/// chunks from a queue; when the queue is empty the caller computes every chunk that is still held
/// by another thread itself, and the evaluation is complete as soon as each chunk has a result,
/// whoever produced it. A chunk's result is a pure function of the chunk and the evaluation's inputs,
/// so the first thread to finish publishes it (a compare-and-swap on the chunk's slot) and the other
/// drops its own copy; the results are then added in chunk order as before. Every thread computes into
/// a Result of its own, so a thread that resumes after the evaluation is over writes nothing that
/// anyone reads; it holds this object (shared_ptr) until it leaves.
template <class Result>
class BackedUpChunks {
 public:
  explicit BackedUpChunks(int64_t count)
      : queue_(count), count_(count), slots_(new std::atomic<Result*>[count]) {
    for (int64_t c = 0; c < count; ++c) slots_[c].store(nullptr, std::memory_order_relaxed);
  }
  ~BackedUpChunks() {
    for (int64_t c = 0; c < count_; ++c) delete slots_[c].load(std::memory_order_acquire);
  }
  BackedUpChunks(const BackedUpChunks&) = delete;
  BackedUpChunks& operator=(const BackedUpChunks&) = delete;

  int64_t count() const { return count_; }
  bool done(int64_t c) const { return slots_[c].load(std::memory_order_relaxed) != nullptr; }

  /// Computes chunks from the queue until it is empty. compute(c, result) fills a default-constructed
  /// Result for chunk c and returns false when it gave up because done(c) became true.
  template <class Compute>
  void take(Compute&& compute) {
    for (int64_t c; (c = queue_.take()) >= 0;) {
      if (auto hook = WorkerPool::item_taken_hook.load(std::memory_order_relaxed)) hook();
      run_one(c, compute);
    }
  }

  /// On the caller, after take(): computes every chunk that has no result yet (held by a thread that
  /// has not finished it), so that on return every chunk has one.
  template <class Compute>
  void back_up(Compute&& compute) {
    for (int64_t c = 0; c < count_; ++c)
      if (!done(c)) run_one(c, compute);
  }

  /// Chunk c's result; only after back_up() has returned (on the caller).
  Result& result(int64_t c) { return *slots_[c].load(std::memory_order_acquire); }
  const Result& result(int64_t c) const { return *slots_[c].load(std::memory_order_acquire); }

 private:
  template <class Compute>
  void run_one(int64_t c, Compute& compute) {
    auto mine = std::make_unique<Result>();
    if (!compute(c, *mine)) return;  // another thread published c meanwhile
    Result* expected = nullptr;
    // release: the result's contents before its pointer; acquire: the winner's contents (result())
    if (slots_[c].compare_exchange_strong(expected, mine.get(), std::memory_order_acq_rel,
                                          std::memory_order_acquire))
      mine.release();
  }

  ChunkQueue queue_;
  const int64_t count_;
  std::unique_ptr<std::atomic<Result*>[]> slots_;
};

}  // namespace rabbit::cpu_detail
