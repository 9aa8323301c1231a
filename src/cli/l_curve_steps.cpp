#include "l_curve_steps.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "rabbit/core/error.hpp"
#include "rabbit/core/logging.hpp"
#include "rabbit/fit/make_fitter.hpp"
#include "rabbit/postfit/l_curve.hpp"

namespace rabbit::cli {

using Eigen::VectorXd;
using result::Axis;

namespace {

// With BB rabbit's l_x = log L_x reads the NLL with β not profiled but stored, which is β⁰ after the reset
// of every fit: there the BB term vanishes and the yields are those without BB, so L_x is the NLL of the
// model without BB parameters (docs/model.md "The L curve"). Its objective, on the CPU; null without BB.
std::unique_ptr<Fitter> stored_beta_objective(FitContext& ctx, const char* option) {
  if (!ctx.bb_on) return nullptr;
  YieldModel& yields = ctx.yield_model();
  const VectorXd defaults = yields.default_beta_centres();
  auto is_default = [&](const VectorXd& v) { return v.size() == defaults.size() && v == defaults; };
  if (!is_default(yields.beta_centres()) || !is_default(yields.stored_beta()))
    throw OptionError(fmt::format(
        "{} with bin-by-bin statistics is not implemented for toys that randomise the BB centres", option));
  ModelOptions options = ctx.model->options;
  options.bin_by_bin_stat = false;
  options.regularization.clear();
  auto model = build_model(ctx.input, options);
  model->parameters = ctx.model->parameters;  // constraint centres, blinding offsets of this fit
  FitterOptions fo;
  fo.backend = Backend::cpu;
  auto fitter = make_fitter(model, fo);
  fitter->set_observed(ctx.fitter->observed(), ctx.fitter->observed_variances());
  return fitter;
}

postfit::LCurveTerms terms_at(FitContext& ctx, Fitter* stored_beta, const VectorXd& x) {
  auto t = postfit::l_curve_terms(*ctx.fitter, *ctx.model, ctx.layout.floating, x);
  if (stored_beta) {
    const auto line = postfit::l_curve_terms(*stored_beta, stored_beta->model(), ctx.layout.floating, x);
    t.hess_nll_fit = std::move(t.hess_nll);
    t.nll = line.nll;
    t.grad_nll = line.grad_nll;
    t.hess_nll = line.hess_nll;
  }
  return t;
}

// rabbit's l_curve_scan_tau: a fit at each τ of the scan, each from the previous minimum.
void scan(FitContext& ctx, FitSession& session, result::Group group, VectorXd& x) {
  double& tau = ctx.model->options.regularization_strength;
  const double tau0 = tau;
  const std::vector<double> taus = postfit::l_curve_scan_taus();
  const auto stored_beta = stored_beta_objective(ctx, "--lCurveScan");
  std::vector<double> curvatures;
  for (size_t i = 0; i < taus.size(); ++i) {
    log().info("Iteration {} with tau = {}", i, py_float(taus[i]));
    tau = taus[i];
    MinimizerResult mr;
    x = session.minimize_full(x, false, &mr);
    curvatures.push_back(postfit::l_curve_curvature(terms_at(ctx, stored_beta.get(), x), tau));
    log().info("Curvature (value) = {}", py_float(curvatures.back()));
  }
  tau = tau0;
  const auto n = static_cast<int64_t>(taus.size());
  // No variances: rabbit's add_1D_integer_hist stores these as Double histograms (docs/output-format.md).
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
  const auto stored_beta = stored_beta_objective(ctx, "--lCurveOptimize");
  double edm = 1.0, value = 0.0;
  for (int i = 0; i < 50 && (edm < 0.0 || edm > 1e-16); ++i) {
    log().info("Iteration {}", i);
    MinimizerResult mr;
    x = session.minimize_full(x, false, &mr);
    const auto k = postfit::l_curve_curvature_derivatives(terms_at(ctx, stored_beta.get(), x), tau);
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
