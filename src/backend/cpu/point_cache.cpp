// The per-point cache of a CPU shard (point_cache.hpp): storing and restoring a bin's phase-A and
// profile quantities, and the evaluation at the cached point.
#include <algorithm>
#include <functional>
#include <memory>

#include "shard_evaluation.hpp"

namespace rabbit::cpu_detail {

using cpu::BBKind;
using cpu::BinObservation;
using cpu::HyperDual;
using Eigen::MatrixXd;
using Eigen::VectorXd;

namespace {

enum class CacheCopy { store, load };

// Copies one bin's phase-A and profile quantities between its chunk's rows (entries from `off`,
// its M block from `boff`) and slot 0 of sc, in the direction `dir`: the one list of the cached
// fields for store_bin and load_bin.
template <CacheCopy dir, class Rows, class Scratch>
void copy_bin_fields(Rows& rows, Scratch& sc, int64_t off, int64_t ne, int64_t boff, int nc) {
  auto copy = [](auto& r, auto& v, int64_t o, int64_t len) {
    if constexpr (dir == CacheCopy::store)
      std::copy(v.begin(), v.begin() + len, r.begin() + o);
    else
      std::copy(r.begin() + o, r.begin() + o + len, v.begin());
  };
  copy(rows.N, sc.N, off, ne);
  copy(rows.a, sc.a, off, ne);
  copy(rows.c, sc.c, off, ne);
  copy(rows.phi, sc.phi, off, ne);
  copy(rows.d, sc.d, off, ne);
  copy(rows.U, sc.U, off * nc, ne * nc);
  copy(rows.M, sc.M, boff, nc * nc);
}

}  // namespace

// Copies bin b's phase-A and profile quantities from slot 0 of sc into its chunk's rows (first bin b0).
inline void ShardEvaluation::store_bin(int64_t b, int64_t b0, const BinScratch& sc, ChunkRows& rows) const {
  const int nc = sc.ncol;
  copy_bin_fields<CacheCopy::store>(rows, sc, L.bin_ptr[b] - L.bin_ptr[b0], L.bin_ptr[b + 1] - L.bin_ptr[b],
                                    (b - b0) * nc * nc, nc);
}

// Copies bin b's cached quantities into slot 0 of sc.
inline void ShardEvaluation::load_bin(int64_t b, const CacheRows& cached, BinScratch& sc) const {
  const int nc = sc.ncol;
  const int64_t c = (b - cached.chunks.begin) / cached.chunks.per_chunk, b0 = cached.chunks.first(c);
  copy_bin_fields<CacheCopy::load>(cached.chunk[c], sc, L.bin_ptr[b] - L.bin_ptr[b0],
                                   L.bin_ptr[b + 1] - L.bin_ptr[b], (b - b0) * nc * nc, nc);
}

// Evaluation at the cached point: value and gradient from the cache; an HVP reads each bin's rows
// for δΛ = K2_b·Um and Oᵀ += K2_bᵀω only (no Λ, no exponentials, no profile). The chunks run with
// backup execution (bin_chunks.hpp BackedUpChunks): a worker's call holds its own copies of the
// point (this evaluation) and of the cache's rows, so it reads nothing that the next evaluation changes.
inline void ShardEvaluation::run_cached(const Request& req, std::vector<Accum>& accs, const BinChunks& chunks,
                                        int T, int nc) {
  const auto& cache = s.cache;
  const int64_t k = pt.k;
  for (auto& acc : accs) init_accum(acc, req, k);
  if (k > 0) {
    auto job = run_backed_up(req, chunks, T, nc,
                             [chunks, k, rows = cache.rows](const ShardEvaluation& ev, const Request& inputs,
                                                            int64_t c, BinScratch& sc, ChunkResult& r,
                                                            const BackedUpChunks<ChunkResult>& job) {
                               ev.init_accum(r.acc, inputs, k);
                               for (int64_t b = chunks.first(c); b < chunks.last(c); ++b) {
                                 if (job.done(c)) return false;
                                 ev.load_bin(b, *rows, sc);
                                 ev.yields(b, sc, 0, true);
                                 ev.accumulate(b, sc, 0, 0, inputs, r.acc, nullptr, false);
                               }
                               return true;
                             });
    for (int64_t c = 0; c < job->count(); ++c) accs[c] = std::move(job->result(c).acc);
  }
  accs[0].f = cache.f;
  accs[0].y = cache.y;
  accs[0].gpi = cache.gpi;
}

}  // namespace rabbit::cpu_detail
