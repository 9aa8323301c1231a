#pragma once
// How far a computed value is from the value it should equal, in the two forms the tests use.
#include <Eigen/Core>
#include <algorithm>
#include <cmath>

namespace rabbit::test {

/// |a − b| / max(|a|, |b|): symmetric and scale-free, for two scalars that should be equal; 0 when
/// both are 0.
inline double relative_error(double a, double b) {
  const double scale = std::max(std::abs(a), std::abs(b));
  return scale == 0.0 ? 0.0 : std::abs(a - b) / scale;
}

/// max |a − ref| / max(1, max |ref|): the largest entry error of a matrix or vector, relative to
/// ref's largest entry when that is above 1 and absolute below; +inf on a shape mismatch, 0 for
/// empty matrices.
inline double scaled_max_error(const Eigen::MatrixXd& a, const Eigen::MatrixXd& ref) {
  if (a.rows() != ref.rows() || a.cols() != ref.cols()) return INFINITY;
  if (ref.size() == 0) return 0.0;
  return (a - ref).cwiseAbs().maxCoeff() / std::max(1.0, ref.cwiseAbs().maxCoeff());
}

}  // namespace rabbit::test
