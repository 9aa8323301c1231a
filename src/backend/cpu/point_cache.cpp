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
    const int64_t maxe = L.max_entries(s.begin_, s.end_);
    auto self = std::make_shared<const ShardEvaluation>(*this);
    auto job = std::make_shared<BackedUpChunks<ChunkResult>>(chunks.count());
    Request inputs = req;  // flags only: a worker reads no input and writes no output of the caller
    inputs.xi = nullptr;
    inputs.V = nullptr;
    inputs.grad_out = nullptr;
    inputs.hv_out = inputs.hess_out = nullptr;
    inputs.beta_out = nullptr;
    auto fn = std::make_shared<const std::function<void(int)>>(
        [self, job, inputs, chunks, maxe, nc, k, rows = cache.rows](int t) {
          BinScratch sc;
          sc.resize(maxe, 1, nc, k);
          auto compute = [&](int64_t c, ChunkResult& r) {
            self->init_accum(r.acc, inputs, k);
            for (int64_t b = chunks.first(c); b < chunks.last(c); ++b) {
              if (job->done(c)) return false;
              self->load_bin(b, *rows, sc);
              self->yields(b, sc, 0, true);
              self->accumulate(b, sc, 0, 0, inputs, r.acc, nullptr, false);
            }
            return true;
          };
          job->take(compute);
          if (t == 0) job->back_up(compute);
        });
    s.pool->share_detached(T, fn);
    for (int64_t c = 0; c < job->count(); ++c) accs[c] = std::move(job->result(c).acc);
  }
  accs[0].f = cache.f;
  accs[0].y = cache.y;
  accs[0].gpi = cache.gpi;
}

}  // namespace rabbit::cpu_detail
