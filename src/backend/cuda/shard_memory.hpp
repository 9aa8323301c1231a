#pragma once
// The device memory plan of a CUDA shard (docs/sharding-and-gpu.md "Memory check first" and "HVP
// batch width"): what the shard holds from its construction on, what one HVP batch column costs, and
// the batch budget the pipeline takes from the free memory at its first HVP. Host code only, so the
// plan is unit-tested without a GPU (tests/backend/cuda/shard_memory_test.cpp).
#include <algorithm>
#include <cstdint>

#include "rabbit/model/model.hpp"

namespace rabbit::pipeline {

/// The HVP batch's share of the free device memory at the shard's first HVP (CudaOps::batch_budget):
/// 40 %, the rest left for cuBLAS workspaces and for the other shards on the device, which size their
/// batch after this one (--devices 0,0).
inline uint64_t batch_budget_of_free(uint64_t free_bytes) {
  return free_bytes / 5 * 2;
}

/// Bytes of one HVP batch column: δΛ and ω per entry; δN, z and t per bin and process; the direction
/// and its result per tensor column; dr and the per-process sums per process.
inline uint64_t batch_column_bytes(uint64_t entries, uint64_t bin_procs, uint64_t width, uint64_t nproc) {
  return 8 * (2 * entries + 3 * bin_procs + 2 * width + 2 * nproc);
}

/// The HVP batch width a budget allows: as many columns as fit, at most one per parameter; 0 when not
/// even one column fits.
inline int64_t batch_columns(uint64_t budget, uint64_t per_column, int64_t npar) {
  return std::min<int64_t>(std::max<int64_t>(npar, 1),
                           static_cast<int64_t>(budget / std::max<uint64_t>(per_column, 1)));
}

struct ShardMemoryPlan {
  uint64_t resident = 0;    // allocated at construction: tensor, work arrays per entry/bin, 64 MiB slack
  uint64_t per_column = 0;  // one HVP batch column (batch_column_bytes)

  /// The least free memory at construction with which the shard runs: its resident part, plus the
  /// free memory whose batch budget still holds one column. The batch narrows to what the memory
  /// left allows, so a shard is refused only when even a one-column batch cannot fit.
  uint64_t minimum_bytes() const { return resident + 5 * ((per_column + 1) / 2); }
};

/// The plan of a shard over the observed bins [bin_begin, bin_end).
inline ShardMemoryPlan plan_shard_memory(const Model& model, int64_t bin_begin, int64_t bin_end) {
  const FitInputData& in = *model.input;
  const uint64_t B = std::max<int64_t>(0, bin_end - bin_begin), P = in.nproc, W = in.logk_width();
  uint64_t E = B * P, tensor = 0;
  if (!in.sparse) {
    tensor = E * W * 8;
  } else {
    const auto lo =
        std::lower_bound(in.norm_index.begin(), in.norm_index.end(), bin_begin * static_cast<int64_t>(P));
    const auto hi =
        std::lower_bound(in.norm_index.begin(), in.norm_index.end(), bin_end * static_cast<int64_t>(P));
    E = hi - lo;
    const int64_t i0 = lo - in.norm_index.begin(), i1 = hi - in.norm_index.begin();
    const uint64_t nnz =
        in.logk_sparse.rowptr.empty() ? 0 : in.logk_sparse.rowptr[i1] - in.logk_sparse.rowptr[i0];
    tensor = 2 * nnz * 12 + (E + 1 + W + 1) * 8;
  }
  const uint64_t entries = E * (4 + 4 + 8 * 5);  // bin, proc, norm, Λ, q, N, gw
  const uint64_t per_bp = B * P * (8 * 10 + 2);  // N, φ, u1, u2, d, pw, β, stats, flags
  const uint64_t per_bin = B * (8 * 12);         // nobs, var, log, m, value, stats
  const uint64_t slack = 64ull << 20;            // cuBLAS workspace and alignment
  return {tensor + entries + per_bp + per_bin + slack, batch_column_bytes(E, B * P, W, P)};
}

}  // namespace rabbit::pipeline
