#pragma once
// gamma + full mode (docs/likelihood.md "Profiled β"): the per-bin Newton profile in u with
// X = X_thr + e^u and β_p(X) = kβ⁰/d_p(X), written once for the CPU backend, the CUDA kernels and
// rabbit's differentiable composite (docs/likelihood.md "Corner cases chosen"). A bin is any type
// with size(), N(a), k(a), beta0(a), log_beta0(a) (composite only) and masked(a) over its entries;
// N is the scalar type (double, or DynHyperDual for the composite).
#include "rabbit/likelihood/bb_constraint.hpp"
#include "rabbit/likelihood/data_term.hpp"

namespace rabbit::likelihood {

/// β of one unmasked entry at X, and with b1, b2 its first two derivatives in X.
template <class T>
RABBIT_HD T gamma_full_beta(const T& X, const T& N, double k, double b0, const BinObservation& o, bool chisq,
                            T* b1 = nullptr, T* b2 = nullptr) {
  const double nn = o.n, v = o.v;
  const T dd = chisq ? k + (X - nn) / v * N : (1.0 - nn / X) * N + k;
  if (b1) {
    const T d1 = chisq ? N / v : nn * N / (X * X);
    const T d2 = chisq ? constant_like(X, 0.0) : -2.0 * nn * N / (X * X * X);
    *b1 = -k * b0 * d1 / (dd * dd);
    *b2 = -k * b0 * (d2 / (dd * dd) - 2.0 * d1 * d1 / (dd * dd * dd));
  }
  return k * b0 / dd;
}

/// The threshold X_thr below which some β would be negative, from the smallest ratio over the
/// unmasked entries; false when every entry is masked (β = β⁰).
template <class T, class Bin>
RABBIT_HD bool gamma_full_threshold(const Bin& bin, const BinObservation& o, bool chisq, T& Xthr) {
  bool any_free = false;
  T minratio{};
  for (int a = 0; a < bin.size(); ++a) {
    if (bin.masked(a)) continue;
    const T r = chisq ? bin.k(a) / bin.N(a) : 1.0 + bin.k(a) / bin.N(a);
    if (!any_free || value_of(r) < value_of(minratio)) minratio = r;
    any_free = true;
  }
  if (any_free) Xthr = chisq ? o.n - o.v * minratio : o.n / minratio;
  return any_free;
}

/// F'(X), F''(X) of the bin's objective along β(X); masked entries enter ν̃ as β⁰N
/// (docs/likelihood.md "BB derivative corner cases" item 3).
template <class T, class Bin>
RABBIT_HD void gamma_full_derivatives(const Bin& bin, const BinObservation& o, DataLikelihood lik, const T& X,
                                      T& F1, T& F2) {
  const bool chisq = lik == DataLikelihood::chisq;
  const T zero = constant_like(X, 0.0);
  T nut = zero, nut1 = zero, nut2 = zero, c1 = zero, c2 = zero;
  for (int a = 0; a < bin.size(); ++a) {
    const double k = bin.k(a), b0 = bin.beta0(a);
    if (bin.masked(a)) {
      nut = nut + b0 * bin.N(a);
      continue;
    }
    T bt1 = zero, bt2 = zero;
    const T bt = gamma_full_beta(X, bin.N(a), k, b0, o, chisq, &bt1, &bt2);
    nut = nut + bt * bin.N(a);
    nut1 = nut1 + bt1 * bin.N(a);
    nut2 = nut2 + bt2 * bin.N(a);
    const T cp = b0 > 0.0 ? gamma_constraint_first(bt, k, b0) : constant_like(X, k);
    const T cpp = b0 > 0.0 ? gamma_constraint_second(bt, k, b0) : zero;
    c1 = c1 + cp * bt1;
    c2 = c2 + (cpp * bt1 * bt1 + cp * bt2);
  }
  const T l1 = data_first(nut, o, lik), l2 = data_second(nut, o, lik);
  F1 = l1 * nut1 + c1;
  F2 = l2 * nut1 * nut1 + l1 * nut2 + c2;
}

/// The objective's first and second derivative in u at X = X_thr + e^u.
template <class T, class Bin>
RABBIT_HD void gamma_full_u_derivatives(const Bin& bin, const BinObservation& o, DataLikelihood lik,
                                        const T& Xthr, double u, T& g, T& h) {
  const double eu = exp(u);
  T F1 = constant_like(Xthr, 0.0), F2 = F1;
  gamma_full_derivatives(bin, o, lik, Xthr + eu, F1, F2);
  g = F1 * eu;
  h = F2 * eu * eu + F1 * eu;
}

/// The Newton solution of one bin: u0 after the clipped iterations (rabbit's stop-gradient point)
/// and X after the final unclipped step; any_free = false when every entry is masked.
struct GammaFullSolution {
  bool any_free = false;
  double Xthr = 0.0, u0 = 0.0, X = 0.0;
};

template <class Bin>
RABBIT_HD GammaFullSolution gamma_full_solve(const Bin& bin, const BinObservation& o, DataLikelihood lik) {
  GammaFullSolution s;
  s.any_free = gamma_full_threshold(bin, o, lik == DataLikelihood::chisq, s.Xthr);
  if (!s.any_free) return s;
  double u = 0.0, edm = INFINITY, g = 0.0, h = 0.0;
  for (int it = 0; it < 50 && edm > 1e-10; ++it) {
    gamma_full_u_derivatives(bin, o, lik, s.Xthr, u, g, h);
    const double hs = max_of(h, 1e-8);
    u -= min_of(max_of(g / hs, -1.0), 1.0);
    edm = 0.5 * g * g / hs;
  }
  s.u0 = u;
  gamma_full_u_derivatives(bin, o, lik, s.Xthr, u, g, h);
  u -= g / max_of(h, 1e-8);
  s.X = s.Xthr + exp(u);
  return s;
}

/// BB state of one full-mode gamma entry.
struct GammaFullEntry {
  double k = 1.0, beta0 = 1.0, log_beta0 = 0.0;
  bool masked = false;
};

/// A bin as arrays of yields and entries (the composite's variables are the yields).
template <class T>
struct GammaFullEntries {
  const T* yields;
  const GammaFullEntry* e;
  int count;
  int size() const { return count; }
  const T& N(int a) const { return yields[a]; }
  double k(int a) const { return e[a].k; }
  double beta0(int a) const { return e[a].beta0; }
  double log_beta0(int a) const { return e[a].log_beta0; }
  bool masked(int a) const { return e[a].masked; }
};

/// Rabbit's composite for one bin as a function of its entries' yields N, at the converged Newton
/// point u0 (held constant, as rabbit's stop_gradient does): one differentiable Newton step
/// u* = u0 − f'(u0)/max(f''(u0), 1e-8) with the threshold X_thr(N) (through the argmin entry),
/// X* = X_thr + e^{u*}, β_p = kβ⁰/d_p(X*, N_p), and ℓ(ν) + Σ c(β) with ν = Σ_unmasked βN +
/// Σ_masked N. Its derivatives are rabbit's; they differ from the envelope/Schur forms only when a
/// masked entry has β⁰ ≠ 1 (docs/likelihood.md "BB derivative corner cases" item 3).
template <class T>
T gamma_full_bin_composite(const T* N, const GammaFullEntry* e, int K, const BinObservation& obs,
                           DataLikelihood lik, double u0) {
  const GammaFullEntries<T> bin{N, e, K};
  const bool chisq = lik == DataLikelihood::chisq;
  const T zero = N[0] * 0.0;
  T Xthr = zero;
  gamma_full_threshold(bin, obs, chisq, Xthr);
  T g = zero, h = zero;
  gamma_full_u_derivatives(bin, obs, lik, Xthr, u0, g, h);
  const T hs = value_of(h) > 1e-8 ? h : zero + 1e-8;
  const T ustar = u0 - g / hs;
  const T X = Xthr + exp(ustar);
  T nu = zero, Lb = zero;
  for (int a = 0; a < K; ++a) {
    if (e[a].masked) {
      nu = nu + N[a];
      continue;
    }
    const T bt = gamma_full_beta(X, N[a], e[a].k, e[a].beta0, obs, chisq);
    nu = nu + bt * N[a];
    Lb = Lb + gamma_constraint(bt, e[a].k, e[a].beta0, e[a].log_beta0);
  }
  return data_term(nu, obs, lik) + Lb;
}

}  // namespace rabbit::likelihood
