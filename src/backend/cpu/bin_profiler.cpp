#include "bin_profiler.hpp"

#include <Eigen/LU>
#include <algorithm>
#include <cmath>
#include <vector>

#include "rabbit/backend/cpu/shared_likelihood.hpp"

namespace rabbit::cpu_detail {

using cpu::BBKind;
using cpu::BinObservation;
using cpu::HyperDual;
using Eigen::MatrixXd;
using Eigen::VectorXd;

inline int BinProfiler::ncols(BetaTreatment treatment) const {
  const bool profile = treatment == BetaTreatment::profiled;
  if (s.coupled) return 1;
  if (s.bb_ == BBKind::none || !s.bb_full_) return s.any_zero_var_ ? 2 : 1;
  if (s.bb_ == BBKind::normal_additive) return 1;
  if (s.bb_ == BBKind::normal_multiplicative && profile) return 4;
  // gamma with masked centres ≠ 1: those bins carry the dense Hessian of rabbit's composite over
  // all their entries (U = identity)
  if (s.bb_ == BBKind::gamma && profile && s.gamma_masked_centres_)
    return static_cast<int>(std::max<int64_t>(P, 1));
  return 1;
}

inline cpu::BinObservation BinProfiler::observation(int64_t b) const {
  cpu::BinObservation o;
  o.n = s.nobs_[b];
  o.v = s.varnobs_[b];
  o.log_n = s.lognobs_[b];
  return o;
}

inline cpu::LiteEntry BinProfiler::lite_entry(int64_t b) const {
  cpu::LiteEntry e;
  if (s.bb_ == BBKind::none) return e;
  e.k = s.kstat_[b];
  e.beta0 = s.beta0_[b];
  e.log_beta0 = s.log_beta0_[b];
  e.masked = s.bbmask_[b];
  e.s = s.sqrt_sigma2_[b];
  e.sigma2 = s.sigma2_[b];
  return e;
}

inline bool BinProfiler::active(int64_t e) const {
  return s.bb_ == BBKind::none || s.legacy_sumw_ || !s.zero_var_[L.entry_flat[e]];
}

// Lite (and no-BB) profile via hyper-duals over (A, Z).
template <int K>
inline double BinProfiler::lite_profile(int64_t b, BinScratch& sc, int64_t slot, int64_t bslot, bool derivs,
                                        BetaTreatment treatment, double* beta_out) const {
  const bool fixed_beta = treatment == BetaTreatment::held;
  const int64_t e0 = L.bin_ptr[b], e1 = L.bin_ptr[b + 1];
  double A = 0.0, Z = 0.0;
  for (int64_t e = e0; e < e1; ++e) (active(e) ? A : Z) += sc.N[slot + e - e0];
  const BinObservation o = observation(b);
  const cpu::LiteEntry le = lite_entry(b);
  if (!derivs) {
    double beta, nu;
    const double F =
        cpu::lite_bin_objective(A, Z, o, s.likelihood_, s.bb_, le, s.legacy_sumw_, fixed_beta, &beta, &nu);
    if (beta_out) *beta_out = beta;
    sc.nu[bslot] = nu;
    return F;
  }
  using HD = HyperDual<K>;
  const HD hA = HD::variable(A, 0);
  const HD hZ = K > 1 ? HD::variable(Z, K - 1) : HD(Z);
  HD beta, nu;
  const HD F =
      cpu::lite_bin_objective(hA, hZ, o, s.likelihood_, s.bb_, le, s.legacy_sumw_, fixed_beta, &beta, &nu);
  if (beta_out) *beta_out = beta.v;
  sc.nu[bslot] = nu.v;
  const int nc = sc.ncol;
  for (int64_t e = e0; e < e1; ++e) {
    const int64_t i = slot + e - e0;
    const bool act = active(e);
    sc.phi[i] = act ? F.g[0] : F.g[K - 1];
    sc.d[i] = 0.0;
    for (int j = 0; j < nc; ++j) sc.U[i * nc + j] = 0.0;
    if (act)
      sc.U[i * nc + 0] = 1.0;
    else
      sc.U[i * nc + nc - 1] = 1.0;
  }
  double* Mb = &sc.M[bslot * nc * nc];
  for (int i = 0; i < nc; ++i)
    for (int j = 0; j < nc; ++j) Mb[i * nc + j] = F.h[i][j];
  return F.v;
}

inline double BinProfiler::full_additive_profile(int64_t b, BinScratch& sc, int64_t slot, int64_t bslot,
                                                 bool derivs, BetaTreatment treatment,
                                                 double* beta_out) const {
  const bool fixed_beta = treatment == BetaTreatment::held;
  const int64_t e0 = L.bin_ptr[b], e1 = L.bin_ptr[b + 1];
  double nu0 = 0.0;
  for (int64_t e = e0; e < e1; ++e) nu0 += sc.N[slot + e - e0];
  double V = 0.0, W0 = 0.0;
  for (int64_t p = 0; p < P; ++p) {
    const int64_t f = b * P + p;
    V += s.sigma2_[f];
    W0 += s.sqrt_sigma2_[f] * s.beta0_[f];
  }
  const BinObservation o = observation(b);
  double rho_v;
  double F;
  if (!derivs) {
    double nu;
    F = cpu::full_additive_bin_objective(nu0, V, W0, o, s.likelihood_, fixed_beta, &rho_v, &nu);
    sc.nu[bslot] = nu;
  } else {
    using HD = HyperDual<1>;
    HD rho, nu;
    const HD Fh = cpu::full_additive_bin_objective(HD::variable(nu0, 0), V, W0, o, s.likelihood_, fixed_beta,
                                                   &rho, &nu);
    rho_v = rho.v;
    sc.nu[bslot] = nu.v;
    for (int64_t e = e0; e < e1; ++e) {
      const int64_t i = slot + e - e0;
      sc.phi[i] = Fh.g[0];
      sc.d[i] = 0.0;
      sc.U[i] = 1.0;
    }
    sc.M[bslot] = Fh.h[0][0];
    F = Fh.v;
  }
  if (beta_out)
    for (int64_t p = 0; p < P; ++p) beta_out[p] = s.beta0_[b * P + p] + rho_v * s.sqrt_sigma2_[b * P + p];
  return F;
}

inline double BinProfiler::full_multiplicative_profile(int64_t b, BinScratch& sc, int64_t slot, int64_t bslot,
                                                       bool derivs, BetaTreatment treatment,
                                                       double* beta_out) const {
  const bool profile = treatment == BetaTreatment::profiled;
  const int64_t e0 = L.bin_ptr[b], e1 = L.bin_ptr[b + 1];
  double S_ = 0.0, Tu = 0.0, Tm = 0.0, Mm = 0.0;
  for (int64_t e = e0; e < e1; ++e) {
    const int64_t f = L.entry_flat[e];
    const double N = sc.N[slot + e - e0];
    if (s.bbmask_[f]) {
      Tm += s.beta0_[f] * N;
      Mm += N;
    } else {
      S_ += N * N / s.kstat_[f];
      Tu += s.beta0_[f] * N;
    }
  }
  const BinObservation o = observation(b);
  double rho_v, F;
  if (!derivs || !profile) {
    double nu;
    F = cpu::full_multiplicative_bin_objective(S_, Tu, Tm, Mm, o, s.likelihood_, &rho_v, &nu);
    sc.nu[bslot] = nu;
    if (derivs) {  // β held fixed: φ = μ̃ g, Ψ = ℓ'' μ̃ μ̃ᵀ
      const double g = data_first(nu, o, s.likelihood_), q = data_second(nu, o, s.likelihood_);
      for (int64_t e = e0; e < e1; ++e) {
        const int64_t i = slot + e - e0, f = L.entry_flat[e];
        const double mu = s.bbmask_[f] ? 1.0 : s.beta0_[f] + rho_v * sc.N[i] / s.kstat_[f];
        sc.phi[i] = mu * g;
        sc.U[i] = mu;
        sc.d[i] = 0.0;
      }
      sc.M[bslot] = q;
    }
  } else {
    using HD = HyperDual<4>;
    HD rho, nu;
    const HD Fh =
        cpu::full_multiplicative_bin_objective(HD::variable(S_, 0), HD::variable(Tu, 1), HD::variable(Tm, 2),
                                               HD::variable(Mm, 3), o, s.likelihood_, &rho, &nu);
    rho_v = rho.v;
    sc.nu[bslot] = nu.v;
    F = Fh.v;
    for (int64_t e = e0; e < e1; ++e) {
      const int64_t i = slot + e - e0, f = L.entry_flat[e];
      double* u = &sc.U[i * 4];
      if (s.bbmask_[f]) {
        u[0] = 0.0;
        u[1] = 0.0;
        u[2] = s.beta0_[f];
        u[3] = 1.0;
        sc.d[i] = 0.0;
      } else {
        u[0] = 2.0 * sc.N[i] / s.kstat_[f];
        u[1] = s.beta0_[f];
        u[2] = 0.0;
        u[3] = 0.0;
        sc.d[i] = 2.0 * Fh.g[0] / s.kstat_[f];
      }
      sc.phi[i] = u[0] * Fh.g[0] + u[1] * Fh.g[1] + u[2] * Fh.g[2] + u[3] * Fh.g[3];
    }
    double* Mb = &sc.M[bslot * 16];
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j) Mb[i * 4 + j] = Fh.h[i][j];
  }
  if (beta_out) {
    for (int64_t p = 0; p < P; ++p) beta_out[p] = s.beta0_[b * P + p];
    for (int64_t e = e0; e < e1; ++e) {
      const int64_t f = L.entry_flat[e];
      if (!s.bbmask_[f]) beta_out[f - b * P] = s.beta0_[f] + rho_v * sc.N[slot + e - e0] / s.kstat_[f];
    }
  }
  return F;
}

// A bin of the shard as likelihood/gamma_full.hpp reads it: the phase-A yields of its stored
// entries and their BB statistics and centres.
struct GammaFullShardBin {
  const ShardState& s;
  const int64_t* flat;   // b*P + p of the bin's entries
  const double* yields;  // their phase-A yields
  int count;
  int size() const { return count; }
  double N(int a) const { return yields[a]; }
  double k(int a) const { return s.kstat_[flat[a]]; }
  double beta0(int a) const { return s.beta0_[flat[a]]; }
  bool masked(int a) const { return s.bbmask_[flat[a]] != 0; }
};

// gamma + full: the shared per-bin Newton (docs/likelihood.md "Profiled β"), envelope gradient and
// Schur curvature (docs/likelihood.md "Profiles and their derivatives").
inline double BinProfiler::full_gamma_profile(int64_t b, BinScratch& sc, int64_t slot, int64_t bslot,
                                              bool derivs, BetaTreatment treatment, double* beta_out) const {
  const bool profile = treatment == BetaTreatment::profiled;
  const int64_t e0 = L.bin_ptr[b], e1 = L.bin_ptr[b + 1];
  const int64_t ne = e1 - e0;
  const BinObservation o = observation(b);
  const GammaFullShardBin bin{s, L.entry_flat.data() + e0, sc.N.data() + slot, static_cast<int>(ne)};
  const cpu::GammaFullSolution solution = cpu::gamma_full_solve(bin, o, s.likelihood_);
  const bool any_free = solution.any_free;
  std::vector<double> beta(ne);
  for (int a = 0; a < bin.size(); ++a) {
    beta[a] = bin.beta0(a);
    if (any_free && !bin.masked(a))
      beta[a] = cpu::gamma_full_beta(solution.X, bin.N(a), bin.k(a), bin.beta0(a), o,
                                     s.likelihood_ == DataLikelihood::chisq);
  }
  double nu = 0.0, Lb = 0.0;
  for (int64_t e = e0; e < e1; ++e) {
    const int64_t f = L.entry_flat[e];
    const double N = sc.N[slot + e - e0];
    if (s.bbmask_[f]) {
      nu += N;
    } else {
      nu += beta[e - e0] * N;
      Lb += cpu::gamma_constraint(beta[e - e0], s.kstat_[f], s.beta0_[f], s.log_beta0_[f]);
    }
  }
  sc.nu[bslot] = nu;
  const double F = cpu::data_term(nu, o, s.likelihood_) + Lb;
  bool special = false;  // a masked entry with β⁰ ≠ 1: rabbit's Newton ν̃ ≠ the bin's ν (docs/likelihood.md
                         // "BB derivative corner cases" item 3)
  if (derivs && profile && any_free && sc.ncol >= ne)
    for (int64_t e = e0; e < e1; ++e) {
      const int64_t f = L.entry_flat[e];
      special = special || (s.bbmask_[f] && s.beta0_[f] != 1.0);
    }
  const int nc = sc.ncol;
  if (derivs && special) {
    const cpu::DynHyperDual Fh = gamma_full_literal(b, sc, slot, solution.u0);
    for (int64_t a = 0; a < ne; ++a) {
      const int64_t i = slot + a;
      sc.phi[i] = Fh.g[a];
      sc.d[i] = 0.0;
      for (int c = 0; c < nc; ++c) sc.U[i * nc + c] = c == a ? 1.0 : 0.0;
    }
    double* Mb = &sc.M[bslot * nc * nc];
    for (int a = 0; a < nc; ++a)
      for (int c = 0; c < nc; ++c) Mb[a * nc + c] = (a < ne && c < ne) ? Fh.h(a, c) : 0.0;
  } else if (derivs) {
    // The envelope form of bin_profile.hpp. φ = μg (`full_envelope_entry`'s phi) is stored before
    // the curvature: with the store after it (or `entry` built before t), GCC contracts this loop
    // differently and the beta-variations gamma fit moves by an ulp (docs/architecture.md "The CPU
    // backend").
    const double g = data_first(nu, o, s.likelihood_), q = data_second(nu, o, s.likelihood_);
    double t = 0.0;
    for (int64_t e = e0; e < e1; ++e) {
      const int64_t i = slot + e - e0, f = L.entry_flat[e];
      const bool masked = s.bbmask_[f];
      const double mu = masked ? 1.0 : beta[e - e0];
      sc.phi[i] = mu * g;
      double chat = 0.0;
      if (!masked && profile) chat = cpu::bb_inverse_curvature(BBKind::gamma, s.kstat_[f], mu, s.beta0_[f]);
      t += chat * sc.N[i] * sc.N[i];
      for (int c = 0; c < nc; ++c) sc.U[i * nc + c] = 0.0;
      const cpu::EnvelopeEntry entry = cpu::full_envelope_entry(mu, chat, sc.N[i], g);
      sc.U[i * nc] = entry.u;
      sc.d[i] = entry.d;
    }
    double* Mb = &sc.M[bslot * nc * nc];
    for (int c = 0; c < nc * nc; ++c) Mb[c] = 0.0;
    Mb[0] = cpu::full_envelope_weight(q, t);
    sc.aux[bslot] = 1.0 / (1.0 + q * t);
  }
  if (beta_out)
    for (int64_t p = 0; p < P; ++p) beta_out[p] = s.beta0_[b * P + p];
  if (beta_out)
    for (int64_t e = e0; e < e1; ++e) beta_out[L.entry_flat[e] - b * P] = beta[e - e0];
  return F;
}

// gamma + full, rabbit's composite of one bin (bin_profile.hpp) on dynamic hyper-duals over the
// bin's entries, at the converged Newton point u0.
inline cpu::DynHyperDual BinProfiler::gamma_full_literal(int64_t b, const BinScratch& sc, int64_t slot,
                                                         double u0) const {
  using D = cpu::DynHyperDual;
  const int64_t e0 = L.bin_ptr[b], e1 = L.bin_ptr[b + 1];
  const int K = static_cast<int>(e1 - e0);
  std::vector<D> N(K);
  std::vector<cpu::GammaFullEntry> entries(K);
  for (int a = 0; a < K; ++a) {
    N[a] = D::variable(sc.N[slot + a], a, K);
    const int64_t f = L.entry_flat[e0 + a];
    entries[a] = {s.kstat_[f], s.beta0_[f], s.log_beta0_[f], static_cast<bool>(s.bbmask_[f])};
  }
  return cpu::gamma_full_bin_composite(N.data(), entries.data(), K, observation(b), s.likelihood_, u0);
}

// Profile of one (uncoupled) bin; returns its objective. beta_out: lite 1, full P values.
inline double BinProfiler::profile_bin(int64_t b, BinScratch& sc, int64_t slot, int64_t bslot, bool derivs,
                                       BetaTreatment treatment, double* beta_out) const {
  if (s.bb_ == BBKind::none || !s.bb_full_) {
    if (sc.ncol == 2 || (!derivs && s.any_zero_var_))
      return lite_profile<2>(b, sc, slot, bslot, derivs, treatment, beta_out);
    return lite_profile<1>(b, sc, slot, bslot, derivs, treatment, beta_out);
  }
  if (s.bb_ == BBKind::normal_additive)
    return full_additive_profile(b, sc, slot, bslot, derivs, treatment, beta_out);
  if (s.bb_ == BBKind::normal_multiplicative)
    return full_multiplicative_profile(b, sc, slot, bslot, derivs, treatment, beta_out);
  return full_gamma_profile(b, sc, slot, bslot, derivs, treatment, beta_out);
}

// dβ̂_p/dN_q [P × P] of observed bin b in BB full mode (gamma or normal-multiplicative, uncoupled,
// dense; phase A in slot 0 of sc): the derivative of rabbit's closed form (normal-multiplicative),
// resp. of the Newton solution by the implicit function theorem at the converged point, which is
// what rabbit's final differentiable Newton step gives (gamma; stationarity of the Newton
// objective, whose ν̃ carries β⁰ N on masked entries).
inline MatrixXd BinProfiler::full_beta_sensitivity(int64_t b, BinScratch& sc) const {
  MatrixXd G = MatrixXd::Zero(P, P);
  const BinObservation o = observation(b);
  // per-process yields (sparse bins hold only their stored entries)
  std::vector<double> Nd(P, 0.0);
  for (int64_t e = L.bin_ptr[b]; e < L.bin_ptr[b + 1]; ++e) Nd[L.entry_proc[e]] = sc.N[e - L.bin_ptr[b]];
  if (s.bb_ == BBKind::normal_multiplicative) {
    double S_ = 0.0, Tu = 0.0, Tm = 0.0, Mm = 0.0;
    for (int64_t p = 0; p < P; ++p) {
      const int64_t f = b * P + p;
      const double N = Nd[p];
      if (s.bbmask_[f]) {
        Tm += s.beta0_[f] * N;
        Mm += N;
      } else {
        S_ += N * N / s.kstat_[f];
        Tu += s.beta0_[f] * N;
      }
    }
    using HD = HyperDual<4>;
    HD rho, nu;
    cpu::full_multiplicative_bin_objective(HD::variable(S_, 0), HD::variable(Tu, 1), HD::variable(Tm, 2),
                                           HD::variable(Mm, 3), o, s.likelihood_, &rho, &nu);
    VectorXd drho(P);
    for (int64_t q = 0; q < P; ++q) {
      const int64_t f = b * P + q;
      drho[q] = s.bbmask_[f] ? rho.g[2] * s.beta0_[f] + rho.g[3]
                             : rho.g[0] * 2.0 * Nd[q] / s.kstat_[f] + rho.g[1] * s.beta0_[f];
    }
    for (int64_t p = 0; p < P; ++p) {
      const int64_t f = b * P + p;
      if (s.bbmask_[f]) continue;
      G.row(p) = (Nd[p] / s.kstat_[f]) * drho.transpose();
      G(p, p) += rho.v / s.kstat_[f];
    }
    return G;
  }
  std::vector<double> beta(P);
  profile_bin(b, sc, 0, 0, false, BetaTreatment::profiled, beta.data());
  VectorXd mu(P);
  std::vector<int64_t> free;
  double nut = 0.0;
  for (int64_t p = 0; p < P; ++p) {
    const int64_t f = b * P + p;
    mu[p] = s.bbmask_[f] ? s.beta0_[f] : beta[p];
    nut += mu[p] * Nd[p];
    if (!s.bbmask_[f] && s.beta0_[f] > 0.0) free.push_back(p);
  }
  if (free.empty()) return G;
  const double l1 = data_first(nut, o, s.likelihood_), l2 = data_second(nut, o, s.likelihood_);
  const int64_t nf = static_cast<int64_t>(free.size());
  MatrixXd H(nf, nf), F(nf, P);
  for (int64_t i = 0; i < nf; ++i) {
    const int64_t p = free[i], f = b * P + p;
    for (int64_t j = 0; j < nf; ++j) H(i, j) = l2 * Nd[p] * Nd[free[j]];
    H(i, i) += cpu::gamma_constraint_second(beta[p], s.kstat_[f], s.beta0_[f]);
    for (int64_t q = 0; q < P; ++q) F(i, q) = l2 * Nd[p] * mu[q];
    F(i, p) += l1;
  }
  const MatrixXd D = -H.partialPivLu().solve(F);
  for (int64_t i = 0; i < nf; ++i) G.row(free[i]) = D.row(i);
  return G;
}

}  // namespace rabbit::cpu_detail
