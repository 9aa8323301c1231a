#include "rabbit/minimize/conjugate_gradient.hpp"

#include <fmt/format.h>

#include <cmath>

#include "rabbit/core/error.hpp"

namespace rabbit {

Eigen::VectorXd conjugate_gradient(const std::function<Eigen::VectorXd(const Eigen::VectorXd&)>& apply,
                                   const Eigen::VectorXd& b, double rtol, int64_t maxiter,
                                   const std::string& what, int64_t* products) {
  Eigen::VectorXd x = Eigen::VectorXd::Zero(b.size());
  const double bnorm = b.norm();
  if (bnorm == 0.0) return x;
  Eigen::VectorXd r = b, p = b;
  double rr = r.squaredNorm();
  for (int64_t it = 0; it < maxiter; ++it) {
    Eigen::VectorXd ap = apply(p);
    if (products) ++*products;
    double pap = p.dot(ap);
    if (!(pap > 0.0))
      throw NumericalError(
          fmt::format("conjugate gradient for {} failed: the Hessian is not positive-definite", what));
    double alpha = rr / pap;
    x += alpha * p;
    r -= alpha * ap;
    double rr_new = r.squaredNorm();
    if (std::sqrt(rr_new) <= rtol * bnorm) return x;
    p = r + (rr_new / rr) * p;
    rr = rr_new;
  }
  throw NumericalError(
      fmt::format("conjugate gradient for {} did not converge in {} iterations", what, maxiter));
}

}  // namespace rabbit
