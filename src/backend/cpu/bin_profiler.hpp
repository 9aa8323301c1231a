#pragma once
// BinProfiler: the Barlow–Beeston profile of one uncoupled bin from its per-process yields
// (docs/likelihood.md "Profiled β", "Profiles and their derivatives"): the bin's objective, its
// final yield ν, the profiled β and, with derivatives, φ = ∂F/∂N and the structured curvature
// Ψ = U M Uᵀ + diag(d) in the BinScratch. One variant per BB mode and type: lite (and no BB),
// full normal-additive, full normal-multiplicative, full gamma (a per-bin Newton solve, with
// rabbit's composite where a masked entry has β⁰ ≠ 1).
#include <Eigen/Core>
#include <cstdint>

#include "bin_scratch.hpp"
#include "rabbit/backend/cpu/shared_likelihood.hpp"
#include "shard_state.hpp"

namespace rabbit::cpu_detail {

/// How β enters the derivatives: profiled (the total derivative through β̂(ξ)) or held at its
/// profiled value (docs/likelihood.md "BB derivative corner cases").
enum class BetaTreatment { profiled, held };

class BinProfiler {
 public:
  explicit BinProfiler(const ShardState& state) : s(state), L(state.layout), P(state.nproc_) {}

  /// Columns of U per entry for the shard's BB configuration.
  int ncols(BetaTreatment treatment) const;
  cpu::BinObservation observation(int64_t b) const;
  cpu::LiteEntry lite_entry(int64_t b) const;
  /// Whether entry e carries the bin's lite β (not a zero-variance process).
  bool active(int64_t e) const;

  /// Profile of bin b, phase A in sc at entry slot `slot` and bin slot `bslot`; returns its
  /// objective. derivs: fill φ, U, d, M. beta_out (optional): lite 1, full P values.
  double profile_bin(int64_t b, BinScratch& sc, int64_t slot, int64_t bslot, bool derivs,
                     BetaTreatment treatment, double* beta_out) const;
  double full_gamma_profile(int64_t b, BinScratch& sc, int64_t slot, int64_t bslot, bool derivs,
                            BetaTreatment treatment, double* beta_out) const;
  /// dβ̂_p/dN_q [P × P] of observed bin b in BB full mode (gamma or normal-multiplicative,
  /// uncoupled; phase A in slot 0 of sc).
  Eigen::MatrixXd full_beta_sensitivity(int64_t b, BinScratch& sc) const;

 private:
  template <int K>
  double lite_profile(int64_t b, BinScratch& sc, int64_t slot, int64_t bslot, bool derivs,
                      BetaTreatment treatment, double* beta_out) const;
  double full_additive_profile(int64_t b, BinScratch& sc, int64_t slot, int64_t bslot, bool derivs,
                               BetaTreatment treatment, double* beta_out) const;
  double full_multiplicative_profile(int64_t b, BinScratch& sc, int64_t slot, int64_t bslot, bool derivs,
                                     BetaTreatment treatment, double* beta_out) const;
  cpu::DynHyperDual gamma_full_literal(int64_t b, const BinScratch& sc, int64_t slot, double u0) const;

  const ShardState& s;
  const EntryLayout& L;
  int64_t P;
};

}  // namespace rabbit::cpu_detail
