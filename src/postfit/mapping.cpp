// The Mapping interface's default process form (include/rabbit/postfit/mapping.hpp): a mapping of the
// process-inclusive yields ν = Σ_p N[:, p] has ∂y/∂N_bp = ∂y/∂ν_b for every process p.
#include "rabbit/postfit/mapping.hpp"

#include <vector>

namespace rabbit::postfit {

MappingJacobian Mapping::jacobian_processes(const Eigen::MatrixXd& n_full) const {
  const int64_t P = n_full.cols();
  const MappingJacobian A = jacobian(n_full.rowwise().sum());
  std::vector<Eigen::Triplet<double>> t;
  t.reserve(static_cast<size_t>(A.nonZeros() * P));
  for (int64_t i = 0; i < A.outerSize(); ++i)
    for (MappingJacobian::InnerIterator it(A, i); it; ++it)
      for (int64_t p = 0; p < P; ++p) t.emplace_back(i, it.col() * P + p, it.value());
  MappingJacobian out(A.rows(), A.cols() * P);
  out.setFromTriplets(t.begin(), t.end());
  return out;
}

}  // namespace rabbit::postfit
