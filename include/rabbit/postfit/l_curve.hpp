#pragma once
// The L curve of a regularised fit (docs/model.md "The L curve"): along the minimum x̂(τ) of
// L(x, τ) = L_x(x) + exp(2τ) P(x) (L_x the NLL without the penalty, P the unweighted sum of the
// regularisers' penalties), the curve (log L_x, log P) as a function of τ, and its curvature
//   κ = (l_y'' l_x' − l_x'' l_y') / (l_x'² + l_y'²)^{3/2}
// with l_x = log L_x, l_y = log P and ' = d/dτ (rabbit's lcurve.py, Eq. (4.3) of
// JINST 7 (2012) T10003). As rabbit does, dx̂/dτ = −H⁻¹ ∂²L/∂x∂τ and its τ-derivative is taken at
// fixed x (the term of the third derivatives of L is left out).
#include <Eigen/Core>
#include <cstdint>
#include <vector>

#include "rabbit/minimize/objective.hpp"
#include "rabbit/model/model.hpp"

namespace rabbit::postfit {

/// L_x and P with their gradients and Hessians at one x, over the floating parameters.
struct LCurveTerms {
  double nll = 0.0;      // L_x: the reduced NLL without the penalty, as the curve's l_x = log L_x reads it
  double penalty = 0.0;  // P: Σ of the regularisers' unweighted penalties
  Eigen::VectorXd grad_nll, grad_penalty;
  Eigen::MatrixXd hess_nll, hess_penalty;
  /// ∇²L_x of the fitted NLL, for dx̂/dτ, where it is not hess_nll (with BB rabbit's l_x reads β not
  /// profiled, its fit the profiled NLL: docs/model.md "The L curve"); empty: hess_nll.
  Eigen::MatrixXd hess_nll_fit;
};

/// The terms at x (full parameter vector), restricted to `floating`. L is linear in w = exp(2τ): the
/// objective is evaluated at w = 0 (L_x) and at a large w (then P = (L − L_x)/w loses nothing to
/// rounding); the model's τ is restored afterwards, also when an evaluation throws.
LCurveTerms l_curve_terms(Objective& nll, Model& model, const std::vector<int64_t>& floating,
                          const Eigen::VectorXd& x);

/// κ at τ for the terms of one x. Throws Error when H = ∇²L_x + exp(2τ)∇²P is not positive definite.
double l_curve_curvature(const LCurveTerms& terms, double tau);

/// κ and its first two τ-derivatives at fixed x (in closed form: what rabbit's nested autodiff of κ in τ
/// gives, for --lCurveOptimize).
struct CurvatureWithDerivatives {
  double value = 0.0, d1 = 0.0, d2 = 0.0;
};
CurvatureWithDerivatives l_curve_curvature_derivatives(const LCurveTerms& terms, double tau);

/// The τ values of --lCurveScan: numpy.arange(1.7, 2.1, 0.1) as rabbit computes it (five values,
/// start + i·((start + step) − start)).
std::vector<double> l_curve_scan_taus();

}  // namespace rabbit::postfit
