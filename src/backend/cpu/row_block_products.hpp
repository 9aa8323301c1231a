#pragma once
// The products of a dense bin's block of logk rows K (ne × W, row-major, float32 or double): K times
// double columns (Λ = K·m, δΛ = K·U in phase A, float32 storage) and Kᵀ times double columns (the
// gradient's Kᵀ·w and the HVP's Kᵀ·Ω in phase B, both storages). A float is widened to double in
// registers inside the loop, so no double copy of a float32 block is written and read again
// (docs/input-reader.md "Precision"). Accumulation is in double.
//
// Phase B reads the block a second time, from cache, while no read of the tensor is in flight: the
// memory stream of a loss+grad stalls for the length of the product. Kᵀ·w therefore prefetches the
// start of the next bin's block while it runs (`NextBlock`), spread over the product so that the
// requests overlap its arithmetic (docs/benchmarks.md "Loss and gradient").
//
// Summation order (docs/likelihood.md "Threads"): an element of K·X is summed over its row in
// kLanes interleaved partial sums, combined in a fixed tree, then the tail columns in order; an
// element of Kᵀ·w adds the rows in order. Both depend only on W and the row, never on the thread
// count or on which rows share a register block, so results are bitwise the same run to run. They
// round differently from Eigen's products (within 1e-12 relative, tested in
// tests/backend/cpu/cpu_shard_float32_test.cpp).
//
// The loops are written for the vectoriser without -ffast-math: independent lanes and independent
// columns, no reassociation needed (AVX-512 / AVX2 with -march=native, SSE2 otherwise).
#include <algorithm>
#include <cstdint>

namespace rabbit::cpu_detail::row_blocks {

// 16 partial sums of one row·column dot product: two AVX-512 (four AVX2) accumulator chains per row,
// enough to hide the FMA latency (measured in cache: 8 lanes took twice as long, register blocks of
// several rows did not help).
constexpr int kLanes = 16;
// Kᵀ·w in column segments of 16 (two AVX-512 registers) that take all rows before they are stored,
// with two lines of the next block prefetched per segment, at most kPrefetchBytes per product: about
// what memory delivers to one core while the product runs from cache (measured in a bench of this
// loop at 10,000 × 10 × 2,000: one line per segment gained less, three no more; a segment taking
// four rows at a time, stored between them, was 5 % slower; docs/benchmarks.md "Loss and gradient").
constexpr int kSegment = 16;
constexpr int kLinesPerSegment = 2;
constexpr int64_t kPrefetchBytes = 24 * 1024;

/// The cache lines of the next bin's block still to prefetch: [next, end).
struct NextBlock {
  const char* next = nullptr;
  const char* end = nullptr;

  NextBlock() = default;
  /// The first min(bytes, kPrefetchBytes) bytes at `block`.
  NextBlock(const void* block, int64_t bytes)
      : next(static_cast<const char*>(block)), end(next + std::min(bytes, kPrefetchBytes)) {}
  void one_line() {
    if (next < end) {
      __builtin_prefetch(next, 0, 3);
      next += 64;
    }
  }
};

/// K row · x over W columns.
template <class T>
inline double dot_row(const T* row, int64_t W, const double* x) {
  double a[kLanes] = {};
  const int64_t Wv = W - W % kLanes;
  for (int64_t c = 0; c < Wv; c += kLanes)
    for (int l = 0; l < kLanes; ++l) a[l] += static_cast<double>(row[c + l]) * x[c + l];
  // a fixed pairwise tree over the lanes, then the tail columns in order
  for (int half = kLanes / 2; half > 0; half /= 2)
    for (int l = 0; l < half; ++l) a[l] += a[l + half];
  double s = a[0];
  for (int64_t c = Wv; c < W; ++c) s += static_cast<double>(row[c]) * x[c];
  return s;
}

/// out(r, j) = Σ_c K(r, c) X(c, j) for r < ne, j < ncols; K row-major ne × W, X column-major
/// (column stride ldx), out column-major (column stride ldo). The rows are read in order: one
/// sequential stream through the bin's block.
template <class T>
inline void rows_times(const T* K, int64_t ne, int64_t W, const double* X, int64_t ldx, int64_t ncols,
                       double* out, int64_t ldo) {
  for (int64_t r = 0; r < ne; ++r)
    for (int64_t j = 0; j < ncols; ++j) out[j * ldo + r] = dot_row(K + r * W, W, X + j * ldx);
}

/// Y(c, j) += Σ_r K(r, c) w(r, j) for c < W, j < ncols, the rows added in order; w column-major
/// (column stride ldw), Y column-major (column stride ldy). Column segments of kSegment: each
/// segment of Y is loaded once, takes every row in registers and is stored once, then
/// kLinesPerSegment lines of `next` are prefetched.
template <class T>
inline void rows_transpose_times_add(const T* K, int64_t ne, int64_t W, const double* w, int64_t ldw,
                                     int64_t ncols, double* Y, int64_t ldy, NextBlock next = {}) {
  const int64_t Ws = W - W % kSegment;
  for (int64_t j = 0; j < ncols; ++j) {
    const double* wj = w + j * ldw;
    double* y = Y + j * ldy;
    for (int64_t s = 0; s < Ws; s += kSegment) {
      double acc[kSegment];
      for (int l = 0; l < kSegment; ++l) acc[l] = y[s + l];
      for (int64_t r = 0; r < ne; ++r) {
        const double wr = wj[r];
        const T* kr = K + r * W + s;
        for (int l = 0; l < kSegment; ++l) acc[l] += wr * static_cast<double>(kr[l]);
      }
      for (int l = 0; l < kSegment; ++l) y[s + l] = acc[l];
      for (int q = 0; q < kLinesPerSegment; ++q) next.one_line();
    }
    for (int64_t c = Ws; c < W; ++c) {
      double v = y[c];
      for (int64_t r = 0; r < ne; ++r) v += wj[r] * static_cast<double>(K[r * W + c]);
      y[c] = v;
    }
  }
}

}  // namespace rabbit::cpu_detail::row_blocks
