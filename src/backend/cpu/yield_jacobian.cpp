// The per-bin yield Jacobian ∂ν_b/∂ξ of the host YieldModel (docs/likelihood.md "Derivative
// structure"): with profiled β the total derivative through β̂(ξ) of every BB mode and type, beta
// variations of masked channels, and the bin mixing of the covariance fit.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "covariance_fit.hpp"
#include "rabbit/backend/cpu/cpu_shard_evaluator.hpp"
#include "rabbit/backend/cpu/shared_likelihood.hpp"
#include "rabbit/core/error.hpp"
#include "shard_evaluation.hpp"

namespace rabbit {

using cpu::BBKind;
using cpu::HyperDual;
using cpu_detail::BetaTreatment;
using cpu_detail::BinScratch;
using cpu_detail::EntryLayout;
using cpu_detail::ShardEvaluation;
using cpu_detail::ShardState;
using Eigen::MatrixXd;
using Eigen::VectorXd;

void CpuShardEvaluator::yield_jacobian_rows(const VectorXd& xi, int64_t first, int64_t last, BetaMode mode,
                                            Eigen::Ref<MatrixXd> J) {
  ShardState& s = *state_;
  if (first < 0 || last < first || last > s.nbinsfull_)
    throw Error(
        fmt::format("yield_jacobian: bin range [{}, {}) outside the {} bins", first, last, s.nbinsfull_));
  ShardEvaluation eng(s, *this);
  eng.pt.prepare(s, xi, nullptr);
  const EntryLayout& L = s.layout;
  const int64_t M = s.nparams_, n = s.nx_;
  const bool through_beta = mode == BetaMode::profiled && has_bb();
  VectorXd coupled_beta;
  if (through_beta && s.coupled && (first < s.nbins_ || s.betavar_)) coupled_beta = profiled_beta(xi);
  // beta variations (docs/likelihood.md "Beta variations"): masked-bin factors and, through β̂, dβ̂/dξ of the
  // source bins
  const bool betavar_rows = s.betavar_ && mode != BetaMode::none && last > s.nbins_;
  VectorXd delta;
  MatrixXd source_jac;
  std::vector<int64_t> source_index;
  if (betavar_rows) {
    delta = eng.beta_variation_shifts(mode, coupled_beta);
    if (through_beta && !s.coupled) source_jac = eng.source_beta_jacobian(source_index);
  }
  std::vector<double> pre_N(s.nproc_), bv_factor(s.nproc_);
  const int64_t bw = s.beta_width();
  int64_t maxe = L.max_entries(first, last);
  if (s.coupled) maxe = std::max(maxe, L.bin_ptr[s.nbins_]);
  BinScratch sc;
  sc.resize(std::max<int64_t>(maxe, 1), 1, 4, 0);
  std::vector<double> kappa(std::max<int64_t>(maxe, 1)), beta(std::max<int64_t>(bw, 1));
  // rows of the coupled fit: ν = Mix ν⁰ over the observed bins
  // the π part of an entry's row: w ∂r_p/∂π (the θ part is row_E_axpy)
  auto add_pi_row = [&](int64_t e, double w, double* row) {
    const int p = L.entry_proc[e];
    if (eng.pt.bin_dependent) return eng.pt.add_rate_gradient(L.bin_of(e), p, w, row);
    for (int64_t k = 0; k < M; ++k) row[k] += w * eng.pt.jr(p, k);
  };
  if (betavar_rows && through_beta && s.coupled) {
    // covariance fit (normal-multiplicative full): dβ̂/dξ of every observed entry from the linear solve
    source_index.resize(s.nbins_);
    for (int64_t j = 0; j < s.nbins_; ++j) source_index[j] = j;
    cpu_detail::coupled_multiplicative_jacobian(eng, &source_jac);
  }
  for (int64_t b = first; b < last; ++b) {
    const int64_t e0 = L.bin_ptr[b], e1 = L.bin_ptr[b + 1];
    eng.yields(b, sc, 0);
    const bool observed = b < s.nbins_;
    if (betavar_rows && !observed) {
      for (int64_t p = 0; p < s.nproc_; ++p) pre_N[p] = sc.N[p];
      eng.apply_beta_variations(b, delta, sc, bv_factor.data());
    }
    double A = 0.0;
    for (int64_t e = e0; e < e1; ++e)
      if (eng.prof.active(e)) A += sc.N[e - e0];
    if (through_beta && observed && !s.coupled) {
      if (!s.bb_full_) {
        using HD = HyperDual<2>;
        double Z = 0.0;
        for (int64_t e = e0; e < e1; ++e)
          if (!eng.prof.active(e)) Z += sc.N[e - e0];
        HD hb, hnu;
        cpu::lite_bin_objective(HD::variable(A, 0), HD::variable(Z, 1), eng.prof.observation(b),
                                s.likelihood_, s.bb_, eng.prof.lite_entry(b), s.legacy_sumw_, false, &hb,
                                &hnu);
        for (int64_t e = e0; e < e1; ++e) kappa[e - e0] = eng.prof.active(e) ? hnu.g[0] : hnu.g[1];
      } else if (s.bb_ == BBKind::normal_additive) {
        using HD = HyperDual<1>;
        double nu0 = 0.0, V = 0.0, W0 = 0.0;
        for (int64_t e = e0; e < e1; ++e) nu0 += sc.N[e - e0];
        for (int64_t p = 0; p < s.nproc_; ++p) {
          V += s.sigma2_[b * s.nproc_ + p];
          W0 += s.sqrt_sigma2_[b * s.nproc_ + p] * s.beta0_[b * s.nproc_ + p];
        }
        HD rho, hnu;
        cpu::full_additive_bin_objective(HD::variable(nu0, 0), V, W0, eng.prof.observation(b), s.likelihood_,
                                         false, &rho, &hnu);
        for (int64_t e = e0; e < e1; ++e) kappa[e - e0] = hnu.g[0];
      } else if (s.bb_ == BBKind::normal_multiplicative) {
        using HD = HyperDual<4>;
        double S_ = 0.0, Tu = 0.0, Tm = 0.0, Mm = 0.0;
        for (int64_t e = e0; e < e1; ++e) {
          const int64_t f = L.entry_flat[e];
          const double N = sc.N[e - e0];
          if (s.bbmask_[f]) {
            Tm += s.beta0_[f] * N;
            Mm += N;
          } else {
            S_ += N * N / s.kstat_[f];
            Tu += s.beta0_[f] * N;
          }
        }
        HD rho, hnu;
        cpu::full_multiplicative_bin_objective(HD::variable(S_, 0), HD::variable(Tu, 1), HD::variable(Tm, 2),
                                               HD::variable(Mm, 3), eng.prof.observation(b), s.likelihood_,
                                               &rho, &hnu);
        for (int64_t e = e0; e < e1; ++e) {
          const int64_t f = L.entry_flat[e];
          const double N = sc.N[e - e0];
          kappa[e - e0] = s.bbmask_[f] ? s.beta0_[f] * hnu.g[2] + hnu.g[3]
                                       : 2.0 * N / s.kstat_[f] * hnu.g[0] + s.beta0_[f] * hnu.g[1];
        }
      } else {
        bool masked_off_one = false;  // docs/likelihood.md "BB derivative corner cases" item 3: the Newton
                                      // objective's ν̃ ≠ the bin's ν
        for (int64_t e = e0; e < e1; ++e) {
          const int64_t f = L.entry_flat[e];
          masked_off_one = masked_off_one || (s.bbmask_[f] && s.beta0_[f] != 1.0);
        }
        if (!masked_off_one) {  // gamma full: dν/dN_p = w_p / (1 + q t)
          sc.ncol = 1;
          eng.prof.full_gamma_profile(b, sc, 0, 0, true, BetaTreatment::profiled, nullptr);
          for (int64_t e = e0; e < e1; ++e) kappa[e - e0] = sc.U[e - e0] * sc.aux[0];
          sc.ncol = 4;
        } else {
          // ν = Σ_unmasked β̂_p N_p + Σ_masked N_p with dβ̂/dN of the Newton solution (implicit function;
          // rabbit's one differentiable Newton step from the converged point has the same first
          // derivative up to O(f'(u0))): dν/dN_q = μ_q + Σ_unmasked N_p ∂β̂_p/∂N_q.
          const MatrixXd G = eng.prof.full_beta_sensitivity(b, sc);
          std::vector<double> bh(s.nproc_);
          eng.prof.profile_bin(b, sc, 0, 0, false, BetaTreatment::profiled, bh.data());
          VectorXd Nu = VectorXd::Zero(s.nproc_);
          for (int64_t e = e0; e < e1; ++e)
            if (!s.bbmask_[L.entry_flat[e]]) Nu[L.entry_proc[e]] = sc.N[e - e0];
          const VectorXd dnu = G.transpose() * Nu;
          for (int64_t e = e0; e < e1; ++e) {
            const int q = L.entry_proc[e];
            kappa[e - e0] = (s.bbmask_[L.entry_flat[e]] ? 1.0 : bh[q]) + dnu[q];
          }
        }
      }
    } else if (through_beta && observed && s.coupled) {
      for (int64_t e = e0; e < e1; ++e) kappa[e - e0] = 1.0;  // mixed below
    } else {
      // β fixed (stored, β⁰ for masked channels in profiled mode, or none)
      const bool use_beta = has_bb() && mode != BetaMode::none;
      if (use_beta) {
        const VectorXd& src = (mode == BetaMode::stored) ? s.beta_stored_ : s.beta0_;
        for (int64_t j = 0; j < bw; ++j) beta[j] = src[b * bw + j];
      }
      for (int64_t e = e0; e < e1; ++e) {
        const int p = L.entry_proc[e];
        const int64_t f = L.entry_flat[e];
        double kv = 1.0;
        if (use_beta) {
          if (s.bb_ == BBKind::normal_additive) {
            if (!s.bb_full_ && !s.legacy_sumw_ && A <= 0.0 && eng.prof.active(e))
              kv += s.sqrt_sigma2_[b] * beta[0];
          } else if (s.bb_full_) {
            if (!s.bbmask_[f]) kv = beta[p];
          } else if (!s.bbmask_[b] && eng.prof.active(e)) {
            kv = beta[0];
          }
        }
        kappa[e - e0] = kv;
      }
    }
    VectorXd r = VectorXd::Zero(n);
    for (int64_t e = e0; e < e1; ++e) {
      const double w = kappa[e - e0];
      if (w == 0.0) continue;
      add_pi_row(e, w * sc.a[e - e0], r.data());
      L.row_E_axpy(e, w * sc.c[e - e0], eng.pt.hp.data(), r.data() + M);
    }
    if (betavar_rows && !observed && through_beta) {
      // N_bp μ_bp var_bp/n⁰_bp with var linear in Δ = √k (β̂ − 1) of the source bins
      const auto& bv = *s.in.betavariations;
      for (int64_t p = 0; p < s.nproc_; ++p) {
        const double n0 = s.in.norm[b * s.nproc_ + p];
        if (!(n0 > 0.0) || kappa[p] == 0.0) continue;
        const double w = kappa[p] * pre_N[p] / n0;
        for (int64_t j : s.betavar_sources_) {
          const double c = bv[(b * s.nbins_ + j) * s.nproc_ + p];
          const int64_t f = j * s.nproc_ + p;
          if (c == 0.0 || s.bbmask_[f]) continue;
          r += (w * c * std::sqrt(s.kstat_[f])) * source_jac.row(source_index[j] * s.nproc_ + p).transpose();
        }
      }
    }
    J.row(b - first) = r.transpose();
  }
  if (through_beta && s.coupled && first < s.nbins_) {
    // ν = ν⁰ + s∘β̂(ν⁰) (lite) or ν⁰ + W0 − V∘C⁻¹(T(ν⁰) + ν⁰ − n) (full): dν/dν⁰ mixes observed bins
    const int64_t B = s.nbins_;
    const MatrixXd Id = MatrixXd::Identity(B, B);
    MatrixXd mix;
    MatrixXd active_term;  // normal-additive lite, A_b ≤ 0: ∂ν_b/∂A_b · ∂A_b/∂ξ (B × n)
    if (s.bb_ == BBKind::normal_additive && !s.bb_full_) {
      // ν = ν⁰ + s∘f∘β̂ with f_b = A_b where A_b ≤ 0 (rabbit's A' = 1) and 1 elsewhere; β̂ depends on
      // ν⁰ only, so dν/dξ = (I − diag(s∘f)𝔏⁻¹diag(s)C⁻¹) dν⁰/dξ + diag([A ≤ 0] s∘β̂) dA/dξ.
      const VectorXd sv = s.sqrt_sigma2_.head(B);
      VectorXd f = VectorXd::Ones(B);
      if (!s.legacy_sumw_) {
        active_term = MatrixXd::Zero(B, n);
        BinScratch so;
        int64_t maxo = 1;
        for (int64_t b = 0; b < B; ++b) maxo = std::max(maxo, L.bin_ptr[b + 1] - L.bin_ptr[b]);
        so.resize(maxo, 1, 1, 0);
        for (int64_t b = 0; b < B; ++b) {
          eng.yields(b, so, 0);
          double A = 0.0;
          VectorXd JA = VectorXd::Zero(n);
          for (int64_t e = L.bin_ptr[b]; e < L.bin_ptr[b + 1]; ++e) {
            if (!eng.prof.active(e)) continue;
            const int64_t i = e - L.bin_ptr[b];
            A += so.N[i];
            add_pi_row(e, so.a[i], JA.data());
            L.row_E_axpy(e, so.c[i], eng.pt.hp.data(), JA.data() + M);
          }
          if (A > 0.0) continue;
          f[b] = A;
          active_term.row(b) = (sv[b] * coupled_beta[b]) * JA.transpose();
        }
      }
      mix = Id - sv.cwiseProduct(f).asDiagonal() * s.additive_lu.solve(MatrixXd(sv.asDiagonal() * s.cov_inv));
    } else if (s.bb_ == BBKind::normal_additive) {
      const MatrixXd dT = -s.additive_lu.solve(MatrixXd(s.additive_V.asDiagonal() * s.cov_inv));
      mix = Id - s.additive_V.asDiagonal() * s.cov_inv * (dT + Id);
    }
    MatrixXd Jobs;
    if (s.bb_ == BBKind::normal_multiplicative) {
      Jobs = cpu_detail::coupled_multiplicative_jacobian(eng);
    } else {
      // all observed rows at fixed β are needed for the mixing
      MatrixXd J0all = yield_jacobian(xi, 0, B, BetaMode::none);
      Jobs = mix * J0all;
      if (active_term.size()) Jobs += active_term;
    }
    for (int64_t b = first; b < std::min(last, B); ++b) J.row(b - first) = Jobs.row(b);
  }
}

}  // namespace rabbit
