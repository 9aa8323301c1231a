#pragma once
// Central finite differences for the derivative tests: one place for the x ± h·e_i pattern.
//
// Every helper perturbs one coordinate at a time exactly as the hand-written loops did
// (xp = x, xm = x; xp[i] += step; xm[i] -= step; (f(xp) - f(xm)) / (2 * step), f(xp) evaluated
// first), so a converted test sees bit-identical differences at the same points.
//
// Header-only on purpose: the test executables are built with the project's flags (-march=native
// under RABBIT_NATIVE) but rabbit_test_support is not, and Eigen objects must not cross between
// code compiled with different vectorisation (alignment) settings.
#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <type_traits>

namespace rabbit::test {

/// How the caller's h becomes the step of coordinate i.
enum class FdStep {
  absolute,  ///< step = h
  relative,  ///< step = h·max(1, |x_i|)
};

/// The step used for a coordinate with value xi.
inline double fd_step(double h, double xi, FdStep scale) {
  return scale == FdStep::relative ? h * std::max(1.0, std::abs(xi)) : h;
}

/// ∂f/∂x_i by central differences; f may return a double or any Eigen vector/matrix.
template <class F>
auto central_partial(F&& f, const Eigen::VectorXd& x, Eigen::Index i, double h,
                     FdStep scale = FdStep::absolute) {
  using R = std::decay_t<decltype(f(x))>;
  const double step = fd_step(h, x[i], scale);
  Eigen::VectorXd xp = x, xm = x;
  xp[i] += step;
  xm[i] -= step;
  const R fp = f(xp);
  const R fm = f(xm);
  return R((fp - fm) / (2 * step));
}

/// Central-difference gradient of a scalar function.
template <class F>
Eigen::VectorXd central_gradient(F&& f, const Eigen::VectorXd& x, double h, FdStep scale = FdStep::absolute) {
  Eigen::VectorXd g(x.size());
  for (Eigen::Index i = 0; i < x.size(); ++i) g[i] = central_partial(f, x, i, h, scale);
  return g;
}

/// Central-difference Jacobian of a vector function: column i is ∂f/∂x_i.
template <class F>
Eigen::MatrixXd central_jacobian(F&& f, const Eigen::VectorXd& x, double h, FdStep scale = FdStep::absolute) {
  Eigen::MatrixXd J;
  for (Eigen::Index i = 0; i < x.size(); ++i) {
    const Eigen::VectorXd col = central_partial(f, x, i, h, scale);
    if (i == 0) J.resize(col.size(), x.size());
    J.col(i) = col;
  }
  return J;
}

/// Directional derivative (f(x + h·v) − f(x − h·v)) / (2h); f may return a double or any Eigen
/// vector/matrix.
template <class F>
auto central_directional(F&& f, const Eigen::VectorXd& x, const Eigen::VectorXd& v, double h) {
  using R = std::decay_t<decltype(f(x))>;
  const Eigen::VectorXd xp = x + h * v;
  const Eigen::VectorXd xm = x - h * v;
  const R fp = f(xp);
  const R fm = f(xm);
  return R((fp - fm) / (2 * h));
}

}  // namespace rabbit::test
