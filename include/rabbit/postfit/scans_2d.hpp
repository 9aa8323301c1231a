#pragma once
// Two-parameter profile-likelihood scans and contours (docs/output-format.md "Likelihood scans and
// contours"): --scan2D P1 P2 on a square grid, --contourScan2D P1 P2 as points of the 2D contour.
#include <Eigen/Core>
#include <cstdint>
#include <vector>

#include "rabbit/postfit/scans.hpp"

namespace rabbit::postfit {

struct Scan2D {
  std::vector<double> x, y;  // the grid values of p and q (P each)
  std::vector<double> dnll;  // L − L_best at (x[i], y[j]), row-major [i][j]; 0 at the centre
};

/// The visiting order of rabbit's nll_scan2D: a square spiral from the centre of a P×P grid (P odd), each
/// point next to the one before, so that each profile fit starts from its neighbour's solution. Returns
/// (i, j) pairs, the centre excluded.
std::vector<std::pair<int64_t, int64_t>> spiral_order(int64_t points);

/// 2D scan of p and q around xhat: p = xhat_p + linspace(−range, range, P)·sigma_p (likewise q), both fixed
/// at each grid point, the other floating parameters profiled; visited in spiral_order. P must be odd.
Scan2D scan_2d(Objective& objective, const ProfileMinimizer& minimizer, const std::vector<int64_t>& floating,
               const Eigen::VectorXd& xhat, int64_t p, int64_t q, double sigma_p, double sigma_q,
               double range, int64_t points);

struct Contour2D {
  std::vector<double> angle;   // θ_k = 2πk/n
  std::vector<double> xp, xq;  // the contour point (NaN where the search failed)
  std::vector<double> dnll2;   // 2(L − L_min) at the point found (the level² up to the tolerance)
  std::vector<bool> success;
};

/// The 2D contour at level c (2ΔNLL = c²) of the profile likelihood in (p, q): along each ray
/// (p, q) = xhat + t·(σ_p cos θ_k, σ_q sin θ_k), t > 0, the t where the profiled 2ΔNLL reaches c², found by
/// bracketing and Illinois regula falsi on t, each step a profile fit of the other floating parameters.
/// cov_pq = C[:, {p, q}] (σ from its diagonal) gives the Gaussian start; each ray starts from the solution
/// of the previous one.
Contour2D contour_2d(Objective& objective, const ProfileMinimizer& minimizer,
                     const std::vector<int64_t>& floating, const Eigen::VectorXd& xhat, double lmin,
                     int64_t p, int64_t q, const Eigen::MatrixXd& cov_pq, double level, int64_t angles);

}  // namespace rabbit::postfit
