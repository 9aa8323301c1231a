#pragma once
// Per-bin data terms and Barlow–Beeston profiles (docs/likelihood.md "Profiled β", "The NLL and its data
// term"), written once as templates so that the same literal closed forms give the value (double) and the
// exact first and second derivatives (HyperDual) with respect to the bin's sums. RABBIT_HD: the CUDA kernels
// evaluate the same closed forms (docs/architecture.md "The per-bin likelihood").
#include "rabbit/likelihood/bb_constraint.hpp"
#include "rabbit/likelihood/data_term.hpp"
#include "rabbit/likelihood/hyper_dual.hpp"

namespace rabbit::likelihood {

/// The "+" root Q(a, b, c) = ½(−b + √(b² − 4ac))/a, evaluated in rabbit's operation order.
template <class T>
RABBIT_HD T plus_root(const T& a, const T& b, const T& c) {
  return 0.5 * (-b + sqrt(b * b - 4.0 * (a * c))) / a;
}

/// The "+" root of a quadratic with a > 0 that factors into the roots r1, r2: the larger one (r1 at
/// a tie). For n = 0 the lite Poisson quadratics factor (docs/likelihood.md "Corner cases chosen"), and
/// rabbit's √(b² − 4ac) = |r1 − r2|·a cancels to rounding, to √(< 0) = NaN or, at r1 = r2, to the
/// derivative 0/0 of √ at 0; the factored form is the same root with finite derivatives.
template <class T>
RABBIT_HD T larger_root(const T& r1, const T& r2) {
  return value_of(r1) >= value_of(r2) ? r1 : r2;
}

/// BB state of one lite entry (a bin).
struct LiteEntry {
  double k = 1.0, beta0 = 1.0, log_beta0 = 0.0, s = 0.0, sigma2 = 0.0;
  bool masked = false;
};

/// Profiled objective of one lite bin as a function of the active and zero-variance sums A, Z
/// (no BB: ν = A + Z). Writes the profiled β and the bin yield ν. `fixed_beta`: β is held at its
/// profiled value (no derivative through it). `legacy`: per-bin sumw input (ν = ν⁰ + sβ for
/// normal-additive).
template <class T>
RABBIT_HD T lite_bin_objective(const T& A, const T& Z, const BinObservation& obs, DataLikelihood lik,
                               BBKind bb, const LiteEntry& e, bool legacy, bool fixed_beta, T* beta_out,
                               T* nu_out) {
  T nu(0.0), constraint(0.0), beta(e.beta0);
  const T Asafe = value_of(A) > 0.0 ? A : T(1.0);
  const double n = obs.n, v = obs.v, k = e.k, b0 = e.beta0;
  switch (bb) {
    case BBKind::none:
      nu = A + Z;
      beta = T(1.0);
      break;
    case BBKind::gamma:
    case BBKind::normal_multiplicative:
      if (e.masked) {
        nu = A + Z;
        break;
      }
      if (bb == BBKind::gamma) {
        if (lik == DataLikelihood::chisq)
          beta = plus_root(Asafe * Asafe, k * v + (Z - n) * Asafe, T(-k * v * b0));
        else if (n == 0.0)  // (A'β + Z)((A' + k)β − kβ⁰) = 0
          beta = larger_root(k * b0 / (Asafe + k), -Z / Asafe);
        else
          beta = plus_root(Asafe * (Asafe + k), Asafe * (Z - n - b0 * k) + k * Z, -b0 * k * Z);
      } else {
        if (lik == DataLikelihood::chisq)
          beta = ((n - Z) * Asafe / v + k * b0) / (k + Asafe * Asafe / v);
        else if (n == 0.0)  // (A'β + Z)(kβ + A' − kβ⁰) = 0
          beta = larger_root(b0 - Asafe / k, -Z / Asafe);
        else
          beta = plus_root(k * Asafe, Asafe * Asafe - k * b0 * Asafe + k * Z, Asafe * (Z - n) - k * b0 * Z);
      }
      if (fixed_beta) beta = detach(beta);
      nu = beta * A + Z;
      if (bb == BBKind::gamma) {
        constraint = gamma_constraint(beta, k, b0, e.log_beta0);
      } else {
        const T d = beta - b0;
        constraint = 0.5 * k * (d * d);
      }
      break;
    case BBKind::normal_additive: {
      const T nu0 = A + Z;
      const double s = e.s;
      if (e.sigma2 == 0.0) {
        beta = T(b0);
      } else if (lik == DataLikelihood::chisq) {
        beta = (s * (n - nu0) + v * b0) / (v + e.sigma2);
      } else if (n == 0.0) {  // (sβ + ν⁰)(β + s − β⁰) = 0
        beta = larger_root(T(b0 - s), -nu0 / s);
      } else {
        beta = plus_root(T(s), e.sigma2 + nu0 - s * b0, s * (nu0 - n) - nu0 * b0);
      }
      if (fixed_beta) beta = detach(beta);
      nu = legacy ? nu0 + s * beta : nu0 + s * beta * A / Asafe;
      const T d = beta - b0;
      constraint = 0.5 * (d * d);
      break;
    }
  }
  if (beta_out) *beta_out = beta;
  if (nu_out) *nu_out = nu;
  return data_term(nu, obs, lik) + constraint;
}

/// Profiled objective of one full-mode normal-multiplicative bin as a function of
/// S = Σ_unmasked N²/k, Tu = Σ_unmasked β⁰N, Tm = Σ_masked β⁰N, Mm = Σ_masked N. Writes the common
/// factor ρ with β_p = β⁰_p + ρ N_p/k_p, and ν. Empty Poisson bins whose closed form would divide
/// 0/0 take the finite limit n/ν̂ → b/S (docs/differences-from-rabbit.md).
template <class T>
RABBIT_HD T full_multiplicative_bin_objective(const T& S, const T& Tu, const T& Tm, const T& Mm,
                                              const BinObservation& obs, DataLikelihood lik, T* rho_out,
                                              T* nu_out) {
  const double n = obs.n;
  const T Ttot = Tu + Tm;
  T rho;
  if (lik == DataLikelihood::chisq) {
    const T nuhat = (n * S / obs.v + Ttot) / (1.0 + S / obs.v);
    rho = (n - nuhat) / obs.v;
  } else {
    const T b = S - Ttot;
    if (n == 0.0) {
      rho = value_of(b) > 0.0 ? b / S - 1.0 : T(-1.0);
    } else {
      const T nuhat = plus_root(T(1.0), b, -n * S);
      rho = n / nuhat - 1.0;
    }
  }
  const T nu = Tu + rho * S + Mm;
  if (rho_out) *rho_out = rho;
  if (nu_out) *nu_out = nu;
  return data_term(nu, obs, lik) + 0.5 * (rho * rho) * S;
}

/// Profiled objective of one full-mode normal-additive bin as a function of ν⁰, with
/// V = Σ σ², W0 = Σ s β⁰ constants: β_p = β⁰_p + ρ s_p. Same finite limit for empty bins.
template <class T>
RABBIT_HD T full_additive_bin_objective(const T& nu0, double V, double W0, const BinObservation& obs,
                                        DataLikelihood lik, bool fixed_beta, T* rho_out, T* nu_out) {
  const double n = obs.n;
  T rho;
  if (lik == DataLikelihood::chisq) {
    const T t = (W0 + V * (n - nu0) / obs.v) / (1.0 + V / obs.v);
    rho = -(nu0 + t - n) / obs.v;
  } else {
    const T b = V - W0 - nu0;
    if (n == 0.0) {
      rho = value_of(b) > 0.0 ? b / V - 1.0 : T(-1.0);
    } else {
      const T nuhat = plus_root(T(1.0), b, T(-n * V));
      rho = n / nuhat - 1.0;
    }
  }
  if (fixed_beta) rho = detach(rho);
  const T nu = nu0 + W0 + rho * V;
  if (rho_out) *rho_out = rho;
  if (nu_out) *nu_out = nu;
  return data_term(nu, obs, lik) + 0.5 * (rho * rho) * V;
}

/// One entry of a full-mode bin in the envelope form (docs/likelihood.md "Derivative structure"),
/// exact where the closed form is the profile: with μ = ∂ν/∂N_e (β̂, 1 when masked), ĉ = 1/c''(β̂)
/// (0 when β is held or masked) and g = ℓ'(ν): φ_e = μg, U_e = μ − gĉN_e, d_e = −g²ĉ. The bin's
/// Ψ = M U Uᵀ + diag(d) with M = `full_envelope_weight(ℓ''(ν), Σ ĉN²)`.
struct EnvelopeEntry {
  double phi, u, d;
};
RABBIT_HD inline EnvelopeEntry full_envelope_entry(double mu, double chat, double N, double g) {
  return {mu * g, mu - g * chat * N, -g * g * chat};
}
RABBIT_HD inline double full_envelope_weight(double q, double t) {
  return q / (1.0 + q * t);
}

}  // namespace rabbit::likelihood
