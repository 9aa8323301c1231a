#include "rabbit/minimize/objective.hpp"

#include <algorithm>
#include <new>

#include "rabbit/core/logging.hpp"

namespace rabbit {

// Dense Hessian from batched HVPs against unit vectors (docs/minimizers.md "Dense Hessian from HVPs"). The
// batch halves when an allocation fails and the reduced width persists for later Hessians (postfit,
// preconditioner rebuilds), so the limit is found once per run. The result is symmetrised.
double Objective::value_grad_hess(const Eigen::VectorXd& x, Eigen::VectorXd& grad, Eigen::MatrixXd& hess) {
  const int64_t n = size();
  hess.resize(n, n);
  int64_t batch = std::max<int64_t>(1, std::min(hvp_batch_, n));
  double f = value_grad(x, grad);
  Eigen::VectorXd g;
  for (int64_t start = 0; start < n;) {
    const int64_t k = std::min(batch, n - start);
    try {
      Eigen::MatrixXd V = Eigen::MatrixXd::Zero(n, k);
      for (int64_t j = 0; j < k; ++j) V(start + j, j) = 1.0;
      Eigen::MatrixXd HV;
      value_grad_hvp(x, V, g, HV);
      hess.middleCols(start, k) = HV;
      start += k;
    } catch (const std::bad_alloc&) {
      if (batch == 1) throw;
      batch = std::max<int64_t>(1, batch / 2);
      hvp_batch_ = std::min(hvp_batch_, batch);
      log().warn("HVP batch too large for the device; retrying with --hvpBatch {}", batch);
    }
  }
  hess = 0.5 * (hess + hess.transpose()).eval();
  return f;
}

void Objective::hvp(const Eigen::VectorXd& x, const Eigen::MatrixXd& V, Eigen::MatrixXd& HV) {
  Eigen::VectorXd grad;
  value_grad_hvp(x, V, grad, HV);
}

}  // namespace rabbit
