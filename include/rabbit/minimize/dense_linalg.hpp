#pragma once
// The dense linear algebra the trust-region solvers need, behind one small interface so that a
// device implementation (cuSOLVER/cuBLAS) can replace the host one without touching the
// algorithms. Matrices are column-major Eigen objects; a device implementation would keep its
// own copies keyed by the same calls.
#include <Eigen/Core>
#include <cstdint>
#include <memory>

namespace rabbit {

class DenseLinalg {
 public:
  virtual ~DenseLinalg() = default;

  /// Lower Cholesky factor of the symmetric matrix A (only its lower triangle is read) into L.
  /// Returns 0 on success, else the 1-based order k of the first leading minor that is not
  /// positive definite (LAPACK potrf's info); then L's leading (k-1)×(k-1) block is the factor of
  /// A's leading (k-1)×(k-1) block and the rest of L is unspecified.
  virtual int64_t cholesky(const Eigen::MatrixXd& A, Eigen::MatrixXd& L) const = 0;

  /// Same, factorising A + shift·I without forming the shifted matrix separately from L.
  virtual int64_t cholesky_shifted(const Eigen::MatrixXd& A, double shift, Eigen::MatrixXd& L) const;

  /// x ← L⁻¹ x for the leading m×m block of the lower-triangular L (m = x.size()).
  virtual void solve_lower(const Eigen::MatrixXd& L, Eigen::Ref<Eigen::VectorXd> x) const;
  /// x ← L⁻ᵀ x for the leading m×m block of the lower-triangular L (m = x.size()).
  virtual void solve_lower_transpose(const Eigen::MatrixXd& L, Eigen::Ref<Eigen::VectorXd> x) const;

  /// Y ← A·X for a symmetric A and a block of vectors X (n × m); the trust-exact solver's Lanczos
  /// start uses it (one call per Lanczos step for both of its runs).
  virtual void symmetric_multiply(const Eigen::MatrixXd& A, const Eigen::MatrixXd& X,
                                  Eigen::MatrixXd& Y) const;

  /// A⁻¹ into `inverse` for symmetric positive-definite A (the postfit covariance from the Hessian,
  /// docs/output-format.md "EDM and covariance"); `whiten`: on input g, on output L⁻¹ g (A = L Lᵀ).
  /// False when A is not positive definite or not finite. Host: rabbit::spd_inverse
  /// (minimize/spd_inverse.hpp); a device implementation factorises and inverts where the matrix is.
  virtual bool spd_inverse(const Eigen::MatrixXd& A, Eigen::MatrixXd& inverse,
                           Eigen::VectorXd* whiten = nullptr) const;

  /// Max absolute row sum.
  virtual double norm_inf(const Eigen::MatrixXd& A) const;
  virtual double norm_frobenius(const Eigen::MatrixXd& A) const;

  /// Symmetric eigendecomposition A = V diag(w) Vᵀ, eigenvalues ascending.
  virtual void symmetric_eigen(const Eigen::MatrixXd& A, Eigen::VectorXd& w, Eigen::MatrixXd* V) const;

  /// Symmetric tridiagonal eigendecomposition (diagonal d, off-diagonal e), ascending.
  virtual void tridiagonal_eigen(const Eigen::VectorXd& d, const Eigen::VectorXd& e, Eigen::VectorXd& w,
                                 Eigen::MatrixXd& V) const;
};

/// Host implementation: Eigen's blocked in-place Cholesky (which reports the failing column like
/// potrf) and Eigen's eigensolvers.
class EigenLinalg : public DenseLinalg {
 public:
  int64_t cholesky(const Eigen::MatrixXd& A, Eigen::MatrixXd& L) const override;
};

/// Host implementation whose Cholesky is LAPACK dpotrf (lower), info passed through.
class LapackLinalg : public EigenLinalg {
 public:
  int64_t cholesky(const Eigen::MatrixXd& A, Eigen::MatrixXd& L) const override;
};

/// The implementation the minimizers use by default (host).
const DenseLinalg& default_linalg();

}  // namespace rabbit
