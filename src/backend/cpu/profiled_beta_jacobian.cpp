// dβ̂/dξ of the host YieldModel: the Jacobian of the profiled β of the BB entries of observed bins
// (docs/likelihood.md "Profiled β", "Profiles and their derivatives"), for the MC-statistical part of
// global impacts (docs/output-format.md "Global impacts"). Per bin the chain dβ̂/dN · dN/dξ: lite
// and full normal-additive through hyper-duals of the closed forms, full gamma and
// normal-multiplicative through the bin profiler's dβ̂/dN.
#include <fmt/format.h>

#include <algorithm>

#include "rabbit/backend/cpu/cpu_shard_evaluator.hpp"
#include "rabbit/backend/cpu/shared_likelihood.hpp"
#include "rabbit/core/error.hpp"
#include "shard_evaluation.hpp"

namespace rabbit {

using cpu::BBKind;
using cpu::HyperDual;
using cpu_detail::BinScratch;
using cpu_detail::EntryLayout;
using cpu_detail::ShardEvaluation;
using cpu_detail::ShardState;
using Eigen::MatrixXd;
using Eigen::VectorXd;

void CpuShardEvaluator::profiled_beta_jacobian_rows(const VectorXd& xi, int64_t first, int64_t last,
                                                    Eigen::Ref<MatrixXd> D) {
  ShardState& s = *state_;
  if (first < 0 || last < first || last > s.nbins_)
    throw Error(fmt::format("profiled_beta_jacobian: bin range [{}, {}) outside the {} observed bins", first,
                            last, s.nbins_));
  const int64_t n = s.nx_, P = s.nproc_;
  ShardEvaluation eng(s, *this);
  eng.pt.prepare(s, xi, nullptr);
  const EntryLayout& L = s.layout;
  D.setZero();  // the rows of masked bins stay 0
  BinScratch sc;
  sc.resize(std::max<int64_t>(L.max_entries(first, last), 1), 1, 1, 0);
  VectorXd row(n);
  MatrixXd entry_rows(P, n);
  for (int64_t b = first; b < last; ++b) {
    const int64_t e0 = L.bin_ptr[b], e1 = L.bin_ptr[b + 1];
    eng.yields(b, sc, 0);
    if (!s.bb_full_) {
      // β̂(A, Z) of the lite closed form; masked bins keep β⁰ (normal-additive: its β̂ stays)
      if (s.bb_ != BBKind::normal_additive && s.bbmask_[b]) continue;
      double A = 0.0, Z = 0.0;
      for (int64_t e = e0; e < e1; ++e) (eng.prof.active(e) ? A : Z) += sc.N[e - e0];
      using HD = HyperDual<2>;
      HD hb, hnu;
      cpu::lite_bin_objective(HD::variable(A, 0), HD::variable(Z, 1), eng.prof.observation(b), s.likelihood_,
                              s.bb_, eng.prof.lite_entry(b), s.legacy_sumw_, false, &hb, &hnu);
      row.setZero();
      for (int64_t e = e0; e < e1; ++e)
        eng.add_entry_jacobian(e, sc, e - e0, eng.prof.active(e) ? hb.g[0] : hb.g[1], row.data());
      D.row(b - first) = row.transpose();
      continue;
    }
    if (s.bb_ == BBKind::normal_additive) {
      // β̂_p = β⁰_p + ρ(ν⁰) s_p
      double nu0 = 0.0, V = 0.0, W0 = 0.0;
      for (int64_t e = e0; e < e1; ++e) nu0 += sc.N[e - e0];
      for (int64_t p = 0; p < P; ++p) {
        V += s.sigma2_[b * P + p];
        W0 += s.sqrt_sigma2_[b * P + p] * s.beta0_[b * P + p];
      }
      using HD = HyperDual<1>;
      HD rho, hnu;
      cpu::full_additive_bin_objective(HD::variable(nu0, 0), V, W0, eng.prof.observation(b), s.likelihood_,
                                       false, &rho, &hnu);
      row.setZero();
      for (int64_t e = e0; e < e1; ++e) eng.add_entry_jacobian(e, sc, e - e0, 1.0, row.data());
      for (int64_t p = 0; p < P; ++p)
        D.row((b - first) * P + p) = (rho.g[0] * s.sqrt_sigma2_[b * P + p]) * row.transpose();
      continue;
    }
    entry_rows.setZero();
    for (int64_t e = e0; e < e1; ++e) {
      row.setZero();
      eng.add_entry_jacobian(e, sc, e - e0, 1.0, row.data());
      entry_rows.row(L.entry_proc[e]) = row.transpose();
    }
    D.middleRows((b - first) * P, P) = eng.prof.full_beta_sensitivity(b, sc) * entry_rows;
  }
}

bool CpuShardEvaluator::profiled_beta_gains_rows(const VectorXd& xi, int64_t first, int64_t last,
                                                 Eigen::Ref<VectorXd> h) {
  // The lite branch above: dβ̂/dξ = ∂β̂/∂A ∂A/∂ξ + ∂β̂/∂Z ∂Z/∂ξ and the profiled ∂ν/∂ξ = ∂ν/∂A ∂A/∂ξ +
  // ∂ν/∂Z ∂Z/∂ξ (yield_jacobian's lite rows), so where the zero-variance entries add nothing (Z = 0 and
  // no ∂Z/∂ξ: absent templates) the first is the second times h = (∂β̂/∂A)/(∂ν/∂A); where β̂ is
  // constant, h = 0.
  ShardState& s = *state_;
  ShardEvaluation eng(s, *this);
  eng.pt.prepare(s, xi, nullptr);
  const EntryLayout& L = s.layout;
  BinScratch sc;
  sc.resize(std::max<int64_t>(L.max_entries(first, last), 1), 1, 1, 0);
  VectorXd row(s.nx_);
  for (int64_t b = first; b < last; ++b) {
    const int64_t e0 = L.bin_ptr[b], e1 = L.bin_ptr[b + 1];
    if (s.bb_ != BBKind::normal_additive && s.bbmask_[b]) {
      h(b - first) = 0.0;  // β held at β⁰: no dβ̂/dξ
      continue;
    }
    eng.yields(b, sc, 0);
    double A = 0.0, Z = 0.0;
    bool z_moves = false;  // Z or ∂Z/∂ξ non-zero (a zero-variance entry that is not an absent template)
    for (int64_t e = e0; e < e1; ++e) {
      if (eng.prof.active(e)) {
        A += sc.N[e - e0];
        continue;
      }
      Z += sc.N[e - e0];
      if (z_moves || sc.N[e - e0] != 0.0) {
        z_moves = true;
        continue;
      }
      row.setZero();
      eng.add_entry_jacobian(e, sc, e - e0, 1.0, row.data());
      z_moves = !row.isZero(0.0);
    }
    using HD = HyperDual<2>;
    HD hb, hnu;
    cpu::lite_bin_objective(HD::variable(A, 0), HD::variable(Z, 1), eng.prof.observation(b), s.likelihood_,
                            s.bb_, eng.prof.lite_entry(b), s.legacy_sumw_, false, &hb, &hnu);
    if (hb.g[0] == 0.0 && hb.g[1] == 0.0) {
      h(b - first) = 0.0;  // β̂ constant (no MC statistics in the bin)
      continue;
    }
    if (z_moves) return false;
    if (hnu.g[0] == 0.0) return false;  // ν does not move with A, β̂ does
    h(b - first) = hb.g[0] / hnu.g[0];
  }
  return true;
}

}  // namespace rabbit
