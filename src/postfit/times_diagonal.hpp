#pragma once
// M diag(d) in place: the values of M * d.asDiagonal() (one product per entry) without the second matrix
// that the product allocates; the Jacobians scaled here have nbins (· nproc) × npar entries
// (docs/benchmarks.md "Histogram errors"). Internal to src/postfit.
#include <Eigen/Core>

namespace rabbit::postfit {

inline Eigen::MatrixXd times_diagonal(Eigen::MatrixXd M, const Eigen::VectorXd& d) {
  M.array().rowwise() *= d.transpose().array();
  return M;
}

}  // namespace rabbit::postfit
