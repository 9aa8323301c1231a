#pragma once
// The inverse of a symmetric positive-definite matrix (the postfit covariance from the Hessian,
// docs/output-format.md "EDM and covariance") the way LAPACK's potrf + potri form it: A = L Lᵀ, then
// L⁻¹ and L⁻ᵀ L⁻¹ in place on the lower triangle by blocked recursions, ≈ n³ flops in all, where
// inverting L by a solve against the identity and a full product L⁻ᵀ · L⁻¹ costs ≈ 3.3 n³
// (docs/benchmarks.md "Dense linear algebra").
#include <Eigen/Core>

namespace rabbit {

/// A⁻¹ into `inverse` (full, symmetric). `whiten` (optional): on input a vector g, on output L⁻¹ g,
/// so that gᵀ A⁻¹ g = |L⁻¹ g|². Returns false, leaving `inverse` unspecified, when A is not
/// positive definite (or not finite).
bool spd_inverse(const Eigen::MatrixXd& A, Eigen::MatrixXd& inverse, Eigen::VectorXd* whiten = nullptr);

}  // namespace rabbit
