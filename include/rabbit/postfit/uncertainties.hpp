#pragma once
// Postfit linear algebra of docs/output-format.md "EDM and covariance" to "Gaussian global impacts" and
// "Hessian-free mode": covariance and EDM from the dense Hessian, the Hessian-free CG variant, traditional
// impacts and the two kinds of global impacts. Pure functions of matrices and vectors, so they are tested on
// known matrices.
#include <Eigen/Core>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "rabbit/minimize/dense_linalg.hpp"

namespace rabbit::postfit {

struct CovarianceResult {
  Eigen::MatrixXd cov;  // npar × npar: H_FF⁻¹ on the floating block, prefit elsewhere
  double edm = 0.0;     // ½ g_Fᵀ H_FF⁻¹ g_F
};

/// docs/output-format.md "EDM and covariance". `floating` lists the floating x-indices; `prefit_cov` supplies
/// the frozen rows/columns. Throws NumericalError "Cholesky decomposition failed, Hessian is not
/// positive-definite". The inverse runs through `linalg` (cuSOLVER when the fit runs on a GPU).
CovarianceResult covariance_from_hessian(const Eigen::MatrixXd& hess, const Eigen::VectorXd& grad,
                                         const std::vector<int64_t>& floating,
                                         const Eigen::MatrixXd& prefit_cov,
                                         const DenseLinalg& linalg = default_linalg());

/// Which parameters are reported and how nuisances are grouped (docs/output-format.md "Traditional impacts",
/// "Global impacts").
struct ImpactLayout {
  std::vector<int64_t> reported;             // x-indices: POIs, then NOIs (npoi + npou + noiidx)
  std::vector<std::string> group_names;      // systgroups (then param-model groups)
  std::vector<std::vector<int64_t>> groups;  // x-indices of each group's members
  int64_t nstat = 0;                         // npoi + npou + nsystnoconstraint: the "stat" set S
  std::vector<int64_t> floating;             // floating x-indices
};

/// docs/output-format.md "Traditional impacts" per parameter: I[r, j] = C[r, j] / sqrt(C_jj) (0 where C_jj =
/// 0). Shape [nimp, npar].
Eigen::MatrixXd traditional_impacts(const Eigen::MatrixXd& cov, const std::vector<int64_t>& reported);

/// docs/output-format.md "Traditional impacts" grouped: columns [groups..., stat, (binByBinStat if
/// hess_fixed_beta given)]. hess is the profiled Hessian; hess_fixed_beta the Hessian with β held fixed
/// (nullptr: MC stat off).
Eigen::MatrixXd traditional_grouped_impacts(const Eigen::MatrixXd& cov, const Eigen::MatrixXd& hess,
                                            const Eigen::MatrixXd* hess_fixed_beta,
                                            const ImpactLayout& layout);

/// docs/output-format.md "Global impacts" per source: I[r, j] = sqrt(cw_j) C[r, j] for floating j (frozen and
/// cw = 0: exactly 0).
Eigen::MatrixXd global_impacts(const Eigen::MatrixXd& cov, const Eigen::VectorXd& constraint_weights,
                               const std::vector<bool>& frozen, const std::vector<int64_t>& reported);

/// docs/output-format.md "Global impacts", "Gaussian global impacts" grouped: columns [groups..., stat,
/// (binByBinStat, (binByBinStat<proc>...))], where the per-group values are quadrature sums of `per_source`;
/// `bb_sq` [nimp] and `bb_proc_sq` [nimp, nproc] (empty: absent) are the squared MC-stat parts; stat is
/// `stat_sq` when given (Gaussian kind) or the remainder C_rr − Σ I² − bb² (likelihood kind; clamped at 0).
Eigen::MatrixXd global_grouped_impacts(const Eigen::MatrixXd& cov, const Eigen::MatrixXd& per_source,
                                       const ImpactLayout& layout, const Eigen::VectorXd* bb_sq,
                                       const Eigen::MatrixXd* bb_proc_sq, const Eigen::VectorXd* stat_sq);
/// The same for any rows (the bins of a histogram, docs/output-format.md "Global impacts on histogram
/// bins"): `total_var` [rows] takes the place of C_rr.
Eigen::MatrixXd global_grouped_impacts(const Eigen::VectorXd& total_var, const Eigen::MatrixXd& per_source,
                                       const ImpactLayout& layout, const Eigen::VectorXd* bb_sq,
                                       const Eigen::MatrixXd* bb_proc_sq, const Eigen::VectorXd* stat_sq);

/// Chi-square survival function P(χ²_ndf > x) (regularised upper incomplete gamma).
double chi2_survival(double x, double ndf);

}  // namespace rabbit::postfit
