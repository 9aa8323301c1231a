#pragma once
// Load-balanced, deterministic sparse products y = A·X for a CSR matrix A (the shard's K2, and its
// CSC transpose for K2ᵀ products) (docs/sharding-and-gpu.md "Sparse products"). One thread per
// column of the non-zeros would leave most of a GPU idle when a few rows (systematics affecting many
// entries) hold most non-zeros; instead, at upload, the non-zeros are cut into segments of at most
// `target` of them: consecutive short rows are grouped into one segment (each such row is summed
// whole, by one thread, as before), a row longer than `target` is cut into pieces of `target`
// non-zeros. A piece's sum goes into its own slot; the slots of a long row are consecutive and are
// added in order by a second pass. No atomics: every output has one writer and a fixed order, so the
// result depends only on the plan, which depends only on the matrix.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "rabbit/backend/cuda/bin_math.hpp"  // RABBIT_HD

namespace rabbit::pipeline {

/// Non-zeros per segment: enough segments for a whole GPU (about 2^17, the thread count of a
/// large GPU) but at least 32 non-zeros each; this also bounds the piece slots to ~2^18 per column.
inline int64_t segment_target(int64_t nnz) {
  return std::max<int64_t>(32, (nnz + (1 << 17) - 1) >> 17);
}

/// The plan on the host (built once at upload) and the arrays the kernels read.
struct CsrSegmentPlan {
  int64_t rows = 0, nslots = 0;
  std::vector<int64_t> nz_begin;   // [nseg + 1]: segment s covers non-zeros [nz_begin[s], nz_begin[s+1])
  std::vector<int64_t> row_begin;  // [nseg]: whole-row segment: rows [row_begin, row_end); piece: its row
  std::vector<int64_t> row_end;    // [nseg]
  std::vector<int64_t> slot;       // [nseg]: −1 for whole rows, else the piece's slot
  std::vector<int64_t> long_row;   // [nlong]: rows cut into pieces
  std::vector<int64_t> long_slot;  // [nlong + 1]: their slots [long_slot[i], long_slot[i+1])
  int64_t segments() const { return static_cast<int64_t>(slot.size()); }
  int64_t long_rows() const { return static_cast<int64_t>(long_row.size()); }
};

struct CsrSegments {
  int64_t rows = 0, nseg = 0, nslots = 0, nlong = 0;
  const int64_t* nz_begin = nullptr;
  const int64_t* row_begin = nullptr;
  const int64_t* row_end = nullptr;
  const int64_t* slot = nullptr;
  const int64_t* long_row = nullptr;
  const int64_t* long_slot = nullptr;
};

inline CsrSegmentPlan plan_csr_segments(const std::vector<int64_t>& rowptr, int64_t target) {
  CsrSegmentPlan plan;
  plan.rows = rowptr.empty() ? 0 : static_cast<int64_t>(rowptr.size()) - 1;
  int64_t open = -1, open_nnz = 0;  // first row of the open whole-row segment
  auto close = [&](int64_t r) {
    if (open < 0) return;
    plan.nz_begin.push_back(rowptr[open]);
    plan.row_begin.push_back(open);
    plan.row_end.push_back(r);
    plan.slot.push_back(-1);
    open = -1;
  };
  for (int64_t r = 0; r < plan.rows; ++r) {
    const int64_t len = rowptr[r + 1] - rowptr[r];
    if (len > target) {
      close(r);
      plan.long_row.push_back(r);
      plan.long_slot.push_back(plan.nslots);
      for (int64_t a = rowptr[r]; a < rowptr[r + 1]; a += target) {
        plan.nz_begin.push_back(a);
        plan.row_begin.push_back(r);
        plan.row_end.push_back(r);
        plan.slot.push_back(plan.nslots++);
      }
      continue;
    }
    // Rows per segment are capped too, so that a run of empty rows is not one thread's loop.
    if (open >= 0 && (open_nnz + len > target || r - open >= target)) close(r);
    if (open < 0) {
      open = r;
      open_nnz = 0;
    }
    open_nnz += len;
  }
  close(plan.rows);
  plan.nz_begin.push_back(plan.rows ? rowptr[plan.rows] : 0);
  plan.long_slot.push_back(plan.nslots);
  return plan;
}

/// Stage 1, t = s + nseg·j: segment s of column j. Whole rows go to y (the order of csr_row), a
/// piece of a long row to its slot of `partial` ([nslots × k], column-major).
RABBIT_HD inline void csr_segment(int64_t t, const CsrSegments& g, int64_t width, const int64_t* rowptr,
                                  const int32_t* cols, const double* vals, const double* x, double* y,
                                  double* partial) {
  const int64_t s = t % g.nseg, j = t / g.nseg;
  const double* xj = x + width * j;
  if (g.slot[s] >= 0) {
    double acc = 0;
    for (int64_t a = g.nz_begin[s]; a < g.nz_begin[s + 1]; ++a) acc += vals[a] * xj[cols[a]];
    partial[g.slot[s] + g.nslots * j] = acc;
    return;
  }
  for (int64_t r = g.row_begin[s]; r < g.row_end[s]; ++r) {
    double acc = 0;
    for (int64_t a = rowptr[r]; a < rowptr[r + 1]; ++a) acc += vals[a] * xj[cols[a]];
    y[r + g.rows * j] = acc;
  }
}

/// Stage 2, t = i + nlong·j: long row i of column j, its pieces added in slot order.
RABBIT_HD inline void csr_combine(int64_t t, const CsrSegments& g, const double* partial, double* y) {
  const int64_t i = t % g.nlong, j = t / g.nlong;
  double acc = 0;
  for (int64_t c = g.long_slot[i]; c < g.long_slot[i + 1]; ++c) acc += partial[c + g.nslots * j];
  y[g.long_row[i] + g.rows * j] = acc;
}

}  // namespace rabbit::pipeline
