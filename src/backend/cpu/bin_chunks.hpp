#pragma once
// The bins of a CPU shard cut into fixed chunks that the shard's threads take one at a time
// (docs/architecture.md "Threads"). Each chunk sums into its own accumulator and the accumulators
// are added in chunk order, so a value, gradient or HVP does not depend on how many threads ran or
// which thread took which chunk; a thread that is descheduled holds up one chunk, not a fixed half
// of the bins.
#include <algorithm>
#include <atomic>
#include <cstdint>

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

}  // namespace rabbit::cpu_detail
