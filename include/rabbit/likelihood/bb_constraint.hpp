#pragma once
// The Barlow–Beeston vocabulary of the per-bin code and the constraint of one BB entry with its
// derivatives in β (docs/likelihood.md "Barlow–Beeston types and modes", "BB constraint term").
#include "rabbit/likelihood/hyper_dual.hpp"
#include "rabbit/model/model_options.hpp"

namespace rabbit::likelihood {

/// The BB type as the likelihood evaluates it: `none` for --noBinByBinStat, never `automatic`
/// (model::BBType before build_model resolves it). The mode (lite/full) is model::BBMode.
enum class BBKind { none, gamma, normal_multiplicative, normal_additive };

/// The kind of a model: BB on/off and its resolved type (`automatic` as build_model resolves it).
inline BBKind bb_kind(bool bin_by_bin_stat, BBType type, BBMode mode, DataLikelihood likelihood) {
  if (!bin_by_bin_stat) return BBKind::none;
  switch (type) {
    case BBType::gamma:
      return BBKind::gamma;
    case BBType::normal_multiplicative:
      return BBKind::normal_multiplicative;
    case BBType::normal_additive:
      return BBKind::normal_additive;
    case BBType::automatic:
      break;
  }
  return likelihood == DataLikelihood::covariance ? BBKind::normal_additive
         : mode == BBMode::full                   ? BBKind::normal_multiplicative
                                                  : BBKind::gamma;
}

/// The reduced gamma constraint of one entry at β: k(β − β⁰) − kβ⁰(ln β − ln β⁰), the logarithm
/// dropped where β⁰ = 0.
template <class T>
RABBIT_HD T gamma_constraint(const T& beta, double k, double beta0, double log_beta0) {
  if (beta0 == 0.0) return k * (beta - beta0);
  return -k * beta0 * (log(beta) - log_beta0) + k * (beta - beta0);
}

/// ∂/∂β of the gamma constraint: k − kβ⁰/β.
template <class T>
RABBIT_HD T gamma_constraint_first(const T& beta, double k, double beta0) {
  return k - k * beta0 / beta;
}

/// ∂²/∂β² of the gamma constraint: kβ⁰/β².
template <class T>
RABBIT_HD T gamma_constraint_second(const T& beta, double k, double beta0) {
  return k * beta0 / (beta * beta);
}

/// ∂²/∂β² of an unmasked entry's constraint (docs/likelihood.md "BB constraint term"): gamma kβ⁰/β²,
/// normal-multiplicative k, normal-additive 1. Masked entries are constants (0), except for
/// normal-additive, which applies no mask (docs/likelihood.md "Applying β to the yields").
RABBIT_HD inline double bb_curvature(BBKind kind, bool masked, double k, double beta, double beta0) {
  switch (kind) {
    case BBKind::gamma:
      return masked ? 0.0 : gamma_constraint_second(beta, k, beta0);
    case BBKind::normal_multiplicative:
      return masked ? 0.0 : k;
    case BBKind::normal_additive:
      return 1.0;
    case BBKind::none:
      break;
  }
  return 0.0;
}

/// ĉ = 1/c''(β) of an unmasked entry, the weight of the envelope form (bin_profile.hpp
/// `full_envelope_entry`): 0 where c'' = 0 (gamma with β⁰ = 0).
RABBIT_HD inline double bb_inverse_curvature(BBKind kind, double k, double beta, double beta0) {
  switch (kind) {
    case BBKind::gamma:
      return beta0 > 0.0 ? beta * beta / (k * beta0) : 0.0;
    case BBKind::normal_multiplicative:
      return 1.0 / k;
    case BBKind::normal_additive:
      return 1.0;
    case BBKind::none:
      break;
  }
  return 0.0;
}

}  // namespace rabbit::likelihood
