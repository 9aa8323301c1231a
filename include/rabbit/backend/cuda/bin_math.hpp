#pragma once
// The CUDA backend's adapter from its per-bin arrays to the shared per-bin likelihood
// (include/rabbit/likelihood, docs/architecture.md "The per-bin likelihood"): the profiled
// Barlow–Beeston β of one observed bin, the bin's reduced NLL contribution, the yield weights
// φ = ∂Φ/∂N and the bin's block of the yield curvature Ψ = ∂²Φ/∂N∂Nᵀ, in the form
//   Ψ_b = U M Uᵀ + diag(d),  U = [u1 u2] (per process), M symmetric 2×2,
// which one kernel applies to any δN:
//   no BB, lite (any type):          u1 = active, u2 = zero-variance, M = ∂²F/∂(A, Z)² of the lite
//                                    closed form on HyperDual<2> over (A, Z), φ its gradient
//                                    (the CPU backend's evaluation, docs/likelihood.md "Profiled β")
//   full normal-additive:            u1 = 1, M = ∂²F/∂ν⁰² on HyperDual<1> over ν⁰ (as the CPU)
//   full gamma / normal-mult.:       the envelope form u1 = μ − gĉN, M = [q/(1 + qΣĉN²)], d = −g²ĉ
//                                    (bin_profile.hpp `full_envelope_entry`), β̂ from the shared
//                                    closed form resp. Newton solve
//   profile = false (β held fixed):  the same with β detached (lite/additive) resp. ĉ = 0.
//
// Header-only and __host__ __device__, so the same code runs in the CUDA kernels and in the host
// tests that check it against finite differences and the CPU shard (a GPU is not needed to test the
// math).
#include "rabbit/likelihood/bin_profile.hpp"
#include "rabbit/likelihood/gamma_full.hpp"

namespace rabbit::bin_math {

using likelihood::BBKind;
using likelihood::BinObservation;

struct BinConfig {
  DataLikelihood likelihood = DataLikelihood::poisson;  // poisson or chisq (covariance is CPU-only)
  BBKind bb = BBKind::none;                             // resolved type, none without BB
  BBMode mode = BBMode::lite;
  int nproc = 1;
  bool legacy_lite = false;  // per-bin hkstat input: no zero-variance split
  bool profile = true;       // false: Ψ at fixed β (impacts)
};

/// BB statistics of one bin, pointers offset to the bin: lite → one value each (zero_var: nproc
/// flags); full → nproc values each. Unused pointers may be null.
struct BinStats {
  const double* kstat = nullptr;
  const double* beta0 = nullptr;
  const unsigned char* masked = nullptr;
  const double* sigma2 = nullptr;  // σ²_β (s = √σ²)
  const unsigned char* zero_var = nullptr;
};

struct BinResult {
  double value = 0;  // data term + BB constraint (reduced)
  double nu = 0;     // final expected yield
  double m11 = 0, m12 = 0, m22 = 0;
};

/// ln β⁰ as the CPU backend keeps it (0 for β⁰ ≤ 0, where the gamma constraint drops the logarithm).
RABBIT_HD inline double log_centre(double beta0) {
  return beta0 > 0.0 ? log(beta0) : 0.0;
}

/// A gamma + full bin over the kernel's per-process arrays, for likelihood/gamma_full.hpp.
struct GammaFullProcesses {
  const double* yields;
  const BinStats* st;
  int nproc;
  RABBIT_HD int size() const { return nproc; }
  RABBIT_HD double N(int p) const { return yields[p]; }
  RABBIT_HD double k(int p) const { return st->kstat[p]; }
  RABBIT_HD double beta0(int p) const { return st->beta0[p]; }
  RABBIT_HD bool masked(int p) const { return st->masked[p] != 0; }
};

/// No BB and lite: the lite closed form on HyperDual<2> over (A, Z).
RABBIT_HD inline void lite_profile(const BinConfig& cfg, const BinObservation& o, const double* N,
                                   const BinStats& st, double* beta, double* phi, double* u1, double* u2,
                                   BinResult& r) {
  using HD = likelihood::HyperDual<2>;
  const int P = cfg.nproc;
  auto active = [&](int p) { return cfg.bb == BBKind::none || cfg.legacy_lite || !st.zero_var[p]; };
  double A = 0.0, Z = 0.0;
  for (int p = 0; p < P; ++p) (active(p) ? A : Z) += N[p];
  likelihood::LiteEntry e;
  if (cfg.bb != BBKind::none) {
    e.k = st.kstat[0];
    e.beta0 = st.beta0[0];
    e.log_beta0 = log_centre(e.beta0);
    e.masked = st.masked[0] != 0;
    e.sigma2 = st.sigma2[0];
    e.s = sqrt(e.sigma2);
  }
  HD b, nu;
  const HD F = likelihood::lite_bin_objective(HD::variable(A, 0), HD::variable(Z, 1), o, cfg.likelihood,
                                              cfg.bb, e, cfg.legacy_lite, !cfg.profile, &b, &nu);
  for (int p = 0; p < P; ++p) {
    const bool act = active(p);
    phi[p] = act ? F.g[0] : F.g[1];
    u1[p] = act ? 1.0 : 0.0;
    u2[p] = act ? 0.0 : 1.0;
  }
  r.m11 = F.h[0][0];
  r.m12 = F.h[0][1];
  r.m22 = F.h[1][1];
  if (cfg.bb != BBKind::none) beta[0] = b.v;
  r.value = F.v;
  r.nu = nu.v;
}

/// Full normal-additive: the closed form on HyperDual<1> over ν⁰ (β_p = β⁰_p + ρ s_p).
RABBIT_HD inline void full_additive_profile(const BinConfig& cfg, const BinObservation& o, const double* N,
                                            const BinStats& st, double* beta, double* phi, double* u1,
                                            BinResult& r) {
  using HD = likelihood::HyperDual<1>;
  const int P = cfg.nproc;
  double nu0 = 0.0, V = 0.0, W0 = 0.0;
  for (int p = 0; p < P; ++p) nu0 += N[p];
  for (int p = 0; p < P; ++p) {
    V += st.sigma2[p];
    W0 += sqrt(st.sigma2[p]) * st.beta0[p];
  }
  HD rho, nu;
  const HD F = likelihood::full_additive_bin_objective(HD::variable(nu0, 0), V, W0, o, cfg.likelihood,
                                                       !cfg.profile, &rho, &nu);
  for (int p = 0; p < P; ++p) {
    beta[p] = st.beta0[p] + rho.v * sqrt(st.sigma2[p]);
    phi[p] = F.g[0];
    u1[p] = 1.0;
  }
  r.m11 = F.h[0][0];
  r.value = F.v;
  r.nu = nu.v;
}

/// Full gamma and normal-multiplicative: β̂ from the shared closed form (normal-multiplicative) or
/// Newton solve (gamma), then the envelope form.
RABBIT_HD inline void full_profile(const BinConfig& cfg, const BinObservation& o, const double* N,
                                   const BinStats& st, double* beta, double* phi, double* u1, double* d,
                                   BinResult& r) {
  const int P = cfg.nproc;
  const double* k = st.kstat;
  const double* b0 = st.beta0;
  double nu = 0.0, F = 0.0;
  if (cfg.bb == BBKind::normal_multiplicative) {
    double S = 0.0, Tu = 0.0, Tm = 0.0, Mm = 0.0;
    for (int p = 0; p < P; ++p) {
      if (st.masked[p]) {
        Tm += b0[p] * N[p];
        Mm += N[p];
      } else {
        S += N[p] * N[p] / k[p];
        Tu += b0[p] * N[p];
      }
    }
    double rho = 0.0;
    F = likelihood::full_multiplicative_bin_objective(S, Tu, Tm, Mm, o, cfg.likelihood, &rho, &nu);
    for (int p = 0; p < P; ++p) beta[p] = st.masked[p] ? b0[p] : b0[p] + rho * N[p] / k[p];
  } else {
    const GammaFullProcesses bin{N, &st, P};
    const likelihood::GammaFullSolution s = likelihood::gamma_full_solve(bin, o, cfg.likelihood);
    const bool chisq = cfg.likelihood == DataLikelihood::chisq;
    double Lb = 0.0;
    for (int p = 0; p < P; ++p) {
      beta[p] = b0[p];
      if (s.any_free && !st.masked[p])
        beta[p] = likelihood::gamma_full_beta(s.X, N[p], k[p], b0[p], o, chisq);
      if (st.masked[p]) {
        nu += N[p];
      } else {
        nu += beta[p] * N[p];
        Lb += likelihood::gamma_constraint(beta[p], k[p], b0[p], log_centre(b0[p]));
      }
    }
    F = likelihood::data_term(nu, o, cfg.likelihood) + Lb;
  }
  const double g = likelihood::data_first(nu, o, cfg.likelihood),
               q = likelihood::data_second(nu, o, cfg.likelihood);
  double t = 0.0;
  for (int p = 0; p < P; ++p) {
    const bool masked = st.masked[p] != 0;
    const double mu = masked ? 1.0 : beta[p];
    const double chat =
        masked || !cfg.profile ? 0.0 : likelihood::bb_inverse_curvature(cfg.bb, k[p], mu, b0[p]);
    t += chat * N[p] * N[p];
    const likelihood::EnvelopeEntry e = likelihood::full_envelope_entry(mu, chat, N[p], g);
    phi[p] = e.phi;
    u1[p] = e.u;
    d[p] = e.d;
  }
  r.m11 = likelihood::full_envelope_weight(q, t);
  r.value = F;
  r.nu = nu;
}

/// Profiles one bin. N: the bin's per-process yields (nproc). Outputs per process: phi, u1, u2, d;
/// beta: 1 value (lite) or nproc values (full), untouched without BB.
RABBIT_HD inline void profile_bin(const BinConfig& cfg, double n, double v, double lognobs, const double* N,
                                  const BinStats& st, double* beta, double* phi, double* u1, double* u2,
                                  double* d, BinResult& r) {
  const BinObservation o{n, v, lognobs};
  for (int p = 0; p < cfg.nproc; ++p) {
    u2[p] = 0.0;
    d[p] = 0.0;
  }
  r.m12 = r.m22 = 0.0;
  if (cfg.bb == BBKind::none || cfg.mode == BBMode::lite)
    lite_profile(cfg, o, N, st, beta, phi, u1, u2, r);
  else if (cfg.bb == BBKind::normal_additive)
    full_additive_profile(cfg, o, N, st, beta, phi, u1, r);
  else
    full_profile(cfg, o, N, st, beta, phi, u1, d, r);
}

}  // namespace rabbit::bin_math
