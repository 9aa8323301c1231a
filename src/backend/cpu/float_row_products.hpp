#pragma once
// The dense bin-block products of a logk held as float32 (docs/input-reader.md "Precision"): a bin's
// rows K (ne × W, row-major float) times double columns (Λ = K·m, δΛ = K·U in phase A) and Kᵀ times
// double columns (the gradient's Kᵀ·w and the HVP's Kᵀ·Ω in phase B). Each float is widened to
// double in registers inside the loop, so no double copy of the block is written and read again: the
// products stream half the bytes of the double path's Eigen products. Accumulation is in double.
//
// Summation order (docs/likelihood.md "Threads"): an element of K·X is summed over its row in
// kLanes interleaved partial sums, combined in a fixed tree, then the tail columns in order; an
// element of Kᵀ·w adds the rows in order. Both depend only on W and the row, never on the thread
// count or on which rows share a register block, so results are bitwise the same run to run. They
// round differently from Eigen's products over a double block (within 1e-12 relative, tested in
// tests/backend/cpu/cpu_shard_float32_test.cpp).
//
// The loops are written for the vectoriser without -ffast-math: independent lanes and independent
// columns, no reassociation needed (AVX-512 / AVX2 with -march=native, SSE2's cvtps2pd otherwise).
#include <cstdint>

namespace rabbit::cpu_detail::float_rows {

// 16 partial sums of one row·column dot product: two AVX-512 (four AVX2) accumulator chains per row,
// enough to hide the FMA latency (measured in cache: 8 lanes took twice as long, register blocks of
// several rows did not help).
constexpr int kLanes = 16;
constexpr int kRowBlock = 4;  // rows sharing each load and store of a Kᵀ·w column segment

/// K row · x over W columns.
inline double dot_row(const float* row, int64_t W, const double* x) {
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
inline void rows_times(const float* K, int64_t ne, int64_t W, const double* X, int64_t ldx, int64_t ncols,
                       double* out, int64_t ldo) {
  for (int64_t r = 0; r < ne; ++r)
    for (int64_t j = 0; j < ncols; ++j) out[j * ldo + r] = dot_row(K + r * W, W, X + j * ldx);
}

/// Y(c, j) += Σ_r K(r, c) w(r, j) for c < W, j < ncols, the rows added in order; w column-major
/// (column stride ldw), Y column-major (column stride ldy).
inline void rows_transpose_times_add(const float* K, int64_t ne, int64_t W, const double* w, int64_t ldw,
                                     int64_t ncols, double* Y, int64_t ldy) {
  int64_t r = 0;
  for (; r + kRowBlock <= ne; r += kRowBlock) {
    const float* k0 = K + r * W;
    const float* k1 = k0 + W;
    const float* k2 = k1 + W;
    const float* k3 = k2 + W;
    for (int64_t j = 0; j < ncols; ++j) {
      const double* wj = w + j * ldw + r;
      const double w0 = wj[0], w1 = wj[1], w2 = wj[2], w3 = wj[3];
      double* y = Y + j * ldy;
      for (int64_t c = 0; c < W; ++c) {
        double v = y[c];
        v += w0 * static_cast<double>(k0[c]);
        v += w1 * static_cast<double>(k1[c]);
        v += w2 * static_cast<double>(k2[c]);
        v += w3 * static_cast<double>(k3[c]);
        y[c] = v;
      }
    }
  }
  for (; r < ne; ++r) {
    const float* k0 = K + r * W;
    for (int64_t j = 0; j < ncols; ++j) {
      const double w0 = w[j * ldw + r];
      double* y = Y + j * ldy;
      for (int64_t c = 0; c < W; ++c) y[c] += w0 * static_cast<double>(k0[c]);
    }
  }
}

}  // namespace rabbit::cpu_detail::float_rows
