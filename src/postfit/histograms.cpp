#include "rabbit/postfit/histograms.hpp"

#include <Eigen/LU>
#include <algorithm>
#include <cmath>
#include <vector>

#include "bb_response.hpp"
#include "beta_covariance.hpp"
#include "chi2_quadratic_form.hpp"
#include "hist_beta_impacts.hpp"
#include "parallel_products.hpp"
#include "penalty_beta_terms.hpp"
#include "rabbit/core/error.hpp"
#include "rabbit/core/logging.hpp"
#include "rabbit/model/bb_statistics.hpp"
#include "rabbit/postfit/mapping.hpp"
#include "times_diagonal.hpp"

namespace rabbit::postfit {

using Eigen::MatrixXd;
using Eigen::VectorXd;
using Mode = YieldModel::BetaMode;

HistogramResult compute_histograms(const Model& model, YieldModel& shard, Fitter& fitter, const VectorXd& x,
                                   const MatrixXd& cov, const HistogramRequest& req) {
  const auto base = make_mapping(*model.input, {"BaseMapping"});
  return compute_histograms(model, shard, fitter, *base, x, cov, req);
}

HistogramResult compute_histograms(const Model& model, YieldModel& shard, Fitter& fitter,
                                   const Mapping& mapping, const VectorXd& x, const MatrixXd& cov,
                                   const HistogramRequest& req) {
  const FitInputData& in = *model.input;
  const int64_t nbf = in.nbinsfull, nobs = in.nbins, P = in.nproc, npar = x.size();
  const Mode mode = req.prefit ? Mode::stored : Mode::profiled;
  VectorXd xi, d1, d2;
  model.parameters.transform(x, xi, d1, d2);

  // Everything is computed on the yields ν of all bins and carried to y = f(ν) by the sparse A = ∂y/∂ν
  // (docs/architecture.md "Mappings"); the identity (BaseMapping) skips every product with A.
  const bool identity = mapping.is_identity();
  // A mapping of the per-process yields N (needs_processes): A = ∂y/∂vec(N) and J = ∂vec(N)/∂x below,
  // so that every product A J keeps its form (docs/architecture.md "Process-selecting mappings").
  const bool by_process = mapping.needs_processes();
  if (by_process && req.chi2)
    throw Error(mapping.key() + ": a mapping of the per-process yields has no data and no chi2");
  HistogramResult out;
  VectorXd nu;
  MatrixXd per_process;
  const bool need_per_process = req.per_process || (!identity && req.errors_per_process) || by_process;
  shard.expected_yields(xi, 0, nbf, mode, &nu, need_per_process ? &per_process : nullptr);
  MappingJacobian A;
  if (!identity) A = by_process ? mapping.jacobian_processes(per_process) : mapping.jacobian(nu);
  out.inclusive = identity ? nu : by_process ? mapping.apply_processes(per_process) : mapping.apply(nu);
  if (req.per_process) out.per_process = identity ? per_process : mapping.apply_per_process(per_process);
  const bool any_impacts = req.global_impacts || req.gaussian_global_impacts;
  const bool need_incl = req.errors || req.covariance || req.chi2 || any_impacts;
  if (!need_incl && !req.errors_per_process) return out;

  ParallelProducts prod(req.threads);
  const bool bb = shard.has_bb();
  const DataLikelihood lik = model.options.likelihood;
  const VectorXd& n = fitter.observed();
  const VectorXd& varn = fitter.observed_variances();

  // Parameter part: J = ∂ν/∂x [nbf × npar], J_y = A J [ny × npar]; JC = J_y C.
  MatrixXd J = times_diagonal(
      by_process ? shard.process_yield_jacobian(xi, 0, nbf, mode) : shard.yield_jacobian(xi, 0, nbf, mode),
      d1);
  MatrixXd mapped_J;
  if (!identity) mapped_J = A * J;
  const MatrixXd& Jy = identity ? J : mapped_J;
  // JC = J_y C when a step needs it: covariances, impacts, the chi2 of a mapping other than the identity and
  // the identity's dense or general low-rank chi2 (its Gram-matrix form uses J and C); the variances come
  // from its rows where it is built anyway, else from row blocks of J_y without it.
  MatrixXd JC;
  auto jc = [&]() -> const MatrixXd& {
    if (JC.size() == 0 && Jy.size() != 0) JC = prod.times_covariance(Jy, cov);
    return JC;
  };

  // β part: per-bin curvature of the data term ℓ''_b (postfit, observed bins, diagonal likelihoods).
  BBResponse bbr;
  MatrixXd Hinv;  // dense inverse of H_ββ (covariance fit, postfit)
  VectorXd dd;    // ℓ''_b
  if (bb) {
    bbr = bb_response(model, shard, fitter, x, xi, req.prefit);
    dd = VectorXd::Zero(nbf);
    if (!req.prefit && lik != DataLikelihood::covariance) {
      for (int64_t b = 0; b < nobs; ++b) {
        if (lik == DataLikelihood::poisson)
          dd(b) = n(b) == 0.0 ? 0.0 : n(b) / (nu(b) * nu(b));
        else
          dd(b) = 1.0 / (varn.size() ? varn(b) : n(b));
      }
    }
    if (!req.prefit && lik == DataLikelihood::covariance) {
      // H = diag(c) + Uᵀ W U over all entries, U[b, e] = ∂ν_b/∂β_e on the observed bins.
      const int64_t ne = bbr.beta.size();
      MatrixXd U = MatrixXd::Zero(nobs, ne);
      for (int64_t b = 0; b < nobs; ++b)
        for (int64_t p = 0; p < P; ++p) U(b, bbr.entry(b, p)) += bbr.dN(b, p);
      MatrixXd W = in.data_cov_inv ? *in.data_cov_inv
                                   : MatrixXd((1.0 / (varn.size() ? varn : n).array()).matrix().asDiagonal());
      MatrixXd H = U.transpose() * W * U;
      H.diagonal() += bbr.c;
      for (int64_t e = 0; e < ne; ++e)
        if (H(e, e) == 0.0) H(e, e) = 1.0;  // entries that affect nothing
      Hinv = H.inverse();
    }
  }
  // An observable regulariser on a masked channel: the β curvature of the postfit variances (rabbit's
  // pd2ldbeta2 of the profiled loss) includes the penalty's row sums (docs/likelihood.md "Regularisation and
  // β"); not the chi2's direct β̂ response, where β̂ is the analytic profile without the penalty.
  VectorXd penalty_rows;
  if (bb && !req.prefit) penalty_rows = penalty_beta_row_sums(model, nu, bbr);
  if (penalty_rows.size() && lik == DataLikelihood::covariance &&
      (req.errors || req.covariance || req.errors_per_process || any_impacts))
    throw OptionError(
        "-r/--regularization with bin-by-bin statistics and --covarianceFit is not implemented with "
        "histogram "
        "uncertainties; add --noBinByBinStat");
  // Beta variations: ∂ν_b/∂β_e (rabbit's pdexpdbeta) couples masked bins to observed entries.
  MatrixXd betavar_partials;
  if (bb && shard.beta_variations_active()) betavar_partials = shard.beta_yield_partials(xi, 0, nbf, mode);
  if (by_process && betavar_partials.size())
    throw Error(mapping.key() +
                ": a mapping of the per-process yields with beta variations is not supported (their "
                "partials are per bin, not per process)");
  if (by_process && bb && !req.prefit) {
    // ∂N/∂x holds β fixed where ∂ν/∂x follows β̂(x): add ∂N_bp/∂β_e · dβ̂_e/dx on the observed bins, as
    // the per-process errors below do.
    const MatrixXd Bp = profiled_beta_jacobian(model, shard, fitter, x, xi, d1);
    for (int64_t b = 0; b < nobs; ++b)
      for (int64_t p = 0; p < P; ++p)
        if (bbr.dN(b, p) != 0.0) J.row(b * P + p) += bbr.dN(b, p) * Bp.row(bbr.entry(b, p));
    mapped_J = A * J;
    JC = prod.times_covariance(Jy, cov);
  }
  const bool low_rank_chi2 =
      identity && req.chi2 && !(lik == DataLikelihood::covariance && in.data_cov_inv) && !Hinv.size() &&
      !penalty_rows.size() &&
      linear_chi2_low_rank_pays(nobs, npar, !req.prefit);  // the chi2's low-rank form below
  const BetaCovariance beta{bb, nobs, nbf, P, bbr, dd, Hinv, betavar_partials, penalty_rows};
  if (by_process && bb && (req.errors || req.covariance || any_impacts)) {
    MappingJacobian G;
    VectorXd cbeta;
    beta.process_terms(A, G, cbeta);
    const MatrixXd GC = Hinv.size() ? MatrixXd(G * Hinv) : MatrixXd(G * cbeta.asDiagonal());
    out.inclusive_var =
        (jc().array() * Jy.array()).rowwise().sum() + (GC.array() * MatrixXd(G).array()).rowwise().sum();
    if (req.covariance) out.inclusive_cov = jc() * Jy.transpose() + GC * G.transpose();
  } else if (req.errors || req.covariance || any_impacts) {
    // From J C's rows where a later step builds it (so that the variances and the covariance's diagonal,
    // or the impacts, come from the same products); else in row blocks from C's diagonal or Cholesky
    // factor, without a rows × npar J C.
    const bool jc_later = req.covariance || any_impacts ||
                          (req.chi2 && (!identity || !low_rank_chi2 || (bb && bbr.full && !req.prefit)));
    out.inclusive_var =
        jc_later ? VectorXd((jc().array() * Jy.array()).rowwise().sum()) : prod.row_quadratic_forms(Jy, cov);
    if (identity) {
      for (int64_t b = 0; b < nbf; ++b) out.inclusive_var(b) += beta.incl_cov(b, b);
    } else if (bb) {
      out.inclusive_var += beta.mapped_var(A);
    }
  }
  if (req.covariance && !(by_process && bb)) {
    out.inclusive_cov = jc() * Jy.transpose();
    if (identity) {
      for (int64_t b = 0; b < nbf; ++b)
        for (int64_t bp = 0; bp < nbf; ++bp)
          if (b == bp || Hinv.size()) out.inclusive_cov(b, bp) += beta.incl_cov(b, bp);
    } else if (bb) {
      out.inclusive_cov += beta.mapped_left(A, false) * A.transpose();
    }
  }

  // dβ̂/dx for the total derivatives of the per-process yields and for the postfit chi2. Where the
  // identity's chi2 is its only use and the yield model gives dβ̂/dx as multiples of J's rows (lite BB),
  // those gains stand for it (no nbins × npar pass); B is computed if a later step needs its rows.
  MatrixXd B;
  VectorXd beta_gains;
  const bool need_b = bb && !req.prefit && (req.errors_per_process || req.chi2 || req.global_impacts);
  if (need_b && low_rank_chi2 && !req.errors_per_process && !req.global_impacts)
    beta_gains = shard.profiled_beta_gains(xi, 0, nobs);
  auto ensure_b = [&] {
    if (need_b && !B.size()) B = profiled_beta_jacobian(model, shard, fitter, x, xi, d1);
  };
  if (!beta_gains.size()) ensure_b();

  if (any_impacts) {
    // rabbit's global_impacts_obs: per source S_c C J_yᵀ with S_c² = cw (0 frozen), and the β part.
    VectorXd sc = model.parameters.constraint_weights.cwiseMax(0.0).cwiseSqrt();
    for (int64_t j = 0; j < npar; ++j)
      if (model.parameters.frozen[j]) sc(j) = 0.0;
    out.impacts = jc() * sc.asDiagonal();
  }
  if (req.gaussian_global_impacts) {
    auto g = gaussian_hist_impacts(model, shard, fitter, identity ? nullptr : &A, by_process, x, jc(),
                                   !req.prefit);
    out.gaussian_stat_sq = std::move(g.stat_sq);
    out.gaussian_bb_sq = std::move(g.bb_sq);
    out.gaussian_bb_proc_sq = std::move(g.bb_proc_sq);
  }
  if (req.global_impacts) {
    if (bb) {
      const BBStatistics stats(model);
      const bool additive = model.bb_type == BBType::normal_additive;
      const int64_t ne = bbr.beta.size();
      BetaImpactTerms t;
      t.A = identity ? nullptr : &A;
      t.full = bbr.full;
      t.nproc = P;
      t.Hinv = Hinv.size() ? &Hinv : nullptr;
      t.B = B.size() ? &B : nullptr;
      // rabbit's pd2ldbeta2: the diagonal of H_ββ (row sums in full mode), 0 where held (betamask).
      VectorXd h = VectorXd::Zero(ne);
      t.s2 = VectorXd::Zero(ne);
      for (int64_t e = 0; e < ne; ++e) {
        const bool masked = stats.mask()[e] != 0;
        if (!masked) t.s2(e) = bbr.c(e);
        const int64_t b = bbr.full ? e / P : e;
        if ((masked && !additive) || b >= nbf) continue;
        const double ub = bbr.dN.row(b).sum();
        h(e) = bbr.full ? beta.entry_row_sum(e) : bbr.c(e) + dd(b) * ub * ub + beta.penalty_row(e);
      }
      auto direct = [&](int64_t e, double u) {
        return t.Hinv ? u : (beta.divides(h(e), e) ? u / h(e) : 0.0);
      };
      std::vector<Eigen::Triplet<double>> uh;
      for (int64_t b = 0; b < nbf; ++b) {
        if (by_process) {
          // rows b·P + p of ∂N/∂β H⁻¹, as A = ∂y/∂vec(N) takes them (no beta variations here)
          for (int64_t p = 0; p < P; ++p)
            if (bbr.dN(b, p) != 0.0)
              uh.emplace_back(b * P + p, bbr.entry(b, p), direct(bbr.entry(b, p), bbr.dN(b, p)));
        } else if (betavar_partials.size() && b >= nobs) {
          for (int64_t e = 0; e < betavar_partials.cols(); ++e)
            if (betavar_partials(b, e) != 0.0) uh.emplace_back(b, e, direct(e, betavar_partials(b, e)));
        } else {
          for (int64_t p = 0; p < P; ++p)
            if (bbr.dN(b, p) != 0.0)
              uh.emplace_back(b, bbr.entry(b, p), direct(bbr.entry(b, p), bbr.dN(b, p)));
        }
      }
      t.UH.resize(by_process ? nbf * P : nbf, ne);
      t.UH.setFromTriplets(uh.begin(), uh.end());
      BetaImpacts bi = hist_beta_impacts(t, jc());
      out.impacts_bb_sq = std::move(bi.total_sq);
      out.impacts_bb_proc_sq = std::move(bi.per_process_sq);
    }
  }

  if (req.errors_per_process) {
    // Rows b·P + p of dN/dx for the bins [first, last): ∂N/∂x and, on observed bins, β̂'s response.
    auto process_rows = [&](int64_t first, int64_t last) {
      MatrixXd Jp = shard.process_yield_jacobian(xi, first, last, mode);
      Jp.array().rowwise() *= d1.transpose().array();  // · diag(d1) in place
      if (B.size()) {
        for (int64_t b = first; b < std::min(last, nobs); ++b)
          for (int64_t p = 0; p < P; ++p)
            if (const double u = bbr.dN(b, p); u != 0.0)
              Jp.row((b - first) * P + p) += u * B.row(bbr.entry(b, p));
      }
      return Jp;
    };
    VectorXd v;
    MappingJacobian Ap;  // rows i·P + p of the mapping's per-process output
    if (identity) {
      // In pieces of bins, never the whole nbins·nproc × npar Jacobian (800 MB at 10,000 × 10 × 1,000): each
      // piece's rows are whole 192-row blocks of row_quadratic_forms, so the values are those of one call on
      // the whole, with one factor of C.
      const int64_t piece_bins = per_process_piece_bins(req.threads);
      v.resize(nbf * P);
      for (int64_t b0 = 0; b0 < nbf; b0 += piece_bins) {
        const int64_t b1 = std::min(nbf, b0 + piece_bins);
        v.segment(b0 * P, (b1 - b0) * P) = prod.row_quadratic_forms(process_rows(b0, b1), cov, nbf * P);
      }
    } else {
      Ap = mapping.jacobian_per_process(per_process);
      v = prod.row_quadratic_forms(MatrixXd(Ap * process_rows(0, nbf)), cov);
    }
    if (!identity && bb) {
      VectorXd s(nbf * P);
      for (int64_t b = 0; b < nbf; ++b)
        for (int64_t p = 0; p < P; ++p) s(b * P + p) = beta.proc_var(b, p);
      v += Ap.cwiseAbs2() * s;
    }
    const int64_t rows = identity ? nbf : mapping.size();
    // The processes of the output: all, or those a Select keeps (Mapping::process_selection).
    const int64_t Pout = identity || mapping.process_selection().empty()
                             ? P
                             : static_cast<int64_t>(mapping.process_selection().size());
    out.per_process_var.resize(rows, Pout);
    for (int64_t b = 0; b < rows; ++b)
      for (int64_t p = 0; p < Pout; ++p)
        out.per_process_var(b, p) = v(b * Pout + p) + (identity ? beta.proc_var(b, p) : 0.0);
  }

  // (U H_ββ⁻¹)[b, e(b, p)] without the covariance fit's dense inverse, H_ββ diagonal per entry (lite)
  // or per-bin blocks (full): only bin b couples to the entries of bin b.
  auto beta_direct = [&](int64_t b, int64_t p) -> double {
    if (!bbr.full) {
      double u = bbr.dN.row(b).sum();
      double H = bbr.c(b) + dd(b) * u * u;
      return H > 0.0 ? u / H : 0.0;
    }
    double s = 0.0;
    for (int64_t pp = 0; pp < P; ++pp) {
      double v = bbr.dN(b, pp);
      if (v != 0.0 && bbr.c(bbr.entry(b, pp)) > 0.0) s += v * v / bbr.c(bbr.entry(b, pp));
    }
    double ce = bbr.c(bbr.entry(b, p)), u = bbr.dN(b, p);
    // uᵀ H⁻¹ e_e with H = diag(c) + ℓ'' u uᵀ.
    return ce > 0.0 ? (u / ce) / (1.0 + dd(b) * s) : 0.0;
  };
  // V += R_b0 var_b0 R_b0ᵀ with R_b0 = Rb diag(q), var_b0 = c / q² (the postfit chi2's β-centre term).
  auto add_beta_centre_term = [&](MatrixXd Rb, MatrixXd& V) {
    const int64_t ne_obs = B.rows();
    VectorXd q = bbr.q.head(ne_obs), varb0(ne_obs);
    for (int64_t e = 0; e < ne_obs; ++e) varb0(e) = q(e) > 0.0 ? bbr.c(e) / (q(e) * q(e)) : 0.0;
    Rb = Rb * q.asDiagonal();
    V += prod.symmetric_product_transpose(Rb * varb0.asDiagonal(), Rb);
  };
  // The masked channels' β⁰ move x̂ through the penalty (docs/likelihood.md "Regularisation and β"):
  // V += R Rᵀ with R their response over the chi2's outputs, scaled by sqrt(Var β⁰).
  auto add_penalty_beta_centre_term = [&](const MatrixXd& JCo, MatrixXd& V) {
    if (!penalty_rows.size()) return;
    const MatrixXd R = penalty_masked_beta_response(model, shard, xi, d1, nu, J, JCo, bbr);
    V += R * R.transpose();
  };
  // The chi2 terms of a mapping other than the identity: r and V over its observed outputs, with every
  // response of the identity's terms below premultiplied by Ao = A[observed outputs, observed bins], so
  // that only outputs × bins matrices are built (a dense data covariance excepted).
  auto mapped_chi2_terms = [&](VectorXd& r, MatrixXd& V) {
    const int64_t nyo = mapping.observed_size();
    const MappingJacobian Ao = A.topLeftCorner(nyo, nobs);
    const MatrixXd Aod(Ao);
    VectorXd data_full = nu;
    data_full.head(nobs) = n;
    r = out.inclusive.head(nyo) - mapping.apply(data_full).head(nyo);
    // The data's own map f(n) is differentiated at n (rabbit's get_data and dres/dnobs): the same
    // matrix as Ao for a linear mapping, not for Normalize.
    const MatrixXd Ad(MappingJacobian(mapping.jacobian(data_full).topLeftCorner(nyo, nobs)));
    const bool dense_data = lik == DataLikelihood::covariance && in.data_cov_inv;
    MatrixXd Vn;  // dense data covariance, or its diagonal vn
    VectorXd vn;
    if (dense_data)
      Vn = in.data_cov_inv->inverse();
    else
      vn = lik == DataLikelihood::poisson ? n : (varn.size() ? varn : n);
    auto times_vn = [&](const MatrixXd& X) -> MatrixXd {
      return dense_data ? MatrixXd(X * Vn) : X * vn.asDiagonal();
    };
    MatrixXd covpred = prod.product_transpose(jc().topRows(nyo), J.topRows(nobs));  // Ao·Cov(ν) [nyo × nobs]
    if (bb) covpred += beta.mapped_left(Ao, true);
    if (req.prefit) {
      V = covpred * Aod.transpose() + times_vn(Ad) * Ad.transpose();
      return;
    }
    VectorXd cwf = model.parameters.constraint_weights;
    for (int64_t j = 0; j < npar; ++j)
      if (model.parameters.frozen[j]) cwf(j) = 0.0;
    const MatrixXd JCo = jc().topRows(nyo);
    V = prod.symmetric_product_transpose(JCo * cwf.asDiagonal(), JCo);
    MatrixXd ARn;  // Ao·R_n = Ao·(Cov(ν) W − 1), W = ∂²L/∂ν∂n as for the identity
    if (lik == DataLikelihood::covariance && in.data_cov_inv) {
      ARn = covpred * *in.data_cov_inv;
    } else {
      VectorXd w = VectorXd::Zero(nobs);
      if (lik == DataLikelihood::poisson) {
        for (int64_t b = 0; b < nobs; ++b)
          if (n(b) != 0.0) w(b) = 1.0 / nu(b);
      } else {
        w = (varn.size() ? varn : n).cwiseInverse();
      }
      ARn = covpred * w.asDiagonal();
    }
    ARn -= Ad;
    V += prod.symmetric_product_transpose(times_vn(ARn), ARn);
    if (!bb || !B.size()) return;
    const int64_t ne_obs = B.rows();
    MatrixXd Rb = prod.product_transpose(JCo, B);
    if (Hinv.size()) {
      MatrixXd AU = MatrixXd::Zero(nyo, ne_obs);  // Ao·U
      for (int64_t b = 0; b < nobs; ++b)
        for (int64_t p = 0; p < P; ++p) AU.col(bbr.entry(b, p)) += bbr.dN(b, p) * Aod.col(b);
      Rb += AU * Hinv.topLeftCorner(ne_obs, ne_obs);
    } else {
      for (int64_t b = 0; b < nobs; ++b)
        for (int64_t p = 0; p < (bbr.full ? P : 1); ++p)
          Rb.col(bbr.entry(b, p)) += beta_direct(b, p) * Aod.col(b);
    }
    add_beta_centre_term(std::move(Rb), V);
    add_penalty_beta_centre_term(JCo, V);
  };

  if (req.chi2) {
    // Linear chi2 over the unmasked bins (docs/output-format.md "Chi-square values").
    VectorXd r;
    MatrixXd V;
    bool low_rank_done = false;
    if (identity) {
      r = out.inclusive.head(nobs) - n;
      // Covariance of the fitted counts: dense Vn with the data covariance of a covariance fit, else
      // diagonal vn; W = ∂²L/∂ν∂n (its minus), diagonal w but for that dense data covariance.
      const bool dense_data = lik == DataLikelihood::covariance && in.data_cov_inv;
      MatrixXd Vn;
      VectorXd vn, w;
      if (dense_data)
        Vn = in.data_cov_inv->inverse();
      else
        vn = lik == DataLikelihood::poisson ? n : (varn.size() ? varn : n);
      if (!req.prefit && !dense_data) {
        if (lik == DataLikelihood::poisson) {
          // ∂²L/∂ν∂n = −1/ν, but 0 in empty bins: rabbit's NLL takes log(1) where n = 0 (tf.where),
          // so the fit does not respond to n there. Writing 1/ν for them would give 0·inf = NaN in
          // a bin with ν = 0 (zero yield for every process), which spreads through Rn to every bin.
          w = VectorXd::Zero(nobs);
          for (int64_t b = 0; b < nobs; ++b)
            if (n(b) != 0.0) w(b) = 1.0 / out.inclusive(b);
        } else {
          w = vn.cwiseInverse();
        }
      }
      VectorXd cwf = model.parameters.constraint_weights;
      for (int64_t j = 0; j < npar; ++j)
        if (model.parameters.frozen[j]) cwf(j) = 0.0;
      // The observed rows; J and JC themselves without masked channels (no copies of nobs × npar).
      MatrixXd Jo_rows, JCo_rows;
      if (nobs < J.rows()) Jo_rows = J.topRows(nobs);
      const MatrixXd& Jo = nobs < J.rows() ? Jo_rows : J;
      auto jco = [&]() -> const MatrixXd& {  // not needed by the prefit low-rank chi2
        if (nobs == J.rows()) return jc();
        if (JCo_rows.size() == 0) JCo_rows = jc().topRows(nobs);
        return JCo_rows;
      };
      // Var(β⁰) scaled by q² per observed entry: R_b0 = (J C Bᵀ + direct) diag(q), var_b0 = c / q².
      const bool beta_centre = bb && (B.size() || beta_gains.size()) && !req.prefit;
      const int64_t ne_obs = B.size() ? B.rows() : nobs;  // BB entries of the observed bins (gains: lite)
      VectorXd qq_varb0;
      if (beta_centre) {
        const VectorXd q = bbr.q.head(ne_obs);
        qq_varb0 = VectorXd::Zero(ne_obs);
        for (int64_t e = 0; e < ne_obs; ++e)
          if (q(e) > 0.0) qq_varb0(e) = q(e) * q(e) * (bbr.c(e) / (q(e) * q(e)));
      }
      // Many bins against few parameters: V as a diagonal plus a low-rank part, O(nobs·npar²)
      // (docs/output-format.md "Cost of the chi2 with many bins"), where its diagonal is positive.
      if (low_rank_chi2) {
        LinearChi2Terms t;
        t.postfit = !req.prefit;
        t.J = &Jo;
        t.C = &cov;
        if (bb) t.beta_var = beta.diagonal(nobs, true);
        t.data_var = vn;
        t.w = w;
        t.cw = cwf;
        if (beta_centre) {
          t.B = B.size() ? &B : nullptr;
          t.h = beta_gains;
          t.s = qq_varb0;
          std::vector<Eigen::Triplet<double>> d;
          for (int64_t b = 0; b < nobs; ++b)
            for (int64_t p = 0; p < (bbr.full ? P : 1); ++p)
              if (const double v = beta_direct(b, p); v != 0.0) d.emplace_back(b, bbr.entry(b, p), v);
          t.D.resize(nobs, ne_obs);
          t.D.setFromTriplets(d.begin(), d.end());
        }
        // Postfit: Gram matrices of J where K's and B's rows are multiples of J's (no or lite bin-by-bin
        // statistics), else the general [J C, K] form (full bin-by-bin statistics).
        std::optional<double> c = req.prefit ? prefit_chi2(t, r, prod) : proportional_rows_chi2(t, r, prod);
        if (!c && !req.prefit) {
          ensure_b();
          if (beta_centre) t.B = &B;
          t.JC = &jco();
          DiagonalPlusLowRank Vlr = linear_chi2_low_rank(t, prod);
          if ((Vlr.delta.array() > 0.0).all()) c = quadratic_form(std::move(Vlr), r, prod);
        }
        if (c) {
          out.chi2 = *c;
          out.ndf = nobs;
          low_rank_done = true;
        }
      }
      if (!low_rank_done) {
        ensure_b();
        const MatrixXd& JCo = jco();
        MatrixXd covpred = prod.symmetric_product_transpose(JCo, Jo);  // J C Jᵀ
        for (int64_t b = 0; b < nobs; ++b)
          for (int64_t bp = 0; bp < nobs; ++bp)
            if (b == bp || Hinv.size()) covpred(b, bp) += beta.incl_cov(b, bp, true);
        if (req.prefit) {
          V = covpred;
          if (dense_data)
            V += Vn;
          else
            V.diagonal() += vn;
        } else {
          // V = R_x0 var_x0 R_x0ᵀ + R_n V_n R_nᵀ + R_b0 var_b0 R_b0ᵀ, R the total responses of r.
          V = prod.symmetric_product_transpose(JCo * cwf.asDiagonal(), JCo);
          MatrixXd Rn;
          if (dense_data)
            Rn = covpred * *in.data_cov_inv;
          else
            Rn = covpred * w.asDiagonal();
          Rn.diagonal().array() -= 1.0;
          if (dense_data) {
            V += Rn * Vn * Rn.transpose();
          } else {
            const MatrixXd RnVn = Rn * vn.asDiagonal();
            V += prod.symmetric_product_transpose(RnVn, Rn);
          }
          if (beta_centre) {
            // R_b0 = J C Bᵀ diag(q) + U diag(q / H) (direct response of β̂ at fixed x); var_b0 = c / q².
            MatrixXd Rb = prod.product_transpose(JCo, B);
            if (Hinv.size()) {
              MatrixXd U = MatrixXd::Zero(nobs, ne_obs);
              for (int64_t b = 0; b < nobs; ++b)
                for (int64_t p = 0; p < P; ++p) U(b, bbr.entry(b, p)) += bbr.dN(b, p);
              Rb += U * Hinv.topLeftCorner(ne_obs, ne_obs);
            } else {
              // H_ββ diagonal per entry (lite) or per-bin blocks (full): apply H⁻¹ column by column.
              for (int64_t b = 0; b < nobs; ++b)
                for (int64_t p = 0; p < (bbr.full ? P : 1); ++p) Rb(b, bbr.entry(b, p)) += beta_direct(b, p);
            }
            add_beta_centre_term(std::move(Rb), V);
            add_penalty_beta_centre_term(JCo, V);
          }
        }
      }
    } else {
      mapped_chi2_terms(r, V);
    }
    if (low_rank_done) return out;  // the chi2 is the last of the results
    dense_chi2(V, r, mapping.ndf_reduction(), out.chi2, out.ndf);
  }
  return out;
}

}  // namespace rabbit::postfit
