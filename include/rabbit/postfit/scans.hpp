#pragma once
// Profile-likelihood scans and contours (docs/output-format.md "Likelihood scans and contours"), and the
// restricted objective they (and the main fit) minimise: the floating coordinates only, the others held
// fixed.
#include <Eigen/Core>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "rabbit/minimize/objective.hpp"

namespace rabbit::postfit {

/// The objective restricted to the coordinates `floating`; the others stay at `base`.
class RestrictedObjective : public Objective {
 public:
  RestrictedObjective(Objective& full, std::vector<int64_t> floating, Eigen::VectorXd base);
  int64_t size() const override { return static_cast<int64_t>(floating_.size()); }
  double value(const Eigen::VectorXd& y) override;
  double value_grad(const Eigen::VectorXd& y, Eigen::VectorXd& grad) override;
  double value_grad_hvp(const Eigen::VectorXd& y, const Eigen::MatrixXd& V, Eigen::VectorXd& grad,
                        Eigen::MatrixXd& HV) override;
  double value_grad_hess(const Eigen::VectorXd& y, Eigen::VectorXd& grad, Eigen::MatrixXd& hess) override;
  Eigen::VectorXd expand(const Eigen::VectorXd& y) const;
  Eigen::VectorXd restrict(const Eigen::VectorXd& x) const;
  Eigen::VectorXd& base() { return base_; }

  /// Hands over the full-space gradient and Hessian of the last value_grad_hess call if it was
  /// taken at the full point x (bit-exact), so that the covariance reuses the Hessian that
  /// certified the fit; false (and nothing moved) otherwise. The cache is emptied either way.
  bool take_full_hessian(const Eigen::VectorXd& x, Eigen::VectorXd& grad, Eigen::MatrixXd& hess);

 private:
  Objective& full_;
  std::vector<int64_t> floating_;
  Eigen::VectorXd base_;
  Eigen::VectorXd cached_x_, cached_grad_;
  Eigen::MatrixXd cached_hess_;
};

/// Minimises `objective` over the coordinates `floating` starting from x; returns the full vector.
/// Supplied by the caller (the CLI wires the native minimizer with its options).
using ProfileMinimizer = std::function<Eigen::VectorXd(
    Objective& objective, const std::vector<int64_t>& floating, const Eigen::VectorXd& x)>;

struct Scan1D {
  std::vector<double> points;  // ascending x values, 2·floor(P/2)+1
  std::vector<double> dnll;    // L − L_best (ΔNLL); 0 at the centre
};

/// docs/output-format.md "Likelihood scans and contours" 1D scan of parameter p around xhat: offsets
/// linspace(0, range, floor(P/2)+1)·sigma, walked outwards on each side from the previous point; p fixed, the
/// other floating ones profiled.
Scan1D scan_1d(Objective& objective, const ProfileMinimizer& minimizer, const std::vector<int64_t>& floating,
               const Eigen::VectorXd& xhat, int64_t p, double sigma, double range, int64_t points);

struct ContourPoint {
  Eigen::VectorXd displacement;  // x* − xhat, all parameters; NaN if the solve failed
  bool success = false;
};

/// docs/output-format.md "Likelihood scans and contours" contour at level c (Δ(2NLL) = c²) on side s = ±1:
/// the point that extremises x_p on the contour is where the profile likelihood in x_p reaches L_min + c²/2;
/// found by a safeguarded secant/bisection search on x_p, each step a profile fit. cov_column = C[:, p] gives
/// the Gaussian start x_hat + s·c·C[:,p]/sqrt(C_pp). The point is accepted when its profile ΔNLL is within
/// tolerance·max(1, c²/2) of c²/2 (--asymImpactsTol; 1e-6 for --contourScan).
ContourPoint contour_point(Objective& objective, const ProfileMinimizer& minimizer,
                           const std::vector<int64_t>& floating, const Eigen::VectorXd& xhat, double lmin,
                           int64_t p, const Eigen::VectorXd& cov_column, double level, int side,
                           double tolerance = 1e-6);

}  // namespace rabbit::postfit
