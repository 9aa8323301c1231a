#pragma once
// EntryLayout: where the yield entries (bin, process) of the tensor live and how a row of logk is
// read. Dense tensors store every (bin, process); sparse ones only the entries of hnorm_sparse.
// Covers all B_f bins (masked channels included), so shards and the postfit yields share it.
#include <Eigen/Core>
#include <algorithm>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "rabbit/io/fit_input_data.hpp"

namespace rabbit::cpu_detail {

/// The logk rows of a dense bin as one row-major block (entries × W).
using RowBlock = Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>;

struct EntryLayout {
  const FitInputData* in = nullptr;
  bool sparse = false;
  bool symmetric = false;
  bool lognormal =
      true;       // systematic type log-normal (else normal, docs/likelihood.md "Systematic type normal")
  int64_t W = 0;  // logk columns per entry: S (symmetric) or 2S
  int64_t S = 0;  // systematics
  std::vector<int64_t> bin_ptr;     // entries of bin b: [bin_ptr[b], bin_ptr[b+1]), all B_f bins
  std::vector<int32_t> entry_proc;  // process of entry e
  std::vector<int64_t> entry_flat;  // b*P + p of entry e
  // The logk values (dense rows, or the sparse values) in the precision they are held in: values32
  // when float32 (FitInputData::logk_float32, docs/input-reader.md "Precision"), else values64. Every
  // read converts an element to double and accumulates in double; for float32 the dense block
  // products are row_block_products.hpp's and a sparse row · m sums in four partial sums, otherwise
  // the row loops below are the double path's on the same values.
  bool float32 = false;
  const double* values64 = nullptr;
  const float* values32 = nullptr;
  /// An input without the logk of the observed bins [logk_end, nbins) (FitInputData::logk_end, MPI
  /// rank 0): the masked bins' rows follow bin logk_end − 1's, so from entry `gap_entry` on a row is
  /// found `gap` earlier (dense: values; sparse: values and cols). No gap: gap_entry past the end.
  int64_t gap_entry = std::numeric_limits<int64_t>::max();
  int64_t gap = 0;

  /// The layout of `in`; InputError naming the file when hnorm_sparse is not sorted by bin.
  static EntryLayout build(const FitInputData& in);

  int64_t entries(int64_t b) const { return bin_ptr[b + 1] - bin_ptr[b]; }
  /// The bin of entry e (binary search over bin_ptr).
  int64_t bin_of(int64_t e) const {
    return std::upper_bound(bin_ptr.begin(), bin_ptr.end(), e) - bin_ptr.begin() - 1;
  }
  /// The largest number of entries of one bin in [first, last).
  int64_t max_entries(int64_t first, int64_t last) const {
    int64_t m = 0;
    for (int64_t b = first; b < last; ++b) m = std::max(m, entries(b));
    return m;
  }

  /// Where row e's values begin: dense, at e·W minus this shift; sparse, at rowptr[e] minus it.
  int64_t held_shift(int64_t e) const { return e >= gap_entry ? gap : 0; }

  /// Dense, double storage: the rows of entries [e0, e0 + ne) as one block, in place (a bin's rows
  /// are contiguous: the gap lies between bins).
  RowBlock dense_block(int64_t e0, int64_t ne) const {
    return RowBlock(values64 + (e0 * W - held_shift(e0)), ne, W);
  }
  /// Dense, float32 storage: where row e0 begins; a bin's rows follow it contiguously, multiplied
  /// by row_block_products.hpp without a double copy (docs/input-reader.md "Precision").
  const float* dense_rows32(int64_t e0) const { return values32 + (e0 * W - held_shift(e0)); }

  /// logk row e · m (m of length W).
  double row_dot(int64_t e, const double* m) const {
    return float32 ? row_dot_of(values32, e, m) : row_dot_of(values64, e, m);
  }
  /// y += w · logk row e (y of length W).
  void row_axpy(int64_t e, double w, double* y) const {
    if (w == 0.0) return;
    if (float32)
      row_axpy_of(values32, e, w, y);
    else
      row_axpy_of(values64, e, w, y);
  }
  /// E_e = ∂Λ_e/∂θ (length S) added with weight w into out; hp = h'(θ).
  void row_E_axpy(int64_t e, double w, const double* hp, double* out) const {
    if (w == 0.0) return;
    if (float32)
      row_E_axpy_of(values32, e, w, hp, out);
    else
      row_E_axpy_of(values64, e, w, hp, out);
  }

 private:
  // The row loops for values of type T (float or double), chosen once per row above.
  template <class T>
  double row_dot_of(const T* values, int64_t e, const double* m) const {
    double acc = 0.0;
    if (!sparse) {
      const T* row = values + (e * W - held_shift(e));
      for (int64_t c = 0; c < W; ++c) acc += static_cast<double>(row[c]) * m[c];
    } else if constexpr (std::is_same_v<T, float>) {
      // float32: four interleaved partial sums, combined in a fixed order, so that the gathered
      // products are not one chain of dependent additions (measured: about 0.6x the time of one chain
      // in cache); the order depends on the row only (docs/likelihood.md "Threads"). The double
      // path keeps its single chain, so float64 files give the results they always gave.
      const auto& L = in->logk_sparse;
      const int64_t d = held_shift(e);
      const int64_t end = L.rowptr[e + 1] - d;
      int64_t i = L.rowptr[e] - d;
      double a0 = 0.0, a1 = 0.0, a2 = 0.0, a3 = 0.0;
      for (; i + 4 <= end; i += 4) {
        a0 += static_cast<double>(values[i]) * m[L.cols[i]];
        a1 += static_cast<double>(values[i + 1]) * m[L.cols[i + 1]];
        a2 += static_cast<double>(values[i + 2]) * m[L.cols[i + 2]];
        a3 += static_cast<double>(values[i + 3]) * m[L.cols[i + 3]];
      }
      acc = (a0 + a1) + (a2 + a3);
      for (; i < end; ++i) acc += static_cast<double>(values[i]) * m[L.cols[i]];
    } else {
      const auto& L = in->logk_sparse;
      const int64_t d = held_shift(e);
      for (int64_t i = L.rowptr[e] - d; i < L.rowptr[e + 1] - d; ++i)
        acc += static_cast<double>(values[i]) * m[L.cols[i]];
    }
    return acc;
  }
  template <class T>
  void row_axpy_of(const T* values, int64_t e, double w, double* y) const {
    if (!sparse) {
      const T* row = values + (e * W - held_shift(e));
      for (int64_t c = 0; c < W; ++c) y[c] += w * static_cast<double>(row[c]);
    } else {
      const auto& L = in->logk_sparse;
      const int64_t d = held_shift(e);
      for (int64_t i = L.rowptr[e] - d; i < L.rowptr[e + 1] - d; ++i)
        y[L.cols[i]] += w * static_cast<double>(values[i]);
    }
  }
  template <class T>
  void row_E_axpy_of(const T* values, int64_t e, double w, const double* hp, double* out) const {
    if (!sparse) {
      const T* row = values + (e * W - held_shift(e));
      if (symmetric) {
        for (int64_t c = 0; c < S; ++c) out[c] += w * static_cast<double>(row[c]);
      } else {
        for (int64_t c = 0; c < S; ++c)
          out[c] += w * (static_cast<double>(row[c]) + hp[c] * static_cast<double>(row[S + c]));
      }
    } else {
      const auto& L = in->logk_sparse;
      const int64_t d = held_shift(e);
      for (int64_t i = L.rowptr[e] - d; i < L.rowptr[e + 1] - d; ++i) {
        const int64_t c = L.cols[i];
        if (c < S)
          out[c] += w * static_cast<double>(values[i]);
        else
          out[c - S] += w * hp[c - S] * static_cast<double>(values[i]);
      }
    }
  }
};

}  // namespace rabbit::cpu_detail
