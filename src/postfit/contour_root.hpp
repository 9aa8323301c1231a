#pragma once
// The one-dimensional root search shared by the contour points of --contourScan (scans.cpp) and
// the rays of --contourScan2D (scans_2d.cpp): g(t) = profile ΔNLL − target along a line, g(0) < 0.
// First the bracket is widened until g changes sign, then Illinois regula falsi (a false position
// that halves the stale end's value when the same end moves twice) closes it; docs/differences-from-rabbit.md
// (`--contourScan`, `--contourScan2D`).
#include <Eigen/Core>
#include <cmath>

namespace rabbit::postfit {

struct RootBracket {
  double t_lo = 0.0, g_lo = 0.0, t_hi = 0.0, g_hi = 0.0;
  Eigen::VectorXd x_hi;  // the profile solution at t_hi
};

/// [0, t] with g(0) = g0 < 0, widened by 1.6× (at most 40 times) until g(t_hi) ≥ 0. False when g
/// becomes non-finite or stays negative. `profile_at(t, x)` returns g(t) and its solution in x.
template <class Profile>
bool widen_bracket(Profile& profile_at, double g0, double t, RootBracket& b) {
  b.t_lo = 0.0;
  b.g_lo = g0;
  b.t_hi = t;
  b.g_hi = profile_at(b.t_hi, b.x_hi);
  for (int expand = 0; expand < 40 && std::isfinite(b.g_hi) && b.g_hi < 0.0; ++expand) {
    b.t_lo = b.t_hi;
    b.g_lo = b.g_hi;
    b.t_hi *= 1.6;
    b.g_hi = profile_at(b.t_hi, b.x_hi);
  }
  return std::isfinite(b.g_hi) && b.g_hi >= 0.0;
}

struct Root {
  bool finite = true;  // false when g(t) was not finite at some step
  double g = 0.0;      // the smallest |g| seen (the bracket's upper end included)
  Eigen::VectorXd x;   // its solution
};

/// At most 100 Illinois steps on the bracket (g_lo < 0 ≤ g_hi), stopping when |g| < g_tolerance or
/// when `closed(t_lo, t_hi)` says the bracket is too narrow to move.
template <class Profile, class Closed>
Root illinois_root(Profile& profile_at, RootBracket b, double g_tolerance, Closed closed) {
  Root best{true, b.g_hi, b.x_hi};
  int last_side = 0;
  for (int it = 0; it < 100; ++it) {
    const double t = b.t_hi - b.g_hi * (b.t_hi - b.t_lo) / (b.g_hi - b.g_lo);
    Eigen::VectorXd xt;
    const double g = profile_at(t, xt);
    if (!std::isfinite(g)) {
      best.finite = false;
      return best;
    }
    if (std::abs(g) < std::abs(best.g)) {
      best.g = g;
      best.x = xt;
    }
    if (std::abs(g) < g_tolerance || closed(b.t_lo, b.t_hi)) break;
    if (g < 0.0) {
      b.t_lo = t;
      b.g_lo = g;
      if (last_side == -1) b.g_hi *= 0.5;
      last_side = -1;
    } else {
      b.t_hi = t;
      b.g_hi = g;
      if (last_side == 1) b.g_lo *= 0.5;
      last_side = 1;
    }
  }
  return best;
}

}  // namespace rabbit::postfit
