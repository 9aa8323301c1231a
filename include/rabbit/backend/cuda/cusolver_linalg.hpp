#pragma once
// A DenseLinalg (the minimizers' dense linear algebra seam, minimize/dense_linalg.hpp) whose
// Cholesky factorisations run on a CUDA device through cuSOLVER (potrf, failure index from
// devInfo as LAPACK's info) and which adds a factor-and-solve (potrf + potrs) for covariances.
// The O(n²) triangular solves, norms and eigendecompositions stay on the host (inherited from
// EigenLinalg): the matrices arrive and leave as host Eigen objects, so moving an n² factor to the
// device for an n² solve would cost as much as the solve.
// Defined in the CUDA plugin only (backend/cuda/cuda_plugin.hpp); the fit module gets it from the
// plugin's table.
#include <Eigen/Core>
#include <cstdint>
#include <memory>

#include "rabbit/minimize/dense_linalg.hpp"

namespace rabbit {

class CusolverLinalg : public EigenLinalg {
 public:
  /// Creates the cuSOLVER/cuBLAS handles on device `ordinal`; ResourceError (one line) when the
  /// device cannot be used.
  explicit CusolverLinalg(int ordinal);
  ~CusolverLinalg() override;
  CusolverLinalg(const CusolverLinalg&) = delete;
  CusolverLinalg& operator=(const CusolverLinalg&) = delete;

  int64_t cholesky(const Eigen::MatrixXd& A, Eigen::MatrixXd& L) const override;
  /// The shift is added to the diagonal on the device (no shifted host copy).
  int64_t cholesky_shifted(const Eigen::MatrixXd& A, double shift, Eigen::MatrixXd& L) const override;

  /// X ← A⁻¹ X for symmetric positive-definite A (lower triangle read): potrf, then potrs, with one
  /// upload of A and X and one download of X. Returns potrf's info (0 on success; X is then
  /// unspecified otherwise). X = I gives the covariance A⁻¹.
  int64_t cholesky_solve(const Eigen::MatrixXd& A, Eigen::MatrixXd& X) const;

  /// The covariance where the Hessian's factor is: potrf, trsv for the whitened gradient, potri
  /// (the lower triangle of A⁻¹, ≈ n³ flops as on the host), one upload and one download of n².
  bool spd_inverse(const Eigen::MatrixXd& A, Eigen::MatrixXd& inverse,
                   Eigen::VectorXd* whiten = nullptr) const override;

  int ordinal() const { return ordinal_; }

 private:
  struct Device;
  int64_t factor(const Eigen::MatrixXd& A, double shift, Eigen::MatrixXd* L, Eigen::MatrixXd* rhs) const;
  int ordinal_;
  std::unique_ptr<Device> dev_;
};

/// A cuSOLVER DenseLinalg on device `ordinal` (in the CUDA plugin; tests that link the CUDA sources
/// directly guard their calls with RABBIT_HAVE_CUDA).
std::shared_ptr<CusolverLinalg> make_cusolver_linalg(int ordinal);

}  // namespace rabbit
