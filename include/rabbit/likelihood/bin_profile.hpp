#pragma once
// Per-bin data terms and Barlow–Beeston profiles (docs/likelihood.md "Profiled β", "The NLL and its data term"), written once as
// templates so that the same literal closed forms give the value (double) and the exact first and
// second derivatives (HyperDual) with respect to the bin's sums.
#include <cmath>

#include "rabbit/backend/cpu/hyper_dual.hpp"
#include "rabbit/model/model_options.hpp"

namespace rabbit::cpu {

using std::exp;
using std::log;
using std::sqrt;

/// Observation of one bin: n, the χ² variance v and ln ň (0 for n = 0).
struct BinObservation {
  double n = 0.0;
  double v = 1.0;
  double log_n = 0.0;
};

/// Reduced data term ℓ(ν) of docs/likelihood.md "The NLL and its data term" for Poisson or χ² (covariance is handled globally).
template <class T>
T data_term(const T& nu, const BinObservation& obs, DataLikelihood lik) {
  if (lik == DataLikelihood::chisq) {
    const T r = nu - obs.n;
    return 0.5 * (r * r) / obs.v;
  }
  if (obs.n == 0.0) return nu;
  // ν − n − n·log(ν/n) as r − n·log1p(r/n) with r = ν − n (docs/likelihood.md): the form
  // −n(log ν − log n) + ν − n subtracts two logs of size log n, and its rounding times n made f
  // noisy at ~1e-10 for counts of 1e5, more than the last Newton steps change it.
  const double v = value_of(nu), n = obs.n, r = v - n;
  return unary(nu, r - n * std::log1p(r / n), r / v, n / (v * v));
}

/// The "+" root Q(a, b, c) = ½(−b + √(b² − 4ac))/a, evaluated in rabbit's operation order.
template <class T>
T plus_root(const T& a, const T& b, const T& c) {
  return 0.5 * (-b + sqrt(b * b - 4.0 * (a * c))) / a;
}

/// The "+" root of a quadratic with a > 0 that factors into the roots r1, r2: the larger one (r1 at
/// a tie). For n = 0 the lite Poisson quadratics factor (docs/likelihood.md "Corner cases chosen"), and
/// rabbit's √(b² − 4ac) = |r1 − r2|·a cancels to rounding, to √(< 0) = NaN or, at r1 = r2, to the
/// derivative 0/0 of √ at 0; the factored form is the same root with finite derivatives.
template <class T>
T larger_root(const T& r1, const T& r2) {
  return value_of(r1) >= value_of(r2) ? r1 : r2;
}

enum class BBKind { none, gamma, normal_multiplicative, normal_additive };

/// BB state of one lite entry (a bin).
struct LiteEntry {
  double k = 1.0, beta0 = 1.0, log_beta0 = 0.0, s = 0.0, sigma2 = 0.0;
  bool masked = false;
};

/// The reduced gamma constraint of one entry at β (docs/likelihood.md "BB constraint term").
template <class T>
T gamma_constraint(const T& beta, double k, double beta0, double log_beta0) {
  if (beta0 == 0.0) return k * (beta - beta0);
  return -k * beta0 * (log(beta) - log_beta0) + k * (beta - beta0);
}

/// Profiled objective of one lite bin as a function of the active and zero-variance sums A, Z
/// (no BB: ν = A + Z). Writes the profiled β and the bin yield ν. `fixed_beta`: β is held at its
/// profiled value (no derivative through it). `legacy`: per-bin sumw input (ν = ν⁰ + sβ for
/// normal-additive).
template <class T>
T lite_bin_objective(const T& A, const T& Z, const BinObservation& obs, DataLikelihood lik, BBKind bb,
                     const LiteEntry& e, bool legacy, bool fixed_beta, T* beta_out, T* nu_out) {
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
T full_multiplicative_bin_objective(const T& S, const T& Tu, const T& Tm, const T& Mm, const BinObservation& obs,
                                    DataLikelihood lik, T* rho_out, T* nu_out) {
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
T full_additive_bin_objective(const T& nu0, double V, double W0, const BinObservation& obs, DataLikelihood lik,
                              bool fixed_beta, T* rho_out, T* nu_out) {
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

/// BB state of one full-mode gamma entry.
struct GammaFullEntry {
  double k = 1.0, beta0 = 1.0, log_beta0 = 0.0;
  bool masked = false;
};

/// gamma + full (docs/likelihood.md "Profiled β"): rabbit's composite for one bin as a function of its entries' yields N, at
/// the converged Newton point u0 (held constant, as rabbit's stop_gradient does): one differentiable
/// Newton step u* = u0 − f'(u0)/max(f''(u0), 1e-8) with the threshold X_thr(N) (through the argmin
/// entry), X* = X_thr + e^{u*}, β_p = kβ⁰/d_p(X*, N_p), and ℓ(ν) + Σ c(β) with ν = Σ_unmasked βN +
/// Σ_masked N. Its derivatives are rabbit's; they differ from the envelope/Schur forms only when a
/// masked entry has β⁰ ≠ 1 (the Newton objective ν̃ carries β⁰N for it, ν does not; docs/likelihood.md "BB derivative corner cases" item 3).
template <class T>
T gamma_full_bin_composite(const T* N, const GammaFullEntry* e, int K, const BinObservation& obs,
                           DataLikelihood lik, double u0) {
  const bool chisq = lik == DataLikelihood::chisq;
  const double nn = obs.n, v = obs.v;
  const T zero = N[0] * 0.0;
  T minratio = zero;
  bool any = false;
  for (int a = 0; a < K; ++a) {
    if (e[a].masked) continue;
    const T r = chisq ? e[a].k / N[a] : 1.0 + e[a].k / N[a];
    if (!any || value_of(r) < value_of(minratio)) minratio = r;
    any = true;
  }
  const T Xthr = chisq ? nn - v * minratio : nn / minratio;
  auto beta_of = [&](const T& X, int a, T* b1, T* b2) {
    const double k = e[a].k, b0 = e[a].beta0;
    const T dd = chisq ? k + (X - nn) / v * N[a] : (1.0 - nn / X) * N[a] + k;
    if (b1) {
      const T d1 = chisq ? N[a] / v : nn * N[a] / (X * X);
      const T d2 = chisq ? zero : -2.0 * nn * N[a] / (X * X * X);
      const T dd2 = dd * dd;
      *b1 = -k * b0 * d1 / dd2;
      *b2 = -k * b0 * (d2 / dd2 - 2.0 * d1 * d1 / (dd2 * dd));
    }
    return k * b0 / dd;
  };
  // F'(X), F''(X) of the Newton objective along β(X) (masked entries: β⁰N in ν̃)
  auto derivatives = [&](const T& X, T& F1, T& F2) {
    T nut = zero, nut1 = zero, nut2 = zero, c1 = zero, c2 = zero;
    for (int a = 0; a < K; ++a) {
      if (e[a].masked) {
        nut = nut + e[a].beta0 * N[a];
        continue;
      }
      const double k = e[a].k, b0 = e[a].beta0;
      T bt1 = zero, bt2 = zero;
      const T bt = beta_of(X, a, &bt1, &bt2);
      nut = nut + bt * N[a];
      nut1 = nut1 + bt1 * N[a];
      nut2 = nut2 + bt2 * N[a];
      const T cp = b0 > 0.0 ? k - k * b0 / bt : zero + k;
      const T cpp = b0 > 0.0 ? k * b0 / (bt * bt) : zero;
      c1 = c1 + cp * bt1;
      c2 = c2 + cpp * bt1 * bt1 + cp * bt2;
    }
    T l1 = zero, l2 = zero;
    if (chisq) {
      l1 = (nut - nn) / v;
      l2 = zero + 1.0 / v;
    } else if (nn != 0.0) {
      l1 = 1.0 - nn / nut;
      l2 = nn / (nut * nut);
    } else {
      l1 = zero + 1.0;
    }
    F1 = l1 * nut1 + c1;
    F2 = l2 * nut1 * nut1 + l1 * nut2 + c2;
  };
  const double eu = std::exp(u0);
  T F1 = zero, F2 = zero;
  derivatives(Xthr + eu, F1, F2);
  const T g = F1 * eu, h = F2 * (eu * eu) + F1 * eu;
  const T hs = value_of(h) > 1e-8 ? h : zero + 1e-8;
  const T ustar = u0 - g / hs;
  const T X = Xthr + exp(ustar);
  T nu = zero, Lb = zero;
  for (int a = 0; a < K; ++a) {
    if (e[a].masked) {
      nu = nu + N[a];
      continue;
    }
    const T bt = beta_of(X, a, nullptr, nullptr);
    nu = nu + bt * N[a];
    Lb = Lb + gamma_constraint(bt, e[a].k, e[a].beta0, e[a].log_beta0);
  }
  return data_term(nu, obs, lik) + Lb;
}

}  // namespace rabbit::cpu
