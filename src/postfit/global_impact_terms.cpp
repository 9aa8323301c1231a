#include "rabbit/postfit/global_impact_terms.hpp"

#include "rabbit/model/bb_statistics.hpp"
#include "times_diagonal.hpp"

namespace rabbit::postfit {

using Eigen::MatrixXd;
using Eigen::VectorXd;

McStatImpacts mc_stat_global_impacts(const Model& model, Fitter& fitter, YieldModel& c, const VectorXd& x,
                                     const MatrixXd& cov, const std::vector<int64_t>& reported, bool bb_full,
                                     int64_t nproc) {
  const int64_t nimp = static_cast<int64_t>(reported.size());
  const VectorXd beta_hat = fitter.profiled_beta(x);
  const BBStatistics stats(model);
  const VectorXd& beta0 = c.beta_centres();
  const int64_t ne = beta_hat.size();
  // The constraint curvature per entry; masked entries are held here for every type (normal-additive
  // included, unlike its likelihood, docs/likelihood.md "BB constraint term").
  VectorXd s2(ne);
  for (int64_t e = 0; e < ne; ++e) s2(e) = stats.mask()[e] ? 0.0 : stats.curvature(e, beta_hat(e), beta0(e));
  McStatImpacts out;
  out.total_sq = VectorXd::Zero(nimp);
  if (bb_full) out.per_process_sq = MatrixXd::Zero(nimp, nproc);
  VectorXd xis, d1, d2;
  model.parameters.transform(x, xis, d1, d2);
  MatrixXd dbeta_dx = c.profiled_beta_jacobian(xis, 0, model.input->nbins);
  if (dbeta_dx.size() > 0) dbeta_dx = dbeta_dx * d1.asDiagonal();
  for (int64_t r = 0; r < nimp; ++r) {
    VectorXd w = cov.col(reported[r]);
    const double scale = w.lpNorm<Eigen::Infinity>();
    if (!(scale > 0.0)) continue;
    VectorXd db;
    if (dbeta_dx.size() > 0) {
      db = dbeta_dx * w;
    } else {
      const double h = 1e-4 / scale;
      db = (fitter.profiled_beta(x + h * w) - fitter.profiled_beta(x - h * w)) / (2.0 * h);
    }
    VectorXd a2 = s2.array() * db.array().square();
    out.total_sq(r) = a2.sum();
    if (bb_full)
      for (int64_t e = 0; e < ne; ++e) out.per_process_sq(r, e % nproc) += a2(e);
  }
  return out;
}

VectorXd gaussian_stat_impacts_sq(const Model& model, const FitInputData& input, Fitter& fitter,
                                  YieldModel& c, const VectorXd& x, const MatrixXd& cov,
                                  const std::vector<int64_t>& reported) {
  const int64_t nimp = static_cast<int64_t>(reported.size());
  VectorXd xis, d1, d2;
  model.parameters.transform(x, xis, d1, d2);
  MatrixXd J = times_diagonal(c.yield_jacobian(xis, 0, input.nbins, YieldModel::BetaMode::profiled), d1);
  VectorXd nu;
  c.expected_yields(xis, 0, input.nbins, YieldModel::BetaMode::profiled, &nu);
  const VectorXd& n = fitter.observed();
  const VectorXd& var = fitter.observed_variances();
  VectorXd stat_sq(nimp);
  for (int64_t r = 0; r < nimp; ++r) {
    VectorXd jw = J * cov.col(reported[r]);
    double s = 0.0;
    switch (model.options.likelihood) {
      case DataLikelihood::poisson:
        for (int64_t i = 0; i < jw.size(); ++i) s += jw(i) * jw(i) * n(i) / (nu(i) * nu(i));
        break;
      case DataLikelihood::chisq:
        for (int64_t i = 0; i < jw.size(); ++i) {
          double v = var.size() ? var(i) : n(i);
          s += jw(i) * jw(i) / v;
        }
        break;
      case DataLikelihood::covariance:
        if (input.data_cov_inv) {
          s = jw.dot(*input.data_cov_inv * jw);
        } else {
          for (int64_t i = 0; i < jw.size(); ++i) {
            double v = var.size() ? var(i) : n(i);
            s += jw(i) * jw(i) / v;
          }
        }
        break;
    }
    stat_sq(r) = s;
  }
  return stat_sq;
}

}  // namespace rabbit::postfit
