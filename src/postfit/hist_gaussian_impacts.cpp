// The Gaussian global impacts on histogram bins (rabbit's gaussian_global_impacts_obs with _dndvars;
// docs/output-format.md "Gaussian global impacts on histogram bins"): the linear response dy/dg of every
// output to each global observable g (counts n, BB centres β⁰), x̂ responding through the profiled likelihood
// at x, squared and weighted with Var(g).
#include <fmt/format.h>

#include "bb_response.hpp"
#include "hist_beta_impacts.hpp"
#include "rabbit/core/error.hpp"
#include "rabbit/model/bb_statistics.hpp"
#include "times_diagonal.hpp"

namespace rabbit::postfit {

using Eigen::MatrixXd;
using Eigen::VectorXd;
using Mode = YieldModel::BetaMode;

GaussianHistImpacts gaussian_hist_impacts(const Model& model, YieldModel& shard, Fitter& fitter,
                                          const MappingJacobian* A, bool by_process, const VectorXd& x,
                                          const MatrixXd& JC, bool profile) {
  const FitInputData& in = *model.input;
  const int64_t nobs = in.nbins, nbf = in.nbinsfull, P = in.nproc, ny = JC.rows();
  const DataLikelihood lik = model.options.likelihood;
  const bool bb = shard.has_bb();
  if (bb && lik == DataLikelihood::covariance)
    throw OptionError(
        "--computeHistGaussianImpacts is not implemented with --covarianceFit and bin-by-bin statistics");
  if (bb && shard.beta_variations_active())
    throw OptionError("--computeHistGaussianImpacts is not implemented for inputs with beta variations");
  VectorXd xi, d1, d2;
  model.parameters.transform(x, xi, d1, d2);
  // x̂ responds through the profiled likelihood at x (rabbit's _dxdvars), prefit included.
  VectorXd nu;
  shard.expected_yields(xi, 0, nbf, Mode::profiled, &nu);
  const MatrixXd Jp = times_diagonal(shard.yield_jacobian(xi, 0, nobs, Mode::profiled), d1);  // [nobs × npar]
  const VectorXd& n = fitter.observed();
  const VectorXd& varn = fitter.observed_variances();
  const bool dense_data = lik == DataLikelihood::covariance && in.data_cov_inv;
  // dd_b = w_b² Var(n_b) with w = −∂²L/∂ν∂n: n/ν² (Poisson; 0 where n = 0, rabbit's NLL takes log 1
  // there), 1/var (χ² and a covariance fit without a data covariance).
  VectorXd dd = VectorXd::Zero(nobs);
  for (int64_t b = 0; b < nobs; ++b) {
    if (lik == DataLikelihood::poisson)
      dd(b) = n(b) == 0.0 ? 0.0 : n(b) / (nu(b) * nu(b));
    else
      dd(b) = 1.0 / (varn.size() ? varn(b) : n(b));
  }
  GaussianHistImpacts out;
  // Data part: dy/dn = Z W with Z = A U H⁻¹ Uᵀ (β̂'s own response, profiled histograms only) + J_y C J_pᵀ;
  // Σ_k dd_k Z_ik² = diag(JC Q JCᵀ) with Q = J_pᵀ diag(dd) J_p plus the terms of the first part, which is
  // as sparse as A (U H⁻¹ Uᵀ is diagonal in the bins). A dense data covariance: Z W Zᵀ.
  const MatrixXd Q = dense_data ? MatrixXd(Jp.transpose() * *in.data_cov_inv * Jp)
                                : MatrixXd(Jp.transpose() * dd.asDiagonal() * Jp);
  out.stat_sq = ((JC * Q).array() * JC.array()).rowwise().sum();
  if (!bb) return out;

  const BBResponse r = bb_response(model, shard, fitter, x, xi, false);
  const BBStatistics stats(model);
  const bool additive = model.bb_type == BBType::normal_additive;
  const int64_t ne = r.beta.size();
  // (U H⁻¹)[b, e] for the exact H_ββ at fixed x: per entry (lite) or per bin by Sherman–Morrison (full).
  auto u_hinv = [&](int64_t b, int64_t p) -> double {
    if (!r.full) {
      const double u = r.dN.row(b).sum(), H = r.c(b) + dd(b) * u * u;
      return H > 0.0 ? u / H : 0.0;
    }
    double s = 0.0;
    for (int64_t pp = 0; pp < P; ++pp) {
      const double v = r.dN(b, pp), c = r.c(r.entry(b, pp));
      if (v != 0.0 && c > 0.0) s += v * v / c;
    }
    const double c = r.c(r.entry(b, p));
    return c > 0.0 ? (r.dN(b, p) / c) / (1.0 + dd(b) * s) : 0.0;
  };
  // (U H⁻¹)[b, e] over the observed bins, rows bins: the β̂ response to n_b is its row times w_b.
  auto observed_uh = [&]() {
    std::vector<Eigen::Triplet<double>> t;
    for (int64_t b = 0; b < nobs; ++b)
      for (int64_t p = 0; p < (r.full ? P : 1); ++p) {
        const double v = u_hinv(b, p);
        if (v != 0.0) t.emplace_back(b, r.entry(b, p), v);
      }
    MappingJacobian m(nobs, ne);
    m.setFromTriplets(t.begin(), t.end());
    return m;
  };
  if (profile && by_process) {
    // A mapping of N (docs/architecture.md "Process-selecting mappings"): Z = G (U H⁻¹)ᵀ with G = A ∂N/∂β,
    // which no longer factors through one coefficient per bin; as sparse as G.
    const MappingJacobian Z = MappingJacobian(*A * process_beta_rows(r)) * observed_uh().transpose();
    for (int64_t i = 0; i < ny; ++i)
      for (MappingJacobian::InnerIterator it(Z, i); it; ++it) {
        const int64_t k = it.col();
        const double z = it.value();
        out.stat_sq(i) += dd(k) * (2.0 * z * JC.row(i).dot(Jp.row(k)) + z * z);
      }
  } else if (profile) {
    for (int64_t i = 0; i < ny; ++i) {
      auto add = [&](int64_t k, double a) {
        if (k >= nobs || a == 0.0) return;
        double t = 0.0;  // (U H⁻¹ Uᵀ)_kk
        for (int64_t p = 0; p < (r.full ? P : 1); ++p)
          t += (r.full ? r.dN(k, p) : r.dN.row(k).sum()) * u_hinv(k, p);
        const double z = a * t;
        out.stat_sq(i) += dd(k) * (2.0 * z * JC.row(i).dot(Jp.row(k)) + z * z);
      };
      if (A) {
        for (MappingJacobian::InnerIterator it(*A, i); it; ++it) add(it.col(), it.value());
      } else {
        add(i, 1.0);
      }
    }
  }
  // BB part: dy/dβ⁰_e = q_e (M[e, ·] + (A U H⁻¹)[·, e]) with M = dβ̂/dx C J_yᵀ (x̂'s response) and q =
  // −∂²L_β/∂β∂β⁰; Var(β⁰_e) = 1/k_e (gamma, normal-multiplicative) or 1 (normal-additive). Masked
  // channels' β equal their centres: dy/dβ⁰ = A U there (profiled histograms only).
  const VectorXd& k = stats.kstat();
  BetaImpactTerms t;
  t.A = A;
  t.full = r.full;
  t.nproc = P;
  const MatrixXd B = profiled_beta_jacobian(model, shard, fitter, x, xi, d1);
  t.B = &B;
  t.s2 = VectorXd::Zero(ne);
  for (int64_t e = 0; e < ne; ++e) {
    if (stats.mask()[e] && !additive) continue;
    t.s2(e) = r.q(e) * r.q(e) * (additive ? 1.0 : 1.0 / k(e));
  }
  std::vector<Eigen::Triplet<double>> uh;
  if (profile && by_process) {
    // ∂N/∂β H⁻¹ [nbf·P × ne], rows b·P + p': the exact per-bin block of H⁻¹ (diagonal lite; full:
    // diag(1/c) − ℓ'' v vᵀ/(1 + ℓ'' s), v = u/c, whose u-weighted column sums are u_hinv).
    for (int64_t b = 0; b < nbf; ++b) {
      if (b >= nobs) {
        for (int64_t p = 0; p < P; ++p) {
          const int64_t e = r.entry(b, p);
          if (r.dN(b, p) != 0.0 && r.q(e) != 0.0) uh.emplace_back(b * P + p, e, r.dN(b, p) / r.q(e));
        }
        continue;
      }
      if (!r.full) {
        const double u = r.dN.row(b).sum(), H = r.c(b) + dd(b) * u * u;
        for (int64_t p = 0; p < P; ++p)
          if (H > 0.0 && r.dN(b, p) != 0.0) uh.emplace_back(b * P + p, b, r.dN(b, p) / H);
        continue;
      }
      VectorXd v = VectorXd::Zero(P);
      for (int64_t p = 0; p < P; ++p) {
        const double c = r.c(r.entry(b, p));
        if (c > 0.0) v(p) = r.dN(b, p) / c;
      }
      const double g = dd(b) / (1.0 + dd(b) * r.dN.row(b).dot(v));
      for (int64_t pp = 0; pp < P; ++pp) {
        if (r.dN(b, pp) == 0.0 || v(pp) == 0.0) continue;  // c = 0: the row of H⁻¹ is zero
        for (int64_t p = 0; p < P; ++p) {
          const double h = (p == pp ? 1.0 / r.c(r.entry(b, p)) : 0.0) - g * v(pp) * v(p);
          if (h != 0.0) uh.emplace_back(b * P + pp, r.entry(b, p), r.dN(b, pp) * h);
        }
      }
    }
  } else if (profile)
    for (int64_t b = 0; b < nbf; ++b)
      for (int64_t p = 0; p < P; ++p) {
        const int64_t e = r.entry(b, p);
        if (b < nobs) {
          const double v = r.full || p == 0 ? u_hinv(b, p) : 0.0;
          if (v != 0.0) uh.emplace_back(b, e, v);
        } else if (r.dN(b, p) != 0.0 && r.q(e) != 0.0) {
          uh.emplace_back(b, e, r.dN(b, p) / r.q(e));
        }
      }
  t.UH.resize(by_process ? nbf * P : nbf, ne);
  t.UH.setFromTriplets(uh.begin(), uh.end());
  BetaImpacts bi = hist_beta_impacts(t, JC);
  out.bb_sq = std::move(bi.total_sq);
  out.bb_proc_sq = std::move(bi.per_process_sq);
  return out;
}

}  // namespace rabbit::postfit
