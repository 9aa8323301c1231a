// The β response of the expected yields (bb_response.hpp): what histograms.cpp and the histogram impacts
// share, docs/likelihood.md "Applying β to the yields".
#include "bb_response.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "rabbit/model/bb_statistics.hpp"
#include "times_diagonal.hpp"

namespace rabbit::postfit {

using Eigen::MatrixXd;
using Eigen::VectorXd;
using Mode = YieldModel::BetaMode;

BBResponse bb_response(const Model& model, YieldModel& shard, Fitter& fitter, const VectorXd& x,
                       const VectorXd& xi, bool prefit) {
  const FitInputData& in = *model.input;
  BBResponse r;
  r.full = shard.bb_full();
  r.nproc = in.nproc;
  const int64_t nbf = in.nbinsfull, P = in.nproc;
  MatrixXd N;
  VectorXd nu0;
  shard.expected_yields(xi, 0, nbf, Mode::none, &nu0, &N);
  r.beta = shard.stored_beta();
  if (!prefit) {
    VectorXd bhat = fitter.profiled_beta(x);
    r.beta.head(bhat.size()) = bhat;
  }
  const BBStatistics stats(model);
  const VectorXd& k = stats.kstat();
  const VectorXd& beta0 = shard.beta_centres();
  const auto& mask = stats.mask();
  const int64_t ne = r.beta.size();
  r.c = VectorXd::Zero(ne);
  r.q = VectorXd::Zero(ne);
  for (int64_t e = 0; e < ne; ++e) {
    r.c(e) = stats.curvature(e, r.beta(e), beta0(e));
    switch (stats.kind()) {
      case likelihood::BBKind::gamma:
        if (!mask[e]) r.q(e) = k(e) / r.beta(e);
        break;
      case likelihood::BBKind::normal_multiplicative:
        if (!mask[e]) r.q(e) = k(e);
        break;
      default:
        r.q(e) = 1.0;
        break;
    }
  }
  // Zero-variance processes (lite): sumw2 = 0 entries are not scaled by β.
  auto zero_var = [&](int64_t b, int64_t p) {
    if (in.sumw_per_bin || r.full) return false;
    return in.sumw2[b * P + p] == 0.0;
  };
  r.dN = MatrixXd::Zero(nbf, P);
  const bool additive = model.bb_type == BBType::normal_additive;
  for (int64_t b = 0; b < nbf; ++b) {
    double A = 0.0, sigma2 = 0.0;
    for (int64_t p = 0; p < P; ++p) {
      if (!zero_var(b, p)) A += N(b, p);
      sigma2 += in.sumw_per_bin ? 0.0 : in.sumw2[b * P + p];
    }
    if (in.sumw_per_bin) sigma2 = in.sumw2[b];
    const double Asafe = A > 0.0 ? A : 1.0;
    for (int64_t p = 0; p < P; ++p) {
      const int64_t e = r.entry(b, p);
      if (additive) {
        if (r.full)
          r.dN(b, p) = std::sqrt(in.sumw2[b * P + p]);
        else if (in.sumw_per_bin)
          r.dN(b, p) = std::sqrt(sigma2) * N(b, p) / (nu0(b) != 0.0 ? nu0(b) : 1.0);
        else
          r.dN(b, p) = zero_var(b, p) ? 0.0 : std::sqrt(sigma2) * N(b, p) / Asafe;
      } else {
        if (mask[e] || zero_var(b, p)) continue;
        r.dN(b, p) = N(b, p);
      }
    }
  }
  return r;
}

MappingJacobian process_beta_rows(const BBResponse& r) {
  const int64_t nbf = r.dN.rows(), P = r.nproc;
  std::vector<Eigen::Triplet<double>> t;
  for (int64_t b = 0; b < nbf; ++b)
    for (int64_t p = 0; p < P; ++p)
      if (r.dN(b, p) != 0.0) t.emplace_back(b * P + p, r.entry(b, p), r.dN(b, p));
  MappingJacobian U(nbf * P, r.beta.size());
  U.setFromTriplets(t.begin(), t.end());
  return U;
}

// d β̂ / dx [nentries_observed × npar]: analytic where the yield model offers it; else 2·npar profiles.
MatrixXd profiled_beta_jacobian(const Model& model, YieldModel& shard, Fitter& fitter, const VectorXd& x,
                                const VectorXd& xi, const VectorXd& d1) {
  MatrixXd D = shard.profiled_beta_jacobian(xi, 0, model.input->nbins);
  if (D.size() > 0 || D.cols() == x.size()) return times_diagonal(std::move(D), d1);
  VectorXd b0 = fitter.profiled_beta(x);
  MatrixXd B = MatrixXd::Zero(b0.size(), x.size());
  for (int64_t j = 0; j < x.size(); ++j) {
    if (d1(j) == 0.0) continue;  // frozen: β̂ does not move with it in the fit
    const double h = 1e-5 * std::max(1.0, std::abs(x(j)));
    VectorXd xp = x, xm = x;
    xp(j) += h;
    xm(j) -= h;
    B.col(j) = (fitter.profiled_beta(xp) - fitter.profiled_beta(xm)) / (2.0 * h);
  }
  return B;
}

}  // namespace rabbit::postfit
