// A CPU shard evaluation: phase A (the per-process yields of a bin) and the dispatch of one
// evaluation over the shard's bins: the per-point cache, the uncoupled per-bin loop on OpenMP
// threads, the covariance fit, the observable regulariser.
#include "shard_evaluation.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>

#include "rabbit/model/regularizer.hpp"

namespace rabbit::cpu_detail {

using cpu::BBKind;
using cpu::BinObservation;
using cpu::HyperDual;
using Eigen::MatrixXd;
using Eigen::VectorXd;

namespace {

// Entry-columns (entries × (1 + HVP columns)) below which one more thread does not pay.
constexpr int64_t kMinWorkPerThread = 2048;

}  // namespace

// Phase A: per-process yields of bin b into scratch slots starting at `slot`.
// directions_only: N, a, c are already in sc (cached point); only δΛ and δN are computed.
inline void ShardEvaluation::yields(int64_t b, BinScratch& sc, int64_t slot, bool directions_only) const {
  const int64_t e0 = L.bin_ptr[b], e1 = L.bin_ptr[b + 1];
  const int64_t k = sc.k;
  // dense: the bin's rows are one contiguous row-major block, multiplied at once (vectorised)
  VectorXd lam_block;
  MatrixXd dlam_block;
  if (!L.sparse && e1 > e0 && L.float32) {
    const int64_t ne = e1 - e0;
    const float* K = L.dense_rows32(e0);
    if (!directions_only) {
      lam_block.resize(ne);
      row_blocks::rows_times(K, ne, W, pt.m.data(), W, 1, lam_block.data(), ne);
    }
    if (k > 0) {
      dlam_block.resize(ne, k);
      row_blocks::rows_times(K, ne, W, pt.Um.data(), pt.Um.outerStride(), k, dlam_block.data(), ne);
    }
  } else if (!L.sparse && e1 > e0) {
    const RowBlock Kb = L.dense_block(e0, e1 - e0);
    if (!directions_only) lam_block.noalias() = Kb * pt.m;
    if (k > 0) dlam_block.noalias() = Kb * pt.Um;
  }
  // the rates, ρ and rate directions of this bin: per process, or per (bin, process) for a bin-dependent
  // param model (docs/likelihood.md "Bin-dependent rates")
  const double* rate = pt.rates_of(b);
  const double* rho = s.rho_of(b);
  const double* dr = k == 0 ? nullptr : pt.bin_dependent ? pt.drb.data() + b * P : pt.dr.data();
  const int64_t dr_stride = k == 0 ? 0 : pt.bin_dependent ? pt.drb.rows() : pt.dr.rows();
  for (int64_t e = e0; e < e1; ++e) {
    const int64_t i = slot + (e - e0);
    const int p = L.entry_proc[e];
    if (!directions_only) {
      const double lam = L.sparse ? L.row_dot(e, pt.m.data()) : lam_block[e - e0];
      const double n0 = in.norm[e];
      if (L.lognormal) {
        const double q = n0 * std::exp(lam);
        sc.a[i] = q;
        sc.N[i] = rate[p] * q;
        sc.c[i] = sc.N[i];
      } else {
        sc.a[i] = n0;
        sc.N[i] = rate[p] * n0 + rho[p] * lam;
        sc.c[i] = rho[p];
      }
    }
    if (k > 0) {
      double* dl = &sc.dLam[i * k];
      double* dn = &sc.dN[i * k];
      for (int64_t j = 0; j < k; ++j)
        dl[j] = L.sparse ? L.row_dot(e, pt.Um.col(j).data()) : dlam_block(e - e0, j);
      for (int64_t j = 0; j < k; ++j) dn[j] = sc.a[i] * dr[p + j * dr_stride] + sc.c[i] * dl[j];
    }
  }
}

// Value, gradient and HVP of the uncoupled bins, chunk by chunk with backup execution (bin_chunks.hpp
// BackedUpChunks, docs/architecture.md "Threads"). A worker's call holds its own copies of the point
// (this evaluation's PointState) and of the request's flags and writes only into ChunkResults of its
// own, so a worker that resumes after the caller has returned touches nothing the caller or the next
// evaluation uses; what it still reads of the shard (tensor, observations, BB centres) is changed only
// after WorkerPool::drain() (cpu_shard.cpp).
inline void ShardEvaluation::run_uncoupled(Request& req, std::vector<Accum>& accs, const BinChunks& chunks,
                                           int T, int nc, bool derivs, bool store) {
  const int64_t k = pt.k;
  const int64_t bw = s.beta_width();
  const bool want_beta = req.beta_out != nullptr;
  auto job = run_backed_up(req, chunks, T, nc,
                           [chunks, k, bw, nc, derivs, store, want_beta](
                               const ShardEvaluation& ev, const Request& inputs, int64_t c, BinScratch& sc,
                               ChunkResult& r, const BackedUpChunks<ChunkResult>& job) {
                             const EntryLayout& L = ev.L;
                             const int64_t b0 = chunks.first(c), b1 = chunks.last(c);
                             ev.init_accum(r.acc, inputs, k);
                             if (store) {
                               const int64_t ne = L.bin_ptr[b1] - L.bin_ptr[b0];
                               for (auto* v : {&r.rows.N, &r.rows.a, &r.rows.c, &r.rows.phi, &r.rows.d})
                                 v->resize(ne);
                               r.rows.U.resize(ne * nc);
                               r.rows.M.resize((b1 - b0) * nc * nc);
                             }
                             if (want_beta) r.beta.assign((b1 - b0) * bw, 0.0);
                             Accum& acc = r.acc;
                             for (int64_t b = b0; b < b1; ++b) {
                               if (job.done(c)) return false;
                               ev.yields(b, sc, 0);
                               double* bo = want_beta ? r.beta.data() + (b - b0) * bw : nullptr;
                               acc.f += ev.prof.profile_bin(b, sc, 0, 0, derivs, inputs.beta, bo);
                               if (store) ev.store_bin(b, b0, sc, r.rows);
                               if (derivs) ev.accumulate(b, sc, 0, 0, inputs, acc, nullptr);
                             }
                             return true;
                           });
  // every chunk has a result now, and no worker writes into a published one
  std::shared_ptr<CacheRows> rows;
  if (store) {
    rows = std::make_shared<CacheRows>();
    rows->chunks = chunks;
    rows->chunk.resize(job->count());
  }
  for (int64_t c = 0; c < job->count(); ++c) {
    ChunkResult& r = job->result(c);
    accs[c] = std::move(r.acc);
    if (store) rows->chunk[c] = std::move(r.rows);
    if (want_beta)
      std::copy(r.beta.begin(), r.beta.end(), req.beta_out->data() + (chunks.first(c) - s.begin_) * bw);
  }
  if (store) s.cache.rows = std::move(rows);
}

// The full evaluation. Returns the value; fills the outputs of req.
inline double ShardEvaluation::run(Request& req) {
  const VectorXd& xi = *req.xi;
  pt.prepare(s, xi, req.V);
  const int64_t k = pt.k;
  const bool derivs = req.grad || k > 0 || req.hess;
  const int nc = derivs ? prof.ncols(req.beta) : 1;
  const int64_t nb = s.end_ - s.begin_;
  const int64_t bw = s.beta_width();
  if (req.beta_out) req.beta_out->setZero(nb * bw);
  // Threads only where each gets enough work to amortise waking them: on a small model a second
  // thread costs more in waiting than it saves (measured: 70 % of a toy loop on a 6-bin model spent
  // spinning in libgomp).
  const int64_t entries = L.bin_ptr[s.end_] - L.bin_ptr[s.begin_];
  const int64_t work = std::max<int64_t>(entries, nb) * (1 + k);
  const int64_t by_work = std::max<int64_t>(1, work / kMinWorkPerThread);
  int T = static_cast<int>(
      std::max<int64_t>(1, std::min<int64_t>({s.threads_, std::max<int64_t>(nb, 1), by_work})));
  // Value, gradient and HVP: per-chunk sums added in chunk order (bin_chunks.hpp), the same for any
  // thread count. The Hessian's n × n sums stay per thread over fixed bin ranges (a copy per chunk
  // would not fit in memory): the same for a fixed thread count.
  const int64_t sum_rows = pt.bin_dependent ? s.nbinsfull_ * P : P;
  const BinChunks chunks = BinChunks::make(s.begin_, s.end_, entries, W, W + sum_rows, k);
  if (!req.hess) T = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(T, chunks.count())));
  std::vector<Accum> accs(req.hess ? T : std::max<int64_t>(1, chunks.count()));
  if (!req.hess && chunks.count() == 0) init_accum(accs[0], req, k);

  // per-point cache (uncoupled profiled evaluations without Hessian or β output)
  auto& cache = s.cache;
  const bool cacheable =
      !s.coupled && !s.regularized_ && req.profiled() && !req.hess && !req.beta_out && s.cache_allowed;
  // (value-only calls are not served from the cache: the double path rounds differently from the
  // hyper-dual one, and value() stays what it always was)
  const bool hit = cacheable && derivs && cache.valid && cache.generation == s.generation &&
                   cache.xi.size() == xi.size() && cache.xi == xi && cache.ncol == nc;
  const bool fill = cacheable && derivs && !hit;
  if (fill) {
    const int64_t E = L.bin_ptr[s.end_] - L.bin_ptr[s.begin_];
    const double bytes = 8.0 * static_cast<double>(E) * (6.0 + nc) + 8.0 * nb * nc * nc;
    if (bytes > 1.0e9) {
      s.cache_allowed = false;  // never mind: the evaluation runs uncached
    } else {
      cache.valid = false;
      cache.ncol = nc;
      cache.rows.reset();  // filled per chunk by run_uncoupled
    }
  }
  const bool store = fill && s.cache_allowed;

  if (hit) {
    run_cached(req, accs, chunks, T, nc);
  } else if (!s.coupled) {
    const int64_t maxe = L.max_entries(s.begin_, s.end_);
    auto one_bin = [&](int64_t b, BinScratch& sc, Accum& acc) {
      yields(b, sc, 0);
      double* bo = req.beta_out ? req.beta_out->data() + (b - s.begin_) * bw : nullptr;
      acc.f += prof.profile_bin(b, sc, 0, 0, derivs, req.beta, bo);
      if (derivs) accumulate(b, sc, 0, 0, req, acc, nullptr);
    };
    if (req.hess) {
      s.pool->run(T, [&](int t) {
        Accum& acc = accs[t];
        init_accum(acc, req, k);
        BinScratch sc;
        sc.resize(maxe, 1, nc, k);
        const int64_t lo = s.begin_ + nb * t / T, hi = s.begin_ + nb * (t + 1) / T;
        for (int64_t b = lo; b < hi; ++b) one_bin(b, sc, acc);
        flush_E(acc);
        flush_J(acc);
      });
    } else {
      run_uncoupled(req, accs, chunks, T, nc, derivs, store);
    }
  } else {
    run_coupled(req, accs, chunks, T, derivs);
  }
  MatrixXd JregT;  // regulariser: 𝒥ᵀ of the full yields, for the curvature of the penalty
  VectorXd nu_full;
  if (s.regularized_) JregT = add_regularizer(req, accs[0], derivs, nu_full);
  const double f = finish(req, accs);
  if (store) {
    cache.f = accs[0].f;
    cache.y = accs[0].y;
    cache.gpi = accs[0].gpi;
    cache.xi = xi;
    cache.generation = s.generation;
    cache.valid = true;
  }
  if (s.regularized_ && JregT.size() > 0) {
    if (k > 0 && req.hv_out) {
      const MatrixXd JV = JregT.transpose() * (*req.V);
      *req.hv_out += JregT * observable_penalty_hessian_product(*s.model_, nu_full, JV);
    }
    if (req.hess && req.hess_out) {
      const MatrixXd Hreg = JregT * observable_penalty_hessian_product(*s.model_, nu_full, JregT.transpose());
      *req.hess_out += 0.5 * (Hreg + Hreg.transpose());
    }
  }
  return f;
}

}  // namespace rabbit::cpu_detail
