// --forceLinear (docs/user-guide.md "Minimizer options"): the NLL is treated as quadratic around the
// start point and the fit is one Newton step from there, as rabbit's Fitter.minimize does for a
// likelihood it considers linear: x = x0 − H(x0)⁻¹ g(x0), H by Cholesky, or by conjugate gradients on
// Hessian-vector products under --noHessian. Only the floating parameters move
// (docs/differences-from-rabbit.md "--forceLinear").
#include <fmt/format.h>

#include <Eigen/Cholesky>
#include <algorithm>
#include <cmath>

#include "fit_session.hpp"
#include "rabbit/core/error.hpp"
#include "rabbit/core/logging.hpp"
#include "rabbit/minimize/conjugate_gradient.hpp"

namespace rabbit::cli {

using Eigen::MatrixXd;
using Eigen::VectorXd;

VectorXd FitSession::newton_step_full(const VectorXd& x0, MinimizerResult* result) {
  postfit::RestrictedObjective sub(*ctx_.fitter, ctx_.layout.floating, x0);
  const VectorXd y0 = sub.restrict(x0);
  VectorXd g, dy;
  MinimizerResult& r = *result;
  r = MinimizerResult{};
  if (!ctx_.options.no_hessian) {
    log().info(
        "--forceLinear: solving by a single Newton step with the Cholesky decomposition of the Hessian");
    MatrixXd h;
    sub.value_grad_hess(y0, g, h);
    Eigen::LLT<MatrixXd> llt(h);
    if (llt.info() != Eigen::Success || !g.allFinite())
      throw NumericalError(
          "--forceLinear: Cholesky decomposition failed, the Hessian at the start point is not "
          "positive-definite");
    dy = -llt.solve(g);
    r.nhess = 1;
    r.factorizations = 1;
  } else {
    log().info("--forceLinear: solving by a single Newton step with conjugate gradients (--noHessian)");
    sub.value_grad(y0, g);
    auto apply = [&](const VectorXd& v) {
      VectorXd gg;
      MatrixXd hv;
      sub.value_grad_hvp(y0, v, gg, hv);
      return VectorXd(hv.col(0));
    };
    int64_t products = 0;
    dy = -conjugate_gradient(apply, g, 1e-10, std::max<int64_t>(10 * sub.size(), 100),
                             "the --forceLinear Newton step", &products);
    r.nhvp = products;
  }
  r.x = y0 + dy;
  r.f = sub.value_grad(r.x, r.grad);
  r.nfev = 2;
  r.ngev = 2;
  r.iterations = 1;
  r.status = 0;
  r.success = true;
  r.method = "forceLinear";
  r.message = "one Newton step from the start point (--forceLinear)";
  r.stop_reason = "--forceLinear: one Newton step, not iterated";
  // Not certified: the step is the answer whether or not the NLL is quadratic (as upstream).
  r.converged = false;
  if (!std::isfinite(r.f)) throw NumericalError("--forceLinear: the NLL after the Newton step is not finite");
  log().info("--forceLinear: NLL {} after the step", py_float(r.f));
  return sub.expand(r.x);
}

}  // namespace rabbit::cli
