#pragma once
// ShardEvaluation: one evaluation of a CPU shard at a point ξ (docs/likelihood.md "Derivative
// structure"). Per bin, phase A computes the per-process yields N (one read of the bin's logk
// rows), the BinProfiler gives φ and the structured curvature Ψ = U M Uᵀ + diag(d), and phase B
// accumulates gradient / HVP / Hessian (a second read of the same rows, from cache). The
// covariance fit couples bins: phase A for all bins, one global profile, then phase B.
//
// The member functions live in the unit of their concern:
//   shard_evaluation.cpp      phase A (yields) and the dispatch (run)
//   accumulator.cpp           phase B, the merge of the chunks' sums, the chain rule through h(θ), r(π)
//   point_cache.cpp           the evaluation at a cached point
//   covariance_fit.cpp        the coupled path and its literal derivatives
//   observable_regularizer.cpp the ν_full penalty
//   beta_variations.cpp       masked-channel yields that follow the observed β, dβ̂/dξ of their sources
// Those definitions (and the BinProfiler's, PointState::prepare) are `inline`: the backend compiles
// as one translation unit (CMakeLists.txt), and GCC's inlining, hence its FMA contraction across
// calls, then matches the single-file backend whose rounding the results are compared against.
#include <Eigen/Core>
#include <Eigen/LU>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "bin_chunks.hpp"
#include "bin_profiler.hpp"
#include "bin_scratch.hpp"
#include "point_state.hpp"
#include "rabbit/model/yield_model.hpp"
#include "row_block_products.hpp"
#include "shard_state.hpp"

namespace rabbit::cpu_detail {

/// What one evaluation computes and where its outputs go.
struct Request {
  const Eigen::VectorXd* xi = nullptr;
  bool grad = false;
  const Eigen::MatrixXd* V = nullptr;
  bool hess = false;
  BetaTreatment beta = BetaTreatment::profiled;
  bool profiled() const { return beta == BetaTreatment::profiled; }
  // outputs
  double f = 0.0;
  Eigen::VectorXd* grad_out = nullptr;
  Eigen::MatrixXd* hv_out = nullptr;
  Eigen::MatrixXd* hess_out = nullptr;
  Eigen::VectorXd* beta_out = nullptr;  // profiled β (shard layout)
};

/// Phase-B sums of one chunk of bins (one thread for a Hessian).
struct Accum {
  double f = 0.0;
  // gpi, hpi, X and Ypp have a row per (bin, process) for a bin-dependent param model
  // (docs/likelihood.md "Bin-dependent rates")
  Eigen::VectorXd y, gpi;  // K2ᵀ(φc) [W], Σ φ a per process [P]
  Eigen::MatrixXd O, hpi;  // HVP: K2ᵀ ω [W × k], per-process π part [P × k]
  Eigen::MatrixXd H;       // Σ Jᵀ M J + Σ w E Eᵀ (θθ block): lower triangle only (n × n)
  Eigen::MatrixXd X;       // πθ per process [P × S]
  Eigen::VectorXd Ypp;     // ππ per process [P]
  // Hessian batching
  Eigen::MatrixXd Epos, Eneg;  // S × blk columns
  int64_t npos = 0, nneg = 0;
  Eigen::MatrixXd Lrows, Rrows;  // n × blk
  int64_t nrows = 0;
};

/// Rank updates of the Hessian are batched in blocks of this many columns.
/// 256 columns (was 64): every flush rereads and rewrites the n × n triangle, and Eigen's GEMM/SYRK
/// pack panels of about this depth; docs/benchmarks.md "Dense Hessian and dense linear algebra".
constexpr int64_t kHessBlock = 256;

/// What one thread computes for one chunk of bins (bin_chunks.hpp BackedUpChunks): the chunk's sums,
/// its point-cache rows when the evaluation fills the cache, its profiled β when asked for.
struct ChunkResult {
  Accum acc;
  ChunkRows rows;
  std::vector<double> beta;  // Request::beta_out of the chunk's bins
};
void flush_E(Accum& acc);
void flush_J(Accum& acc);

class ShardEvaluation {
 public:
  /// yields: the shard's yield model, which the observable regulariser reads ν_full and its
  /// Jacobian from.
  ShardEvaluation(ShardState& state, YieldModel& yields)
      : s(state),
        L(state.layout),
        in(state.in),
        prof(state),
        owner(yields),
        P(state.nproc_),
        S(state.nsyst_),
        M(state.nparams_),
        n(state.nx_),
        W(state.layout.W) {}

  /// The full evaluation of the shard's bins. Returns the value; fills the outputs of req.
  double run(Request& req);

  // ---- phase A ----
  /// Per-process yields of bin b into scratch slots starting at `slot`. directions_only: N, a, c
  /// are already in sc (cached point); only δΛ and δN are computed.
  void yields(int64_t b, BinScratch& sc, int64_t slot, bool directions_only = false) const;

  // ---- beta variations and postfit β (beta_variations.cpp) ----
  using BetaMode = YieldModel::BetaMode;
  /// β of bin b's BB entries for a postfit evaluation at the current point (phase A of b in slot 0
  /// of sc when profiling an uncoupled bin). False when β does not enter (no BB, BetaMode::none).
  bool postfit_bin_beta(int64_t b, BetaMode mode, const Eigen::VectorXd& coupled_beta, BinScratch& sc,
                        double* beta) const;
  Eigen::VectorXd beta_variation_shifts(BetaMode mode, const Eigen::VectorXd& coupled_beta) const;
  void apply_beta_variations(int64_t b, const Eigen::VectorXd& delta, BinScratch& sc, double* factor) const;
  void add_entry_jacobian(int64_t e, const BinScratch& sc, int64_t i, double w, double* row) const;
  Eigen::MatrixXd source_beta_jacobian(std::vector<int64_t>& index_of) const;

  ShardState& s;
  const EntryLayout& L;
  const FitInputData& in;
  PointState pt;
  BinProfiler prof;

 private:
  // ---- phase B (accumulator.cpp) ----
  void accumulate(int64_t b, const BinScratch& sc, int64_t slot, int64_t bslot, const Request& req,
                  Accum& acc, const double* zcoupled, bool gradient = true) const;
  void init_accum(Accum& acc, const Request& req, int64_t k) const;
  /// The start of bin b + 1's dense block when that bin is in this shard, prefetched while bin b's
  /// Kᵀ products run from cache (row_block_products.hpp); nothing otherwise.
  row_blocks::NextBlock next_block(int64_t b) const;
  double finish(Request& req, std::vector<Accum>& accs);
  double finish_bin_dependent(Request& req, const Accum& tot, const Eigen::VectorXd& yd);

  // ---- the uncoupled chunk loops with backup execution (run_backed_up below, run_uncoupled in
  // shard_evaluation.cpp, run_cached in point_cache.cpp) ----
  /// The chunks of one evaluation with backup execution (bin_chunks.hpp BackedUpChunks,
  /// docs/architecture.md "Threads"), for run_uncoupled and run_cached: compute(ev, inputs, c, sc, r,
  /// job) fills chunk c's result r with scratch sc (sized for one bin of nc profile columns) and
  /// returns false when job.done(c) became true first. It runs on the caller and on every worker that
  /// joins; each call holds its own copy of this evaluation (ev) and of the request's flags (inputs:
  /// no input or output pointer of the caller), so it must capture nothing by reference. Returns when
  /// every chunk has a result.
  template <class Compute>
  std::shared_ptr<BackedUpChunks<ChunkResult>> run_backed_up(const Request& req, const BinChunks& chunks,
                                                             int T, int nc, Compute compute) const;
  void run_uncoupled(Request& req, std::vector<Accum>& accs, const BinChunks& chunks, int T, int nc,
                     bool derivs, bool store);

  // ---- point cache (point_cache.cpp) ----
  /// Copies bin b's phase-A and profile quantities from slot 0 of sc into the rows of its chunk,
  /// whose first bin is b0 (store_bin), or from the cache's rows into slot 0 of sc (load_bin).
  void store_bin(int64_t b, int64_t b0, const BinScratch& sc, ChunkRows& rows) const;
  void load_bin(int64_t b, const CacheRows& rows, BinScratch& sc) const;
  void run_cached(const Request& req, std::vector<Accum>& accs, const BinChunks& chunks, int T, int nc);

  // ---- observable regulariser (observable_regularizer.cpp) ----
  Eigen::MatrixXd add_regularizer(const Request& req, Accum& acc, bool derivs, Eigen::VectorXd& nu_full);

  // ---- covariance fit (covariance_fit.cpp) ----
  Eigen::VectorXd lite_multiplicative_exact(int64_t B, const Eigen::VectorXd& xval, const Eigen::VectorXd& g,
                                            const Eigen::MatrixXd& R,
                                            const Eigen::PartialPivLU<Eigen::MatrixXd>& lu,
                                            const Eigen::VectorXd& Ap, const Eigen::VectorXd& bhat,
                                            Eigen::MatrixXd& Hx) const;
  Eigen::VectorXd additive_lite_exact(int64_t B, const Eigen::VectorXd& g, const Eigen::VectorXd& bhat,
                                      const Eigen::VectorXd& A, const Eigen::VectorXd& special, bool profile,
                                      Eigen::MatrixXd& Hx) const;
  void run_coupled(Request& req, std::vector<Accum>& accs, const BinChunks& chunks, int T, bool derivs);

  YieldModel& owner;
  int64_t P, S, M, n, W;
};

// The detached job that run_uncoupled and run_cached share: here, not in a unit, because both units
// instantiate it.
template <class Compute>
std::shared_ptr<BackedUpChunks<ChunkResult>> ShardEvaluation::run_backed_up(const Request& req,
                                                                            const BinChunks& chunks, int T,
                                                                            int nc, Compute compute) const {
  const int64_t k = pt.k;
  const int64_t maxe = L.max_entries(s.begin_, s.end_);
  auto self = std::make_shared<const ShardEvaluation>(*this);
  auto job = std::make_shared<BackedUpChunks<ChunkResult>>(chunks.count());
  Request inputs = req;  // flags only: a worker reads no input and writes no output of the caller
  inputs.xi = nullptr;
  inputs.V = nullptr;
  inputs.grad_out = nullptr;
  inputs.hv_out = inputs.hess_out = nullptr;
  inputs.beta_out = nullptr;
  auto fn =
      std::make_shared<const std::function<void(int)>>([self, job, inputs, maxe, nc, k, compute](int t) {
        BinScratch sc;
        sc.resize(maxe, 1, nc, k);
        auto one = [&](int64_t c, ChunkResult& r) { return compute(*self, inputs, c, sc, r, *job); };
        job->take(one);
        if (t == 0) job->back_up(one);
      });
  s.pool->share_detached(T, fn);
  return job;
}

}  // namespace rabbit::cpu_detail
