#include "rabbit/postfit/l_curve.hpp"

#include <fmt/format.h>

#include <Eigen/Cholesky>
#include <cmath>
#include <limits>
#include <vector>

#include "rabbit/core/error.hpp"
#include "rabbit/model/model_options.hpp"

namespace rabbit::postfit {

using Eigen::MatrixXd;
using Eigen::VectorXd;

namespace {

struct Evaluation {
  double value = 0.0;
  VectorXd grad;
  MatrixXd hess;
};

// The objective at x with the model's τ set to `tau`, restricted to the floating parameters.
Evaluation evaluate_at(Objective& nll, Model& model, const std::vector<int64_t>& floating, const VectorXd& x,
                       double tau) {
  model.options.regularization_strength = tau;
  VectorXd g;
  MatrixXd h;
  Evaluation e;
  e.value = nll.value_grad_hess(x, g, h);
  const int64_t n = static_cast<int64_t>(floating.size());
  e.grad.resize(n);
  e.hess.resize(n, n);
  for (int64_t i = 0; i < n; ++i) {
    e.grad[i] = g[floating[i]];
    for (int64_t j = 0; j < n; ++j) e.hess(i, j) = h(floating[i], floating[j]);
  }
  return e;
}

}  // namespace

LCurveTerms l_curve_terms(Objective& nll, Model& model, const std::vector<int64_t>& floating,
                          const VectorXd& x) {
  const double tau = model.options.regularization_strength;
  // exp(2·10) ≈ 5e8: large enough that L_x/w is below the rounding of P, small enough to stay finite.
  constexpr double tau_large = 10.0;
  const double w_large = std::exp(2.0 * tau_large);
  Evaluation without, with;
  try {
    without = evaluate_at(nll, model, floating, x, -std::numeric_limits<double>::infinity());
    with = evaluate_at(nll, model, floating, x, tau_large);
  } catch (...) {
    model.options.regularization_strength = tau;
    throw;
  }
  model.options.regularization_strength = tau;
  LCurveTerms t;
  t.nll = without.value;
  t.grad_nll = without.grad;
  t.hess_nll = without.hess;
  t.penalty = (with.value - without.value) / w_large;
  t.grad_penalty = (with.grad - without.grad) / w_large;
  t.hess_penalty = (with.hess - without.hess) / w_large;
  return t;
}

namespace {

// κ and its τ-derivatives at fixed x (docs/model.md "The L curve"). With w = e^{2τ}, every τ-derivative
// of H = ∇²L_x + w∇²P and of b = 2w∇P is a multiple: H⁽ᵏ⁾ = 2ᵏ w ∇²P (k ≥ 1), b⁽ᵏ⁾ = 2ᵏ b. So v = −H⁻¹b
// and its derivatives follow from Leibniz' rule on H v = −b:
//   v⁽ⁿ⁾ = −H⁻¹(b⁽ⁿ⁾ + Σ_{k=1..n} C(n,k) H⁽ᵏ⁾ v⁽ⁿ⁻ᵏ⁾).
// Upstream's dx/dτ is v, its d²x/dτ² is v⁽¹⁾ (at fixed x); κ needs v and v⁽¹⁾, its n-th
// τ-derivative v⁽ⁿ⁺¹⁾ too.
CurvatureWithDerivatives curvature_with_derivatives(const LCurveTerms& t, double tau, int order) {
  const double w = std::exp(2.0 * tau);
  const MatrixXd H = (t.hess_nll_fit.size() ? t.hess_nll_fit : t.hess_nll) + w * t.hess_penalty;
  Eigen::LLT<MatrixXd> llt(H);
  if (llt.info() != Eigen::Success)
    throw Error(
        fmt::format("L curve: the Hessian of the regularised NLL is not positive definite at tau = {}", tau));
  const VectorXd b = 2.0 * w * t.grad_penalty;
  static const double binomial[4][4] = {{1, 0, 0, 0}, {1, 1, 0, 0}, {1, 2, 1, 0}, {1, 3, 3, 1}};
  std::vector<VectorXd> v;
  for (int n = 0; n < 2 + order; ++n) {
    VectorXd rhs = std::pow(2.0, n) * b;
    for (int k = 1; k <= n; ++k) rhs += binomial[n][k] * std::pow(2.0, k) * w * (t.hess_penalty * v[n - k]);
    v.push_back(-llt.solve(rhs));
  }
  // For l = log f (∇l = ∇f/f and ∇²l = ∇²f/f − ∇l∇lᵀ, constant at fixed x): l' = ∇l·v and
  // l'' = vᵀ∇²l v + ∇l·v⁽¹⁾; d[k] and s[k] are their k-th τ-derivatives.
  struct Line {
    double d[3] = {0, 0, 0}, s[3] = {0, 0, 0};
  };
  auto line = [&](double f, const VectorXd& g, const MatrixXd& h) {
    const VectorXd gl = g / f;
    auto M = [&](const VectorXd& a, const VectorXd& c) { return a.dot(h * c) / f - gl.dot(a) * gl.dot(c); };
    Line l;
    for (int k = 0; k <= order; ++k) l.d[k] = gl.dot(v[k]);
    l.s[0] = M(v[0], v[0]) + gl.dot(v[1]);
    if (order >= 1) l.s[1] = 2.0 * M(v[0], v[1]) + gl.dot(v[2]);
    if (order >= 2) l.s[2] = 2.0 * M(v[1], v[1]) + 2.0 * M(v[0], v[2]) + gl.dot(v[3]);
    return l;
  };
  const Line x = line(t.nll, t.grad_nll, t.hess_nll), y = line(t.penalty, t.grad_penalty, t.hess_penalty);
  // κ = N D^{-3/2} with N = y'' x' − x'' y', D = x'² + y'².
  const double N = y.s[0] * x.d[0] - x.s[0] * y.d[0];
  const double D = x.d[0] * x.d[0] + y.d[0] * y.d[0];
  CurvatureWithDerivatives out;
  out.value = N / std::pow(D, 1.5);
  if (order < 1) return out;
  const double N1 = y.s[1] * x.d[0] + y.s[0] * x.d[1] - x.s[1] * y.d[0] - x.s[0] * y.d[1];
  const double D1 = 2.0 * (x.d[0] * x.d[1] + y.d[0] * y.d[1]);
  out.d1 = N1 / std::pow(D, 1.5) - 1.5 * N * D1 / std::pow(D, 2.5);
  if (order < 2) return out;
  const double N2 = y.s[2] * x.d[0] + 2.0 * y.s[1] * x.d[1] + y.s[0] * x.d[2] - x.s[2] * y.d[0] -
                    2.0 * x.s[1] * y.d[1] - x.s[0] * y.d[2];
  const double D2 = 2.0 * (x.d[1] * x.d[1] + x.d[0] * x.d[2] + y.d[1] * y.d[1] + y.d[0] * y.d[2]);
  out.d2 = N2 / std::pow(D, 1.5) - 3.0 * N1 * D1 / std::pow(D, 2.5) + 3.75 * N * D1 * D1 / std::pow(D, 3.5) -
           1.5 * N * D2 / std::pow(D, 2.5);
  return out;
}

}  // namespace

double l_curve_curvature(const LCurveTerms& t, double tau) {
  return curvature_with_derivatives(t, tau, 0).value;
}

CurvatureWithDerivatives l_curve_curvature_derivatives(const LCurveTerms& t, double tau) {
  return curvature_with_derivatives(t, tau, 2);
}

std::vector<double> l_curve_scan_taus() {
  const double start = 1.7, stop = 2.1, step = 0.1;
  const auto n = static_cast<int64_t>(std::ceil((stop - start) / step));
  const double delta = (start + step) - start;
  std::vector<double> out;
  for (int64_t i = 0; i < n; ++i) out.push_back(start + static_cast<double>(i) * delta);
  return out;
}

}  // namespace rabbit::postfit
