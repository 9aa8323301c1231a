#include "l_curve_steps.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "rabbit/core/logging.hpp"
#include "rabbit/postfit/l_curve.hpp"

namespace rabbit::cli {

using Eigen::VectorXd;
using result::Axis;

namespace {

double curvature_at_minimum(FitContext& ctx, const VectorXd& x) {
  const auto terms = postfit::l_curve_terms(*ctx.fitter, *ctx.model, ctx.layout.floating, x);
  return postfit::l_curve_curvature(terms, ctx.model->options.regularization_strength);
}

// rabbit's l_curve_scan_tau: a fit at each τ of the scan, each from the previous minimum.
void scan(FitContext& ctx, FitSession& session, result::Group group, VectorXd& x) {
  double& tau = ctx.model->options.regularization_strength;
  const double tau0 = tau;
  const std::vector<double> taus = postfit::l_curve_scan_taus();
  std::vector<double> curvatures;
  for (size_t i = 0; i < taus.size(); ++i) {
    log().info("Iteration {} with tau = {}", i, py_float(taus[i]));
    tau = taus[i];
    MinimizerResult mr;
    x = session.minimize_full(x, false, &mr);
    curvatures.push_back(curvature_at_minimum(ctx, x));
    log().info("Curvature (value) = {}", py_float(curvatures.back()));
  }
  tau = tau0;
  const auto n = static_cast<int64_t>(taus.size());
  result::write_hist(group, "step_tau", {Axis::integer("step", 0, n)}, taus.data(), nullptr, "step tau");
  result::write_hist(group, "step_lcurve", {Axis::integer("step", 0, n)}, curvatures.data(), nullptr,
                     "step lcurve");
}

// rabbit's l_curve_optimize_tau: Newton steps on −κ(τ) with x re-minimised before each, until the
// expected decrease 0.5·g·step lies in [0, 1e-16] or after 50 steps. Reports the τ after the last step
// and −κ before it, as rabbit does.
void optimize(FitContext& ctx, FitSession& session, result::Group group, VectorXd& x) {
  double& tau = ctx.model->options.regularization_strength;
  log().info("Run l curve optimization");
  double edm = 1.0, value = 0.0;
  for (int i = 0; i < 50 && (edm < 0.0 || edm > 1e-16); ++i) {
    log().info("Iteration {}", i);
    MinimizerResult mr;
    x = session.minimize_full(x, false, &mr);
    const auto terms = postfit::l_curve_terms(*ctx.fitter, *ctx.model, ctx.layout.floating, x);
    const auto k = postfit::l_curve_curvature_derivatives(terms, tau);
    value = -k.value;
    const double grad = -k.d1, hess = -k.d2;
    log().info("Curvature (value) = {}", py_float(-value));
    log().info("Curvature (gradient) = {}", py_float(grad));
    log().info("Curvature (hessian) = {}", py_float(hess));
    // The step of rabbit: the Hessian kept away from zero (|h| >= 1e-8, its sign kept, + at 0).
    const double safe_hess = (hess < 0.0 ? -1.0 : 1.0) * std::max(std::abs(hess), 1e-8);
    const double step = grad / safe_hess;
    log().info("Curvature (step) = {}", py_float(-step));
    tau -= step;
    edm = 0.5 * grad * step;
    log().debug("Curvature edm = {}", py_float(edm));
    log().debug("Curvature tau = {}", py_float(tau));
  }
  log().info("Optimization terminated");
  log().info("  edm: {}", py_float(edm));
  log().info("  maximum curvature: {}", py_float(-value));
  log().info("  tau: {}", py_float(tau));
  const double best_tau = tau;
  result::write_hist(group, "best_tau", {Axis::integer("best", 0, 1)}, &best_tau, nullptr, "best tau");
  result::write_hist(group, "best_lcurve", {Axis::integer("best", 0, 1)}, &value, nullptr, "best lcurve");
}

}  // namespace

void run_l_curve_steps(FitContext& ctx, FitSession& session, result::Group group, VectorXd& x) {
  if (ctx.options.l_curve_scan) scan(ctx, session, group, x);
  if (ctx.options.l_curve_optimize) optimize(ctx, session, group, x);
  // The covariance of the result group is the reported fit's, never an L-curve minimisation's.
  session.forget_fit_hessian();
}

}  // namespace rabbit::cli
