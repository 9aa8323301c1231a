#pragma once
// Per-bin likelihood math of the CUDA backend (docs/likelihood.md "Per-entry BB statistics" to "Profiled β", docs/likelihood.md "The NLL and its data term", "Profiles and their derivatives"): the profiled
// Barlow–Beeston β of one observed bin, the bin's reduced NLL contribution, the yield weights
// φ = ∂Φ/∂N and the bin's block of the yield curvature Ψ = ∂²Φ/∂N∂Nᵀ.
//
// Ψ of every supported case has the form  Ψ_b = U M Uᵀ + diag(d)  with U = [u1 u2] (per process)
// and a symmetric 2×2 M, so one kernel applies it to any δN:
//   no BB, normal-additive:          u1 = 1, M = [c]                      (Woodbury for additive)
//   lite gamma / normal-mult.:       u1 = active, u2 = zero-variance, M = [[W_AA, W_AZ], [W_AZ, W_ZZ]]
//   full gamma / normal-mult.:       u1 = w, M = [γ], d = −g² ĉ
//   profile = false (β held fixed):  u1 = ∂ν/∂N = μ̃, M = [ℓ'']
//
// Header-only and __host__ __device__, so the same code runs in the CUDA kernels and in the host
// tests that check it against finite differences of the profiled value (a GPU is not needed to
// test the math).
#include <cmath>

#if defined(__CUDACC__)
#define RABBIT_HD __host__ __device__
#else
#define RABBIT_HD
#endif

namespace rabbit::bin_math {

enum LikelihoodKind : int { kPoisson = 0, kChisq = 1 };
enum BBKind : int { kNoBB = 0, kLite = 1, kFull = 2 };
enum BBTypeKind : int { kGamma = 0, kNormalMult = 1, kNormalAdd = 2 };

struct BinConfig {
  int likelihood = kPoisson;
  int bb = kNoBB;
  int type = kGamma;
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
  const double* sigma2 = nullptr;   // σ²_β (s = √σ²)
  const unsigned char* zero_var = nullptr;
};

struct BinResult {
  double value = 0;  // data term + BB constraint (reduced)
  double nu = 0;     // final expected yield
  double m11 = 0, m12 = 0, m22 = 0;
};

/// Q(a, b, c) = ½(−b + √(b² − 4ac))/a, the "+" root, evaluated as rabbit does.
RABBIT_HD inline double quad_root(double a, double b, double c) { return 0.5 * (-b + sqrt(b * b - 4.0 * a * c)) / a; }

/// Reduced data term ℓ and its first two derivatives at ν (docs/likelihood.md "The NLL and its data term").
RABBIT_HD inline void data_term(int likelihood, double nu, double n, double v, double lognobs, double& l, double& g,
                                double& q) {
  if (likelihood == kChisq) {
    l = 0.5 * (nu - n) * (nu - n) / v;
    g = (nu - n) / v;
    q = 1.0 / v;
  } else if (n == 0.0) {
    l = nu;
    g = 1.0;
    q = 0.0;
  } else {
    l = -n * (log(nu) - lognobs) + nu - n;
    g = 1.0 - n / nu;
    q = n / (nu * nu);
  }
}

/// Reduced gamma constraint of one entry (docs/likelihood.md "BB constraint term").
RABBIT_HD inline double gamma_constraint(double k, double beta, double beta0) {
  if (beta0 == 0.0) return k * beta;
  return -k * beta0 * (log(beta) - log(beta0)) + k * (beta - beta0);
}

/// n/ν̂ for the Poisson full closed forms, ν̂ = Q(1, b, −n S); for n = 0 the finite limit
/// max(b, 0)/S instead of rabbit's 0/0 (docs/likelihood.md "Corner cases chosen", docs/differences-from-rabbit.md).
RABBIT_HD inline double poisson_full_ratio(double n, double b, double S) {
  if (n == 0.0) return (b > 0.0 && S > 0.0) ? b / S : 0.0;
  return n / quad_root(1.0, b, -n * S);
}

// ---- gamma + full: Newton on u with X = X_thr + e^u (docs/likelihood.md "Profiled β") ----------------------------------
struct GammaFullBin {
  int likelihood, nproc;
  double n, v, lognobs;
  const double* N;
  const double* k;
  const double* beta0;
  const unsigned char* masked;

  RABBIT_HD double denom(int p, double X) const {
    return likelihood == kChisq ? k[p] + ((X - n) / v) * N[p] : (1.0 - n / X) * N[p] + k[p];
  }
  // f(u) derivatives: returns f'(u), writes f''(u).
  RABBIT_HD double derivs(double Xthr, double u, double& h) const {
    const double eu = exp(u), X = Xthr + eu;
    double nu = 0, dnu = 0, d2nu = 0, dc = 0, d2c = 0;
    for (int p = 0; p < nproc; ++p) {
      if (masked[p]) {
        nu += beta0[p] * N[p];
        continue;
      }
      const double d = denom(p, X);
      const double d1 = likelihood == kChisq ? N[p] / v : n * N[p] / (X * X);
      const double d2 = likelihood == kChisq ? 0.0 : -2.0 * n * N[p] / (X * X * X);
      const double kb0 = k[p] * beta0[p];
      const double b = kb0 / d, b1 = -kb0 * d1 / (d * d), b2 = -kb0 * (d2 / (d * d) - 2.0 * d1 * d1 / (d * d * d));
      nu += b * N[p];
      dnu += b1 * N[p];
      d2nu += b2 * N[p];
      dc += k[p] * b1 - (beta0[p] == 0.0 ? 0.0 : kb0 * b1 / b);
      d2c += k[p] * b2 - (beta0[p] == 0.0 ? 0.0 : kb0 * (b2 / b - b1 * b1 / (b * b)));
    }
    double l, g, q;
    data_term(likelihood, nu, n, v, lognobs, l, g, q);
    const double F1 = g * dnu + dc, F2 = q * dnu * dnu + g * d2nu + d2c;
    h = F2 * eu * eu + F1 * eu;
    return F1 * eu;
  }
  /// Writes β for every process; masked → β⁰.
  RABBIT_HD void solve(double* beta) const {
    double mn = INFINITY;
    for (int p = 0; p < nproc; ++p)
      if (!masked[p] && N[p] != 0.0) {
        const double r = k[p] / N[p];
        mn = fmin(mn, likelihood == kChisq ? r : 1.0 + r);
      }
    if (!(mn < INFINITY)) {  // no unmasked process with yield: β cannot move
      for (int p = 0; p < nproc; ++p) beta[p] = beta0[p];
      return;
    }
    const double Xthr = likelihood == kChisq ? n - v * mn : n / mn;
    double u = 0.0, h = 0.0, edm = INFINITY;
    for (int i = 0; i < 50 && edm > 1e-10; ++i) {
      const double g = derivs(Xthr, u, h);
      const double hs = fmax(h, 1e-8);
      u -= fmin(fmax(g / hs, -1.0), 1.0);
      edm = 0.5 * g * g / hs;
    }
    const double g = derivs(Xthr, u, h);
    u -= g / fmax(h, 1e-8);
    const double X = Xthr + exp(u);
    for (int p = 0; p < nproc; ++p) beta[p] = masked[p] ? beta0[p] : k[p] * beta0[p] / denom(p, X);
  }
};

/// Profiles one bin. N: the bin's per-process yields (nproc). Outputs per process: phi, u1, u2, d;
/// beta: 1 value (lite) or nproc values (full), untouched without BB.
RABBIT_HD inline void profile_bin(const BinConfig& cfg, double n, double v, double lognobs, const double* N,
                                  const BinStats& st, double* beta, double* phi, double* u1, double* u2, double* d,
                                  BinResult& r) {
  const int P = cfg.nproc;
  double nu0 = 0;
  for (int p = 0; p < P; ++p) {
    nu0 += N[p];
    u2[p] = 0.0;
    d[p] = 0.0;
  }
  r.m12 = r.m22 = 0.0;
  double l, g, q;

  if (cfg.bb == kNoBB) {
    data_term(cfg.likelihood, nu0, n, v, lognobs, l, g, q);
    for (int p = 0; p < P; ++p) {
      phi[p] = g;
      u1[p] = 1.0;
    }
    r.value = l;
    r.nu = nu0;
    r.m11 = q;
    return;
  }

  if (cfg.bb == kLite) {
    double A = 0, Z = 0;
    for (int p = 0; p < P; ++p) {
      if (!cfg.legacy_lite && st.zero_var[p]) Z += N[p];
      else A += N[p];
    }
    const double Ap = A > 0.0 ? A : 1.0;
    const double k = st.kstat[0], b0 = st.beta0[0], sig2 = st.sigma2[0];
    const bool masked = st.masked[0] != 0;
    double b, nu, lb;
    // Poisson, n = 0: the quadratics factor (cpu::lite_bin_objective, docs/likelihood.md "Corner cases
    // chosen"); `edge`: the larger root is the one with ν = 0, where β̂ is no stationary point of the
    // bin's NLL and φ, Ψ are the derivatives of the closed form instead of the envelope/Schur forms.
    const bool empty = cfg.likelihood != kChisq && n == 0.0;
    bool edge = false;
    if (cfg.type == kNormalAdd) {
      const double s = sqrt(sig2);
      if (sig2 == 0.0) b = b0;
      else if (cfg.likelihood == kChisq) b = (s * (n - nu0) + v * b0) / (v + sig2);
      else if (empty) {  // (sβ + ν⁰)(β + s − β⁰) = 0
        edge = -nu0 / s > b0 - s;
        b = edge ? -nu0 / s : b0 - s;
      } else b = quad_root(s, sig2 + nu0 - s * b0, s * (nu0 - n) - nu0 * b0);
      nu = nu0 + s * b * (A / Ap);
      lb = 0.5 * (b - b0) * (b - b0);
      data_term(cfg.likelihood, nu, n, v, lognobs, l, g, q);
      // ν = 0 (A > 0): F = ½(ν⁰/s + β⁰)², dF/dν⁰ = −(β − β⁰)/s, d²F/dν⁰² = 1/σ²
      const bool exact_edge = edge && cfg.profile && A > 0.0;
      for (int p = 0; p < P; ++p) {
        phi[p] = exact_edge ? -(b - b0) / s : g;
        u1[p] = 1.0;
      }
      r.m11 = exact_edge ? 1.0 / sig2 : (cfg.profile ? q / (1.0 + q * sig2) : q);
    } else {
      if (masked) b = b0;
      else if (cfg.type == kGamma && empty) {  // (A'β + Z)((A' + k)β − kβ⁰) = 0
        edge = -Z / Ap > k * b0 / (Ap + k);
        b = edge ? -Z / Ap : k * b0 / (Ap + k);
      } else if (cfg.type == kGamma)
        b = cfg.likelihood == kChisq ? quad_root(Ap * Ap, k * v + (Z - n) * Ap, -k * v * b0)
                                     : quad_root(Ap * (Ap + k), Ap * (Z - n - b0 * k) + k * Z, -b0 * k * Z);
      else if (empty) {  // (A'β + Z)(kβ + A' − kβ⁰) = 0
        edge = -Z / Ap > b0 - Ap / k;
        b = edge ? -Z / Ap : b0 - Ap / k;
      } else
        b = cfg.likelihood == kChisq ? ((n - Z) * Ap / v + k * b0) / (k + Ap * Ap / v)
                                     : quad_root(k * Ap, Ap * Ap - k * b0 * Ap + k * Z, Ap * (Z - n) - k * b0 * Z);
      nu = masked ? A + Z : b * A + Z;
      lb = masked ? 0.0 : (cfg.type == kGamma ? gamma_constraint(k, b, b0) : 0.5 * k * (b - b0) * (b - b0));
      data_term(cfg.likelihood, nu, n, v, lognobs, l, g, q);
      const double scale = masked ? 1.0 : b;
      for (int p = 0; p < P; ++p) {
        const bool active = cfg.legacy_lite || !st.zero_var[p];
        phi[p] = active ? scale * g : g;
        u1[p] = active ? 1.0 : 0.0;
        u2[p] = active ? 0.0 : 1.0;
      }
      if (!cfg.profile || masked) {
        // Ψ = ℓ'' μ̃ μ̃ᵀ with μ̃ = β on active processes, 1 on the others.
        for (int p = 0; p < P; ++p) {
          u1[p] = u1[p] * scale + u2[p];
          u2[p] = 0.0;
        }
        r.m11 = q;
      } else if (edge && A > 0.0) {
        // β = −Z/A, ν = 0: F(A, Z) = c(β) with c' = ∂c/∂β, c'' = ∂²c/∂β², derivatives of the closed form.
        const double c1 = cfg.type == kGamma ? k - (b0 == 0.0 ? 0.0 : k * b0 / b) : k * (b - b0);
        const double c2 = cfg.type == kGamma ? (b0 == 0.0 ? 0.0 : k * b0 / (b * b)) : k;
        const double bA = Z / (A * A), bZ = -1.0 / A;
        for (int p = 0; p < P; ++p) phi[p] = c1 * (u1[p] * bA + u2[p] * bZ);
        r.m11 = c2 * bA * bA - 2.0 * c1 * Z / (A * A * A);
        r.m12 = c2 * bA * bZ + c1 / (A * A);
        r.m22 = c2 * bZ * bZ;
      } else {
        const double c2 = cfg.type == kGamma ? (b0 == 0.0 ? 0.0 : k * b0 / (b * b)) : k;
        const double F = A * A * q + c2;
        const double t = g + b * A * q;
        if (F == 0.0) {  // gamma, β⁰ = 0, n = 0: β̂ = 0 whatever A, Z, and F(A, Z) = Z
          r.m11 = r.m12 = r.m22 = 0.0;
        } else {
          r.m11 = b * b * q - t * t / F;
          r.m12 = b * q - t * A * q / F;
          r.m22 = q * c2 / F;
        }
      }
    }
    beta[0] = b;
    r.value = l + lb;
    r.nu = nu;
    return;
  }

  // ---- full: one β per process ----
  const double* k = st.kstat;
  const double* b0 = st.beta0;
  if (cfg.type == kNormalAdd) {
    double V = 0, sb0 = 0;
    for (int p = 0; p < P; ++p) {
      V += st.sigma2[p];
      sb0 += sqrt(st.sigma2[p]) * b0[p];
    }
    double nu = nu0, lb = 0;
    if (cfg.likelihood == kChisq) {
      const double T = (sb0 + V * (n - nu0) / v) / (1.0 + V / v);
      for (int p = 0; p < P; ++p) beta[p] = b0[p] - sqrt(st.sigma2[p]) * (nu0 + T - n) / v;
    } else {
      const double ratio = poisson_full_ratio(n, V - sb0 - nu0, V);
      for (int p = 0; p < P; ++p) beta[p] = b0[p] + (ratio - 1.0) * sqrt(st.sigma2[p]);
    }
    for (int p = 0; p < P; ++p) {
      nu += sqrt(st.sigma2[p]) * beta[p];
      lb += 0.5 * (beta[p] - b0[p]) * (beta[p] - b0[p]);
    }
    data_term(cfg.likelihood, nu, n, v, lognobs, l, g, q);
    for (int p = 0; p < P; ++p) {
      phi[p] = g;
      u1[p] = 1.0;
    }
    r.m11 = cfg.profile ? q / (1.0 + q * V) : q;
    r.value = l + lb;
    r.nu = nu;
    return;
  }
  if (cfg.type == kGamma) {
    GammaFullBin solver{cfg.likelihood, P, n, v, lognobs, N, k, b0, st.masked};
    solver.solve(beta);
  } else {
    double S = 0, nb0 = 0;
    for (int p = 0; p < P; ++p) {
      nb0 += b0[p] * N[p];
      if (!st.masked[p]) S += N[p] * N[p] / k[p];
    }
    if (cfg.likelihood == kChisq) {
      const double nuh = (n * S / v + nb0) / (1.0 + S / v);
      for (int p = 0; p < P; ++p) beta[p] = st.masked[p] ? b0[p] : b0[p] + (n - nuh) * N[p] / (v * k[p]);
    } else {
      const double ratio = poisson_full_ratio(n, S - nb0, S);
      for (int p = 0; p < P; ++p) beta[p] = st.masked[p] ? b0[p] : b0[p] + (ratio - 1.0) * N[p] / k[p];
    }
  }
  double nu = 0, lb = 0;
  for (int p = 0; p < P; ++p) {
    const double mt = st.masked[p] ? 1.0 : beta[p];
    nu += mt * N[p];
    if (!st.masked[p])
      lb += cfg.type == kGamma ? gamma_constraint(k[p], beta[p], b0[p]) : 0.5 * k[p] * (beta[p] - b0[p]) * (beta[p] - b0[p]);
  }
  data_term(cfg.likelihood, nu, n, v, lognobs, l, g, q);
  double t = 0;
  for (int p = 0; p < P; ++p) {
    const double mt = st.masked[p] ? 1.0 : beta[p];
    phi[p] = mt * g;
    double chat = 0.0;
    if (!st.masked[p]) {
      const double c2 = cfg.type == kGamma ? (b0[p] == 0.0 ? 0.0 : k[p] * b0[p] / (beta[p] * beta[p])) : k[p];
      chat = c2 > 0.0 ? 1.0 / c2 : 0.0;
    }
    // Stash ĉ in d for now; w and d are filled below once t is known.
    d[p] = chat;
    t += chat * N[p] * N[p];
    u1[p] = mt;
  }
  if (!cfg.profile) {
    for (int p = 0; p < P; ++p) d[p] = 0.0;
    r.m11 = q;
  } else {
    r.m11 = q / (1.0 + q * t);
    for (int p = 0; p < P; ++p) {
      u1[p] -= g * d[p] * N[p];
      d[p] = -g * g * d[p];
    }
  }
  r.value = l + lb;
  r.nu = nu;
}

}  // namespace rabbit::bin_math
