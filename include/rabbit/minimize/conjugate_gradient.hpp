#pragma once
// Conjugate gradients on a symmetric positive-definite operator given by its products: the EDM
// and Newton polish of a fit without a dense Hessian (docs/minimizers.md "Convergence") and the
// --noHessian variances.
#include <Eigen/Core>
#include <cstdint>
#include <functional>
#include <string>

namespace rabbit {

/// Solves A v = b by conjugate gradients with A given by its products; relative tolerance rtol on
/// ‖r‖/‖b‖. Throws NumericalError naming `what` if a direction has non-positive curvature or it
/// does not converge within maxiter. `products`, if given, counts the calls of apply.
Eigen::VectorXd conjugate_gradient(const std::function<Eigen::VectorXd(const Eigen::VectorXd&)>& apply,
                                   const Eigen::VectorXd& b, double rtol, int64_t maxiter,
                                   const std::string& what, int64_t* products = nullptr);

}  // namespace rabbit
