#pragma once
// The CUDA shard's sums over bins (per-process sums, the NLL value) as a whole-GPU two-stage
// reduction whose order is fixed by two compile-time constants only (docs/sharding-and-gpu.md
// "Deterministic reductions"): stage 1 cuts the bins into chunks of kSumChunk consecutive bins, one
// block per (chunk, output); lane t of a block adds the chunk's values t, t + kSumLanes, ... in order,
// then the kSumLanes lanes are added by a fixed halving tree. Stage 2 reduces each output's chunk
// partials the same way in one block (skipped when there is one chunk). The result is bitwise the
// same run to run, on any GPU and in the host mirror below, which the tests compare with.
#include <algorithm>
#include <cstdint>
#include <vector>

namespace rabbit::pipeline {

inline constexpr int kSumLanes = 256;       // threads of a reduction block = lanes of the tree
inline constexpr int64_t kSumChunk = 2048;  // bins per stage-1 block

inline int64_t sum_chunks(int64_t nbins) {
  return nbins <= 0 ? 1 : (nbins + kSumChunk - 1) / kSumChunk;
}

/// Host mirror of one block's reduction of n values get(0..n): lanes, then the halving tree.
template <class Get>
double lane_tree_sum(int64_t n, Get get) {
  double lane[kSumLanes] = {};
  for (int64_t i = 0; i < n; ++i) lane[i % kSumLanes] += get(i);
  for (int w = kSumLanes / 2; w > 0; w /= 2)
    for (int t = 0; t < w; ++t) lane[t] += lane[t + w];
  return lane[0];
}

/// Host mirror of the two stages: out[p + P·j] = Σ_b in[b·P + p + ld·j], in the device's order.
inline void fixed_order_sum_over_bins(const double* in, int64_t nbins, int nproc, int64_t ld, int k,
                                      double* out) {
  const int64_t chunks = sum_chunks(nbins);
  std::vector<double> partial(chunks);
  for (int j = 0; j < k; ++j)
    for (int p = 0; p < nproc; ++p) {
      const double* col = in + p + ld * j;
      for (int64_t c = 0; c < chunks; ++c) {
        const int64_t b0 = c * kSumChunk, n = std::min<int64_t>(kSumChunk, nbins - b0);
        partial[c] = lane_tree_sum(n, [&](int64_t i) { return col[(b0 + i) * nproc]; });
      }
      out[p + int64_t(nproc) * j] =
          chunks == 1 ? partial[0] : lane_tree_sum(chunks, [&](int64_t c) { return partial[c]; });
    }
}

}  // namespace rabbit::pipeline
