#include "rabbit/postfit/uncertainties.hpp"

#include <fmt/format.h>

#include <Eigen/Cholesky>
#include <Eigen/LU>
#include <algorithm>
#include <cmath>

#include "rabbit/core/error.hpp"
#include "rabbit/minimize/spd_inverse.hpp"

namespace rabbit::postfit {
namespace {

Eigen::MatrixXd sub(const Eigen::MatrixXd& m, const std::vector<int64_t>& rows,
                    const std::vector<int64_t>& cols) {
  Eigen::MatrixXd out(rows.size(), cols.size());
  for (size_t i = 0; i < rows.size(); ++i)
    for (size_t j = 0; j < cols.size(); ++j) out(i, j) = m(rows[i], cols[j]);
  return out;
}

// Inverse of a symmetric positive-definite matrix; throws NumericalError if it is not.
Eigen::MatrixXd spd_inverse(const Eigen::MatrixXd& a, const char* what) {
  Eigen::MatrixXd inverse;
  if (!rabbit::spd_inverse(a, inverse)) throw NumericalError(what);
  return inverse;
}

}  // namespace

CovarianceResult covariance_from_hessian(const Eigen::MatrixXd& hess, const Eigen::VectorXd& grad,
                                         const std::vector<int64_t>& floating,
                                         const Eigen::MatrixXd& prefit_cov, const DenseLinalg& linalg) {
  const int64_t nf = static_cast<int64_t>(floating.size());
  Eigen::MatrixXd hff = sub(hess, floating, floating);
  Eigen::VectorXd gf(nf);
  for (int64_t i = 0; i < nf; ++i) gf(i) = grad(floating[i]);
  // H = L Lᵀ; C = L⁻ᵀ L⁻¹ and EDM = ½ |L⁻¹ g|².
  Eigen::MatrixXd cff;
  Eigen::VectorXd lg = gf;
  if (!linalg.spd_inverse(hff, cff, &lg))
    throw NumericalError("Cholesky decomposition failed, Hessian is not positive-definite");
  CovarianceResult out;
  out.edm = 0.5 * lg.squaredNorm();
  out.cov = prefit_cov;
  for (int64_t i = 0; i < nf; ++i)
    for (int64_t j = 0; j < nf; ++j) out.cov(floating[i], floating[j]) = cff(i, j);
  return out;
}

Eigen::MatrixXd traditional_impacts(const Eigen::MatrixXd& cov, const std::vector<int64_t>& reported) {
  const int64_t npar = cov.rows();
  Eigen::MatrixXd out(reported.size(), npar);
  for (size_t r = 0; r < reported.size(); ++r)
    for (int64_t j = 0; j < npar; ++j) {
      double cjj = cov(j, j);
      out(r, j) = cjj > 0.0 ? cov(reported[r], j) / std::sqrt(cjj) : 0.0;
    }
  return out;
}

Eigen::MatrixXd traditional_grouped_impacts(const Eigen::MatrixXd& cov, const Eigen::MatrixXd& hess,
                                            const Eigen::MatrixXd* hess_fixed_beta,
                                            const ImpactLayout& layout) {
  const size_t ng = layout.groups.size();
  const size_t ncol = ng + 1 + (hess_fixed_beta ? 1 : 0);
  Eigen::MatrixXd out = Eigen::MatrixXd::Zero(layout.reported.size(), ncol);
  std::vector<bool> is_floating(cov.rows(), false);
  for (auto i : layout.floating) is_floating[i] = true;

  // Groups: sqrt(cᵀ C_GG⁻¹ c), over the floating members (frozen members have C = 0 off-diagonal).
  for (size_t g = 0; g < ng; ++g) {
    std::vector<int64_t> members;
    for (auto j : layout.groups[g])
      if (is_floating[j]) members.push_back(j);
    if (members.empty()) continue;
    Eigen::MatrixXd cgg = sub(cov, members, members);
    Eigen::LDLT<Eigen::MatrixXd> ldlt(cgg);
    for (size_t r = 0; r < layout.reported.size(); ++r) {
      Eigen::VectorXd c(members.size());
      for (size_t k = 0; k < members.size(); ++k) c(k) = cov(layout.reported[r], members[k]);
      double v = c.dot(ldlt.solve(c));
      out(r, g) = std::sqrt(std::max(0.0, v));
    }
  }

  // stat: the inverse of the Hessian restricted to S (param-model parameters and unconstrained
  // nuisances, floating only); with MC stat on, the β-fixed Hessian gives stat and the difference
  // binByBinStat.
  std::vector<int64_t> stat_set;
  for (int64_t i = 0; i < layout.nstat; ++i)
    if (is_floating[i]) stat_set.push_back(i);
  if (!stat_set.empty()) {
    Eigen::MatrixXd c_stat =
        spd_inverse(sub(hess, stat_set, stat_set),
                    "Cholesky decomposition failed for the stat impacts, Hessian block is not "
                    "positive-definite");
    Eigen::MatrixXd c_stat_fixed;
    if (hess_fixed_beta)
      c_stat_fixed =
          spd_inverse(sub(*hess_fixed_beta, stat_set, stat_set),
                      "Cholesky decomposition failed for the stat impacts, beta-fixed Hessian block is not "
                      "positive-definite");
    for (size_t r = 0; r < layout.reported.size(); ++r) {
      auto it = std::find(stat_set.begin(), stat_set.end(), layout.reported[r]);
      if (it == stat_set.end()) continue;  // a constrained NOI (or frozen) lies outside S: 0
      int64_t k = it - stat_set.begin();
      if (hess_fixed_beta) {
        out(r, ng) = std::sqrt(std::max(0.0, c_stat_fixed(k, k)));
        out(r, ng + 1) = std::sqrt(std::max(0.0, c_stat(k, k) - c_stat_fixed(k, k)));
      } else {
        out(r, ng) = std::sqrt(std::max(0.0, c_stat(k, k)));
      }
    }
  }
  return out;
}

Eigen::MatrixXd global_impacts(const Eigen::MatrixXd& cov, const Eigen::VectorXd& constraint_weights,
                               const std::vector<bool>& frozen, const std::vector<int64_t>& reported) {
  const int64_t npar = cov.rows();
  Eigen::MatrixXd out = Eigen::MatrixXd::Zero(reported.size(), npar);
  for (size_t r = 0; r < reported.size(); ++r)
    for (int64_t j = 0; j < npar; ++j) {
      double cw = constraint_weights(j);
      if (frozen[j] || !(cw > 0.0)) continue;
      out(r, j) = std::sqrt(cw) * cov(j, reported[r]);
    }
  return out;
}

Eigen::MatrixXd global_grouped_impacts(const Eigen::MatrixXd& cov, const Eigen::MatrixXd& per_source,
                                       const ImpactLayout& layout, const Eigen::VectorXd* bb_sq,
                                       const Eigen::MatrixXd* bb_proc_sq, const Eigen::VectorXd* stat_sq) {
  Eigen::VectorXd total_var(layout.reported.size());
  for (size_t r = 0; r < layout.reported.size(); ++r)
    total_var(r) = cov(layout.reported[r], layout.reported[r]);
  return global_grouped_impacts(total_var, per_source, layout, bb_sq, bb_proc_sq, stat_sq);
}

Eigen::MatrixXd global_grouped_impacts(const Eigen::VectorXd& total_var, const Eigen::MatrixXd& per_source,
                                       const ImpactLayout& layout, const Eigen::VectorXd* bb_sq,
                                       const Eigen::MatrixXd* bb_proc_sq, const Eigen::VectorXd* stat_sq) {
  const size_t ng = layout.groups.size();
  const int64_t nproc_cols = bb_proc_sq ? bb_proc_sq->cols() : 0;
  const size_t ncol = ng + 1 + (bb_sq ? 1 + nproc_cols : 0);
  Eigen::MatrixXd out = Eigen::MatrixXd::Zero(per_source.rows(), ncol);
  for (int64_t r = 0; r < per_source.rows(); ++r) {
    for (size_t g = 0; g < ng; ++g) {
      double s = 0.0;
      for (auto j : layout.groups[g]) s += per_source(r, j) * per_source(r, j);
      out(r, g) = std::sqrt(s);
    }
    double bb = bb_sq ? (*bb_sq)(r) : 0.0;
    if (stat_sq) {
      out(r, ng) = std::sqrt(std::max(0.0, (*stat_sq)(r)));
    } else {
      double rem = total_var(r) - per_source.row(r).squaredNorm() - bb;
      out(r, ng) = std::sqrt(std::max(0.0, rem));  // guard: upstream gives NaN for round-off negatives
    }
    if (bb_sq) {
      out(r, ng + 1) = std::sqrt(std::max(0.0, bb));
      for (int64_t p = 0; p < nproc_cols; ++p)
        out(r, ng + 2 + p) = std::sqrt(std::max(0.0, (*bb_proc_sq)(r, p)));
    }
  }
  return out;
}

namespace {
// Regularised lower incomplete gamma P(a, x) by series, upper Q by continued fraction (Numerical
// Recipes' split at x < a + 1).
double gamma_p_series(double a, double x) {
  double sum = 1.0 / a, term = sum;
  for (int n = 1; n < 10000; ++n) {
    term *= x / (a + n);
    sum += term;
    if (std::abs(term) < std::abs(sum) * 1e-16) break;
  }
  return sum * std::exp(-x + a * std::log(x) - std::lgamma(a));
}
double gamma_q_fraction(double a, double x) {
  const double tiny = 1e-300;
  double b = x + 1.0 - a, c = 1.0 / tiny, d = 1.0 / b, h = d;
  for (int i = 1; i < 10000; ++i) {
    double an = -i * (i - a);
    b += 2.0;
    d = an * d + b;
    if (std::abs(d) < tiny) d = tiny;
    c = b + an / c;
    if (std::abs(c) < tiny) c = tiny;
    d = 1.0 / d;
    double del = d * c;
    h *= del;
    if (std::abs(del - 1.0) < 1e-16) break;
  }
  return std::exp(-x + a * std::log(x) - std::lgamma(a)) * h;
}
}  // namespace

double chi2_survival(double x, double ndf) {
  if (std::isnan(x) || ndf <= 0) return std::nan("");
  if (x <= 0) return 1.0;
  double a = 0.5 * ndf, z = 0.5 * x;
  return z < a + 1.0 ? 1.0 - gamma_p_series(a, z) : gamma_q_fraction(a, z);
}

}  // namespace rabbit::postfit
