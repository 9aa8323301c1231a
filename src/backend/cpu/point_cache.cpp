// The per-point cache of a CPU shard (point_cache.hpp): storing and restoring a bin's phase-A and
// profile quantities, and the evaluation at the cached point.
#include <algorithm>

#include "shard_evaluation.hpp"

namespace rabbit::cpu_detail {

using cpu::BBKind;
using cpu::BinObservation;
using cpu::HyperDual;
using Eigen::MatrixXd;
using Eigen::VectorXd;

// Copies bin b's phase-A and profile quantities between slot 0 of sc and the point cache.
inline void ShardEvaluation::cache_bin(int64_t b, BinScratch& sc, bool to_cache) const {
  auto& cache = s.cache;
  const int nc = sc.ncol;
  const int64_t off = L.bin_ptr[b] - L.bin_ptr[s.begin_], ne = L.bin_ptr[b + 1] - L.bin_ptr[b];
  const int64_t boff = (b - s.begin_) * nc * nc;
  auto copy = [&](std::vector<double>& c, std::vector<double>& v, int64_t o, int64_t len) {
    if (to_cache)
      std::copy(v.begin(), v.begin() + len, c.begin() + o);
    else
      std::copy(c.begin() + o, c.begin() + o + len, v.begin());
  };
  copy(cache.N, sc.N, off, ne);
  copy(cache.a, sc.a, off, ne);
  copy(cache.c, sc.c, off, ne);
  copy(cache.phi, sc.phi, off, ne);
  copy(cache.d, sc.d, off, ne);
  copy(cache.U, sc.U, off * nc, ne * nc);
  copy(cache.M, sc.M, boff, nc * nc);
}

// Evaluation at the cached point: value and gradient from the cache; an HVP reads each bin's rows
// for δΛ = K2_b·Um and Oᵀ += K2_bᵀω only (no Λ, no exponentials, no profile).
inline void ShardEvaluation::run_cached(const Request& req, std::vector<Accum>& accs, const BinChunks& chunks,
                                        int T, int nc) {
  const auto& cache = s.cache;
  const int64_t k = pt.k;
  for (auto& acc : accs) init_accum(acc, req, k);
  if (k > 0) {
    const int64_t maxe = L.max_entries(s.begin_, s.end_);
    ChunkQueue queue(chunks.count());
    s.pool->share(T, [&](int) {
      BinScratch sc;
      sc.resize(maxe, 1, nc, k);
      for (int64_t c; (c = queue.take()) >= 0;) {
        for (int64_t b = chunks.first(c); b < chunks.last(c); ++b) {
          cache_bin(b, sc, false);
          yields(b, sc, 0, true);
          accumulate(b, sc, 0, 0, req, accs[c], nullptr, false);
        }
      }
    });
  }
  accs[0].f = cache.f;
  accs[0].y = cache.y;
  accs[0].gpi = cache.gpi;
}

}  // namespace rabbit::cpu_detail
