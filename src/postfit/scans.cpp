#include "rabbit/postfit/scans.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "contour_root.hpp"
#include "rabbit/core/logging.hpp"

namespace rabbit::postfit {

RestrictedObjective::RestrictedObjective(Objective& full, std::vector<int64_t> floating, Eigen::VectorXd base)
    : full_(full), floating_(std::move(floating)), base_(std::move(base)) {
  set_hvp_batch(full.hvp_batch());
}

Eigen::VectorXd RestrictedObjective::expand(const Eigen::VectorXd& y) const {
  Eigen::VectorXd x = base_;
  for (size_t i = 0; i < floating_.size(); ++i) x(floating_[i]) = y(i);
  return x;
}

Eigen::VectorXd RestrictedObjective::restrict(const Eigen::VectorXd& x) const {
  Eigen::VectorXd y(floating_.size());
  for (size_t i = 0; i < floating_.size(); ++i) y(i) = x(floating_[i]);
  return y;
}

double RestrictedObjective::value(const Eigen::VectorXd& y) {
  return full_.value(expand(y));
}

double RestrictedObjective::value_grad(const Eigen::VectorXd& y, Eigen::VectorXd& grad) {
  Eigen::VectorXd g;
  double f = full_.value_grad(expand(y), g);
  grad = restrict(g);
  return f;
}

double RestrictedObjective::value_grad_hvp(const Eigen::VectorXd& y, const Eigen::MatrixXd& V,
                                           Eigen::VectorXd& grad, Eigen::MatrixXd& HV) {
  Eigen::MatrixXd Vfull = Eigen::MatrixXd::Zero(base_.size(), V.cols());
  for (size_t i = 0; i < floating_.size(); ++i) Vfull.row(floating_[i]) = V.row(i);
  Eigen::VectorXd g;
  Eigen::MatrixXd hv;
  double f = full_.value_grad_hvp(expand(y), Vfull, g, hv);
  grad = restrict(g);
  HV.resize(floating_.size(), V.cols());
  for (size_t i = 0; i < floating_.size(); ++i) HV.row(i) = hv.row(floating_[i]);
  return f;
}

double RestrictedObjective::value_grad_hess(const Eigen::VectorXd& y, Eigen::VectorXd& grad,
                                            Eigen::MatrixXd& hess) {
  cached_hess_.resize(0, 0);  // the old one is no longer needed: free it before the new one
  Eigen::VectorXd x = expand(y);
  double f = full_.value_grad_hess(x, cached_grad_, cached_hess_);
  grad = restrict(cached_grad_);
  const int64_t n = size();
  hess.resize(n, n);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) hess(i, j) = cached_hess_(floating_[i], floating_[j]);
  cached_x_ = std::move(x);
  return f;
}

bool RestrictedObjective::take_full_hessian(const Eigen::VectorXd& x, Eigen::VectorXd& grad,
                                            Eigen::MatrixXd& hess) {
  const bool hit = cached_hess_.size() > 0 && cached_x_.size() == x.size() && cached_x_ == x;
  if (hit) {
    grad = std::move(cached_grad_);
    hess = std::move(cached_hess_);
  }
  cached_hess_.resize(0, 0);
  cached_grad_.resize(0);
  cached_x_.resize(0);
  return hit;
}

Scan1D scan_1d(Objective& objective, const ProfileMinimizer& minimizer, const std::vector<int64_t>& floating,
               const Eigen::VectorXd& xhat, int64_t p, double sigma, double range, int64_t points) {
  const int64_t half = points / 2;
  std::vector<int64_t> others;
  for (auto i : floating)
    if (i != p) others.push_back(i);
  const double lbest = objective.value(xhat);
  Scan1D out;
  out.points.assign(2 * half + 1, 0.0);
  out.dnll.assign(2 * half + 1, std::numeric_limits<double>::quiet_NaN());
  out.points[half] = xhat(p);
  out.dnll[half] = 0.0;
  for (int side : {-1, 1}) {
    Eigen::VectorXd x = xhat;
    for (int64_t k = 1; k <= half; ++k) {
      double offset = half > 0 ? range * static_cast<double>(k) / static_cast<double>(half) * sigma : 0.0;
      x(p) = xhat(p) + side * offset;
      log().debug("Now at i={} x={}", half + side * k, x(p));
      x = minimizer(objective, others, x);
      const int64_t idx = half + side * k;
      out.points[idx] = x(p);
      out.dnll[idx] = objective.value(x) - lbest;
    }
  }
  return out;
}

ContourPoint contour_point(Objective& objective, const ProfileMinimizer& minimizer,
                           const std::vector<int64_t>& floating, const Eigen::VectorXd& xhat, double lmin,
                           int64_t p, const Eigen::VectorXd& cov_column, double level, int side,
                           double tolerance) {
  std::vector<int64_t> others;
  for (auto i : floating)
    if (i != p) others.push_back(i);
  const double target = 0.5 * level * level;
  const double sigma = std::sqrt(cov_column(p));
  ContourPoint out;
  out.displacement = Eigen::VectorXd::Constant(xhat.size(), std::numeric_limits<double>::quiet_NaN());
  if (!(sigma > 0.0)) return out;

  // g(t) = profile ΔNLL at x_p = xhat_p + t - target, with t the signed displacement (t·side > 0).
  Eigen::VectorXd warm = xhat;
  auto profile_at = [&](double t, Eigen::VectorXd& xsol) {
    Eigen::VectorXd start = xhat + (t / cov_column(p)) * cov_column;  // Gaussian guess along C[:,p]
    // Prefer the last solution when it is closer to this point than the Gaussian guess.
    if (std::abs(warm(p) - (xhat(p) + t)) < std::abs(t) * 0.5)
      start = warm + (xhat(p) + t - warm(p)) / cov_column(p) * cov_column;
    start(p) = xhat(p) + t;
    xsol = minimizer(objective, others, start);
    warm = xsol;
    return objective.value(xsol) - lmin - target;
  };

  RootBracket bracket;
  if (!widen_bracket(profile_at, -target, side * level * sigma, bracket)) return out;
  const Root root =
      illinois_root(profile_at, bracket, std::min(1e-10, tolerance) * std::max(1.0, target),
                    [&](double t_lo, double t_hi) { return std::abs(t_hi - t_lo) < 1e-12 * sigma; });
  if (!root.finite || std::abs(root.g) > tolerance * std::max(1.0, target)) return out;
  const Eigen::VectorXd& xbest = root.x;
  out.displacement = xbest - xhat;
  out.success = true;
  return out;
}

}  // namespace rabbit::postfit
