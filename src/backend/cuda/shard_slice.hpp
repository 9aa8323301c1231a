#pragma once
// What a CUDA shard copies to its device (shard_pipeline.hpp): its bins' rows of norm and logk
// (dense: a contiguous block; sparse: the CSR rows plus a CSC transpose built here, so that K2ᵀ
// products need no atomics) and its slice of the model's BB statistics. Host-side only.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "rabbit/model/bb_statistics.hpp"
#include "rabbit/model/model.hpp"

namespace rabbit::pipeline {

struct HostShardData {
  int64_t nbins = 0, nentries = 0;
  std::vector<int32_t> bin, proc;
  std::vector<double> norm;
  // dense K2 [E × W] row-major, or sparse CSR / CSC
  std::vector<double> dense_logk;
  std::vector<int64_t> rowptr, colptr;
  std::vector<int32_t> cols, rows;
  std::vector<double> vals, tvals;
  // BB statistics
  std::vector<double> kstat, beta0, sigma2;
  std::vector<unsigned char> masked, zero_var;
};

/// Bins [begin, end) of `in`; `full`: per-(bin, process) BB statistics (else per bin).
inline HostShardData slice_shard(const FitInputData& in, const BBStatistics& bb, int64_t begin, int64_t end,
                                 bool full) {
  HostShardData h;
  const int64_t P = in.nproc, W = in.logk_width();
  h.nbins = end - begin;
  if (!in.sparse) {
    h.nentries = h.nbins * P;
    h.bin.resize(h.nentries);
    h.proc.resize(h.nentries);
    for (int64_t e = 0; e < h.nentries; ++e) {
      h.bin[e] = static_cast<int32_t>(e / P);
      h.proc[e] = static_cast<int32_t>(e % P);
    }
    h.norm.assign(in.norm.begin() + begin * P, in.norm.begin() + end * P);
    // a float32-held logk goes to the device in double (docs/input-reader.md "Precision")
    if (in.logk_float32)
      h.dense_logk.assign(in.logk_f32.begin() + begin * P * W, in.logk_f32.begin() + end * P * W);
    else
      h.dense_logk.assign(in.logk.begin() + begin * P * W, in.logk.begin() + end * P * W);
  } else {
    const auto lo = std::lower_bound(in.norm_index.begin(), in.norm_index.end(), begin * P);
    const auto hi = std::lower_bound(in.norm_index.begin(), in.norm_index.end(), end * P);
    const int64_t i0 = lo - in.norm_index.begin(), i1 = hi - in.norm_index.begin();
    h.nentries = i1 - i0;
    h.norm.assign(in.norm.begin() + i0, in.norm.begin() + i1);
    h.bin.resize(h.nentries);
    h.proc.resize(h.nentries);
    for (int64_t e = 0; e < h.nentries; ++e) {
      h.bin[e] = static_cast<int32_t>(in.norm_index[i0 + e] / P - begin);
      h.proc[e] = static_cast<int32_t>(in.norm_index[i0 + e] % P);
    }
    const auto& L = in.logk_sparse;
    const int64_t a0 = L.rowptr[i0], a1 = L.rowptr[i1];
    h.rowptr.resize(h.nentries + 1);
    for (int64_t e = 0; e <= h.nentries; ++e) h.rowptr[e] = L.rowptr[i0 + e] - a0;
    h.cols.assign(L.cols.begin() + a0, L.cols.begin() + a1);
    if (in.logk_float32)
      h.vals.assign(L.values_f32.begin() + a0, L.values_f32.begin() + a1);
    else
      h.vals.assign(L.values.begin() + a0, L.values.begin() + a1);
    // The transpose (CSC) for K2ᵀ products without atomics.
    h.colptr.assign(W + 1, 0);
    for (int32_t c : h.cols) ++h.colptr[c + 1];
    for (int64_t c = 0; c < W; ++c) h.colptr[c + 1] += h.colptr[c];
    h.rows.resize(h.cols.size());
    h.tvals.resize(h.cols.size());
    std::vector<int64_t> next(h.colptr.begin(), h.colptr.end() - 1);
    for (int64_t e = 0; e < h.nentries; ++e)
      for (int64_t a = h.rowptr[e]; a < h.rowptr[e + 1]; ++a) {
        const int64_t pos = next[h.cols[a]]++;
        h.rows[pos] = static_cast<int32_t>(e);
        h.tvals[pos] = h.vals[a];
      }
  }
  if (!bb.on()) return h;
  // This shard's slice of the model's BB statistics (docs/likelihood.md "Per-entry BB statistics").
  const int64_t first = full ? begin * P : begin, count = full ? h.nbins * P : h.nbins;
  h.kstat.assign(bb.kstat().data() + first, bb.kstat().data() + first + count);
  h.sigma2.assign(bb.sigma2().data() + first, bb.sigma2().data() + first + count);
  h.masked.assign(bb.mask().begin() + first, bb.mask().begin() + first + count);
  h.beta0.assign(count, bb.default_centre());
  if (!full && !bb.legacy_per_bin())
    h.zero_var.assign(bb.zero_var().begin() + begin * P, bb.zero_var().begin() + end * P);
  return h;
}

}  // namespace rabbit::pipeline
