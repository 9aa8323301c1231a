// Beta variations (docs/likelihood.md "Beta variations"): in BB full mode with gamma or
// normal-multiplicative β, masked-channel yields follow the profiled β of observed source bins
// through hbetavariations. Here: finding the source bins, the shifts Δ = √k (β − 1), the
// masked-bin factors, the postfit β of a bin, and dβ̂/dξ of the source bins.
#include <fmt/format.h>

#include <cmath>

#include "rabbit/core/error.hpp"
#include "shard_evaluation.hpp"

namespace rabbit::cpu_detail {

using cpu::BBKind;
using cpu::BinObservation;
using cpu::HyperDual;
using Eigen::MatrixXd;
using Eigen::VectorXd;

void build_beta_variation_sources(ShardState& s) {
  const FitInputData& in = s.in;
  // beta variations (docs/likelihood.md "Beta variations"): masked-channel yields of full evaluations follow
  // the observed β
  s.betavar_rows_.assign(s.nbinsfull_, 0);
  if (in.betavariations && s.bb_full_ && (s.bb_ == BBKind::gamma || s.bb_ == BBKind::normal_multiplicative)) {
    s.betavar_ = true;
    const auto& bv = *in.betavariations;
    std::vector<uint8_t> source(s.nbins_, 0);
    for (int64_t b = 0; b < s.nbinsfull_; ++b)
      for (int64_t j = 0; j < s.nbins_; ++j)
        for (int64_t p = 0; p < s.nproc_; ++p) {
          if (bv[(b * s.nbins_ + j) * s.nproc_ + p] == 0.0) continue;
          if (b < s.nbins_)
            throw InputError(
                fmt::format("{}: hbetavariations has a non-zero entry for observed bin {} (only masked "
                            "channels may receive "
                            "beta variations)",
                            in.filename, b));
          source[j] = 1;
          s.betavar_rows_[b] = 1;
        }
    for (int64_t j = 0; j < s.nbins_; ++j)
      if (source[j]) s.betavar_sources_.push_back(j);
    // An input without the logk of the bins from logk_end on (MPI rank 0, docs/mpi.md "Memory per rank")
    // must hold the source bins' rows, or their β would be computed from other rows.
    if (in.logk_end >= 0 && !s.betavar_sources_.empty() && s.betavar_sources_.back() >= in.logk_end)
      throw Error(fmt::format(
          "{}: the logk of bins [0, {}) was read, the hbetavariations source bin {} needs its own",
          in.filename, in.logk_end, s.betavar_sources_.back()));
  }
}

// β of bin b's BB entries for a postfit evaluation at the current point (phase A of b in slot 0
// of sc when profiling an uncoupled bin). False when β does not enter (no BB, BetaMode::none).
inline bool ShardEvaluation::postfit_bin_beta(int64_t b, BetaMode mode, const VectorXd& coupled_beta,
                                              BinScratch& sc, double* beta) const {
  if (!s.has_bb() || mode == BetaMode::none) return false;
  const int64_t bw = s.beta_width();
  if (mode == BetaMode::stored || b >= s.nbins_) {
    const VectorXd& src = mode == BetaMode::stored ? s.beta_stored_ : s.beta0_;
    for (int64_t j = 0; j < bw; ++j) beta[j] = src[b * bw + j];
  } else if (s.coupled) {
    for (int64_t j = 0; j < bw; ++j) beta[j] = coupled_beta[b * bw + j];
  } else {
    prof.profile_bin(b, sc, 0, 0, false, BetaTreatment::profiled, beta);
  }
  return true;
}

// Δ_{jp} = √k_{jp} (β_{jp} − 1) over the observed entries (0 where BB-masked), with β of `mode`
// (docs/likelihood.md "Beta variations"); only the source bins of hbetavariations are filled.
inline VectorXd ShardEvaluation::beta_variation_shifts(BetaMode mode, const VectorXd& coupled_beta) const {
  VectorXd delta = VectorXd::Zero(s.nbins_ * P);
  if (!s.betavar_ || mode == BetaMode::none) return delta;
  BinScratch sc;
  sc.resize(P, 1, 1, 0);
  std::vector<double> beta(P);
  for (int64_t j : s.betavar_sources_) {
    if (mode == BetaMode::profiled && !s.coupled) yields(j, sc, 0);
    postfit_bin_beta(j, mode, coupled_beta, sc, beta.data());
    for (int64_t p = 0; p < P; ++p) {
      const int64_t f = j * P + p;
      if (!s.bbmask_[f]) delta[f] = std::sqrt(s.kstat_[f]) * (beta[p] - 1.0);
    }
  }
  return delta;
}

// docs/likelihood.md "Beta variations" on masked bin b (phase A in slot 0 of sc, dense): N_bp ← N_bp (1 +
// var_bp/n⁰_bp) where n⁰_bp > 0; the π- and θ-weights a, c scale alike. factor (optional, P values) receives
// the factors.
inline void ShardEvaluation::apply_beta_variations(int64_t b, const VectorXd& delta, BinScratch& sc,
                                                   double* factor) const {
  const auto& bv = *in.betavariations;
  const int64_t B = s.nbins_;
  for (int64_t p = 0; p < P; ++p) {
    const double n0 = in.norm[b * P + p];
    double f = 1.0;
    if (n0 > 0.0) {
      double var = 0.0;
      for (int64_t j : s.betavar_sources_) var += bv[(b * B + j) * P + p] * delta[j * P + p];
      f = 1.0 + var / n0;
    }
    sc.N[p] *= f;
    sc.a[p] *= f;
    sc.c[p] *= f;
    if (factor) factor[p] = f;
  }
}

// ∂ν_b/∂ξ row contribution of entry e with weight w on N (phase A in sc at index i).
inline void ShardEvaluation::add_entry_jacobian(int64_t e, const BinScratch& sc, int64_t i, double w,
                                                double* row) const {
  if (w == 0.0) return;
  const int p = L.entry_proc[e];
  if (pt.bin_dependent) {
    pt.add_rate_gradient(L.bin_of(e), p, w * sc.a[i], row);
  } else {
    for (int64_t k = 0; k < M; ++k) row[k] += w * sc.a[i] * pt.jr(p, k);
  }
  L.row_E_axpy(e, w * sc.c[i], pt.hp.data(), row + M);
}

// dβ̂/dξ of the observed entries of the hbetavariations source bins: row j·P + p of the result
// at index_of[j]·P + p.
inline MatrixXd ShardEvaluation::source_beta_jacobian(std::vector<int64_t>& index_of) const {
  const int64_t nsrc = static_cast<int64_t>(s.betavar_sources_.size());
  index_of.assign(s.nbins_, -1);
  MatrixXd D = MatrixXd::Zero(nsrc * P, n);
  BinScratch sc;
  sc.resize(P, 1, 1, 0);
  MatrixXd Jrows(P, n);
  for (int64_t i = 0; i < nsrc; ++i) {
    const int64_t b = s.betavar_sources_[i];
    index_of[b] = i;
    yields(b, sc, 0);
    Jrows.setZero();
    for (int64_t q = 0; q < P; ++q) {
      VectorXd r = VectorXd::Zero(n);
      add_entry_jacobian(b * P + q, sc, q, 1.0, r.data());
      Jrows.row(q) = r.transpose();
    }
    const MatrixXd G = prof.full_beta_sensitivity(b, sc);
    D.middleRows(i * P, P) = G * Jrows;
  }
  return D;
}

}  // namespace rabbit::cpu_detail
