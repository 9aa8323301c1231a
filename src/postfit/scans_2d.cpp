#include "rabbit/postfit/scans_2d.hpp"

#include <Eigen/LU>
#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include "contour_root.hpp"
#include "rabbit/core/logging.hpp"

namespace rabbit::postfit {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// numpy.linspace(start, stop, n): start + k·step, the last value exactly stop (the grid values written
// match upstream's to the last bit).
std::vector<double> linspace(double start, double stop, int64_t n) {
  std::vector<double> v(n, start);
  if (n > 1) {
    const double step = (stop - start) / static_cast<double>(n - 1);
    for (int64_t k = 0; k < n; ++k) v[k] = static_cast<double>(k) * step + start;
    v[n - 1] = stop;
  }
  return v;
}

std::vector<int64_t> without(const std::vector<int64_t>& floating, int64_t p, int64_t q) {
  std::vector<int64_t> out;
  for (auto i : floating)
    if (i != p && i != q) out.push_back(i);
  return out;
}

}  // namespace

std::vector<std::pair<int64_t, int64_t>> spiral_order(int64_t points) {
  // The walk of rabbit's nll_scan2D (docs/output-format.md "Likelihood scans and contours"): ring r = 1, 2,
  // ... around the centre, each ring entered from the corner of the previous one.
  const int64_t centre = (points + 1) / 2 - 1;
  std::vector<std::pair<int64_t, int64_t>> order;
  int64_t dcol = -1, drow = 0, i = 0, j = 0, r = 1;
  while (r - 1 < centre) {
    if (i == r && drow == 1) {
      drow = 0;
      dcol = 1;
    }
    if (j == r && dcol == 1) {
      dcol = 0;
      drow = -1;
    } else if (i == -r && drow == -1) {
      dcol = -1;
      drow = 0;
    } else if (j == -r && dcol == -1) {
      drow = 1;
      dcol = 0;
    }
    i += drow;
    j += dcol;
    if (i == -r && j == -r) ++r;
    order.emplace_back(centre - i, centre + j);
  }
  return order;
}

Scan2D scan_2d(Objective& objective, const ProfileMinimizer& minimizer, const std::vector<int64_t>& floating,
               const Eigen::VectorXd& xhat, int64_t p, int64_t q, double sigma_p, double sigma_q,
               double range, int64_t points) {
  const auto offsets = linspace(-range, range, points);
  Scan2D out;
  for (double d : offsets) {
    out.x.push_back(xhat(p) + d * sigma_p);
    out.y.push_back(xhat(q) + d * sigma_q);
  }
  const int64_t centre = (points + 1) / 2 - 1;
  out.dnll.assign(points * points, kNaN);
  out.dnll[centre * points + centre] = 0.0;
  const auto others = without(floating, p, q);
  const double lbest = objective.value(xhat);
  Eigen::VectorXd x = xhat;  // the previous grid point's solution: the next one's start
  for (const auto& [ix, iy] : spiral_order(points)) {
    log().debug("Now at (ix,iy) = ({},{}) (x,y)= ({},{})", ix, iy, out.x[ix], out.y[iy]);
    x(p) = out.x[ix];
    x(q) = out.y[iy];
    x = minimizer(objective, others, x);
    out.dnll[ix * points + iy] = objective.value(x) - lbest;
  }
  return out;
}

Contour2D contour_2d(Objective& objective, const ProfileMinimizer& minimizer,
                     const std::vector<int64_t>& floating, const Eigen::VectorXd& xhat, double lmin,
                     int64_t p, int64_t q, const Eigen::MatrixXd& cov_pq, double level, int64_t angles) {
  const auto others = without(floating, p, q);
  const double target = 0.5 * level * level;
  const double sp = std::sqrt(cov_pq(p, 0)), sq = std::sqrt(cov_pq(q, 1));
  Eigen::Matrix2d c2;
  c2 << cov_pq(p, 0), cov_pq(p, 1), cov_pq(q, 0), cov_pq(q, 1);
  // Gaussian regression of all parameters on (p, q): x − xhat ≈ C[:, pq] C_pq⁻¹ (δp, δq).
  const Eigen::MatrixXd gain = cov_pq * c2.inverse();

  Contour2D out;
  Eigen::VectorXd warm = xhat;  // the last profile solution (this ray's or the previous ray's)
  for (int64_t k = 0; k < angles; ++k) {
    const double theta = 2.0 * std::numbers::pi * static_cast<double>(k) / static_cast<double>(angles);
    const Eigen::Vector2d dir(sp * std::cos(theta), sq * std::sin(theta));
    out.angle.push_back(theta);
    out.xp.push_back(kNaN);
    out.xq.push_back(kNaN);
    out.dnll2.push_back(kNaN);
    out.success.push_back(false);
    if (!(sp > 0.0) || !(sq > 0.0)) continue;
    log().debug("Now at {} with angle={}", k, theta);

    // g(t) = profile ΔNLL at xhat_pq + t·dir − target.
    auto profile_at = [&](double t, Eigen::VectorXd& xsol) {
      const Eigen::Vector2d delta = t * dir;
      const Eigen::Vector2d moved(xhat(p) + delta(0) - warm(p), xhat(q) + delta(1) - warm(q));
      Eigen::VectorXd start = warm + gain * moved;
      start(p) = xhat(p) + delta(0);
      start(q) = xhat(q) + delta(1);
      xsol = minimizer(objective, others, start);
      warm = xsol;
      return objective.value(xsol) - lmin - target;
    };

    RootBracket bracket;
    if (!widen_bracket(profile_at, -target, level, bracket)) continue;  // t = level: exact if Gaussian
    const double g_tolerance = 1e-10 * std::max(1.0, target);
    Root root{true, bracket.g_hi, bracket.x_hi};
    if (std::abs(bracket.g_hi) >= g_tolerance)
      root = illinois_root(profile_at, bracket, g_tolerance, [](double t_lo, double t_hi) {
        return std::abs(t_hi - t_lo) < 1e-12 * std::max(1.0, t_hi);
      });
    if (!root.finite || std::abs(root.g) > 1e-8 * std::max(1.0, target)) continue;
    const Eigen::VectorXd& xbest = root.x;
    const double gbest = root.g;
    out.xp.back() = xbest(p);
    out.xq.back() = xbest(q);
    out.dnll2.back() = 2.0 * (gbest + target);
    out.success.back() = true;
    warm = xbest;
  }
  return out;
}

}  // namespace rabbit::postfit
