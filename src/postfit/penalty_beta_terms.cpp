// The regularisation penalty's part of the postfit histograms' β terms (docs/likelihood.md
// "Regularisation and β").
#include "penalty_beta_terms.hpp"

#include <cmath>
#include <vector>

#include "rabbit/model/regularizer.hpp"
#include "times_diagonal.hpp"

namespace rabbit::postfit {

using Eigen::MatrixXd;
using Eigen::VectorXd;

namespace {

// Σ_p ∂ν_b/∂β over the processes of entry e = entry(b, p) (all processes of the bin in lite mode).
double entry_response(const BBResponse& r, int64_t b, int64_t p) {
  return r.full ? r.dN(b, p) : r.dN.row(b).sum();
}

}  // namespace

VectorXd penalty_beta_row_sums(const Model& model, const VectorXd& nu, const BBResponse& r) {
  if (!needs_observables(model)) return {};
  const int64_t nobs = model.input->nbins, nbf = nu.size();
  // U·1 = Σ_e ∂ν/∂β_e per bin; each entry moves its own bin only, so (Uᵀ H_P U 1)_e = u_e (H_P U 1)_b.
  MatrixXd s = MatrixXd::Zero(nbf, 1);
  for (int64_t b = nobs; b < nbf; ++b) s(b, 0) = r.dN.row(b).sum();
  const VectorXd t = observable_penalty_hessian_product(model, nu, s).col(0);
  VectorXd rows = VectorXd::Zero(r.beta.size());
  for (int64_t b = nobs; b < nbf; ++b)
    for (int64_t p = 0; p < (r.full ? r.nproc : 1); ++p) rows(r.entry(b, p)) = entry_response(r, b, p) * t(b);
  return rows;
}

MatrixXd penalty_masked_beta_response(const Model& model, YieldModel& shard, const VectorXd& xi,
                                      const VectorXd& d1, const VectorXd& nu, const MatrixXd& J,
                                      const MatrixXd& JCo, const BBResponse& r) {
  const int64_t nobs = model.input->nbins, nbf = nu.size(), P = r.nproc;
  if (!needs_observables(model) || nbf == nobs) return MatrixXd(JCo.rows(), 0);
  // (JCo Jᵀ H_P)ᵀ = H_P (J JCoᵀ): one Hessian product per output instead of one per entry.
  const MatrixXd HM = observable_penalty_hessian_product(model, nu, J * JCo.transpose());
  VectorXd g = VectorXd::Zero(nbf);
  observable_penalty(model, nu, &g);
  // ∂U_be/∂x: U_be = Σ_p N_bp (gamma, normal-multiplicative: ν_b = Σ_p β_e N_bp) moves with x; the
  // normal-additive shift σ_b β_b does not.
  const bool multiplicative = model.bb_type != BBType::normal_additive;
  MatrixXd dN_dx;  // rows (b − nobs)·P + p
  if (multiplicative)
    dN_dx = times_diagonal(shard.process_yield_jacobian(xi, nobs, nbf, YieldModel::BetaMode::none), d1);
  std::vector<VectorXd> columns;
  for (int64_t b = nobs; b < nbf; ++b) {
    if (g(b) == 0.0 && HM.row(b).isZero(0.0)) continue;  // a bin the penalty does not read
    for (int64_t p = 0; p < (r.full ? P : 1); ++p) {
      const int64_t e = r.entry(b, p);
      const double u = entry_response(r, b, p);
      if (u == 0.0 || r.q(e) == 0.0) continue;  // β_e moves nothing, or β⁰_e is held (betamask)
      VectorXd col = u * HM.row(b).transpose();
      if (multiplicative && g(b) != 0.0) {
        VectorXd dU = VectorXd::Zero(JCo.cols());
        for (int64_t pp = 0; pp < P; ++pp)
          if ((r.full ? pp == p : true) && r.dN(b, pp) != 0.0)
            dU += dN_dx.row((b - nobs) * P + pp).transpose();
        col += g(b) * (JCo * dU);
      }
      const double var_beta0 = r.c(e) / (r.q(e) * r.q(e));
      columns.push_back(std::sqrt(std::max(var_beta0, 0.0)) * col);
    }
  }
  MatrixXd R(JCo.rows(), static_cast<int64_t>(columns.size()));
  for (size_t k = 0; k < columns.size(); ++k) R.col(static_cast<int64_t>(k)) = columns[k];
  return R;
}

}  // namespace rabbit::postfit
