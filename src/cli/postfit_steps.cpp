#include "postfit_steps.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "impacts.hpp"
#include "rabbit/core/error.hpp"
#include "rabbit/core/logging.hpp"
#include "rabbit/minimize/conjugate_gradient.hpp"
#include "rabbit/model/global_terms.hpp"
#include "rabbit/postfit/scans.hpp"
#include "rabbit/postfit/uncertainties.hpp"

namespace rabbit::cli {

using Eigen::MatrixXd;
using Eigen::VectorXd;
using result::Axis;

void write_minimizer_summary(result::Group g, result::Group cpp, const MinimizerResult& mr, bool epochs) {
  const int64_t n = static_cast<int64_t>(mr.loss_history.size());
  if (epochs) {
    result::write_hist(g, "epoch_loss", {Axis::integer("epoch", 0, n)}, mr.loss_history.data(), nullptr,
                       "epoch loss");
    result::write_hist(g, "epoch_time", {Axis::integer("epoch", 0, n)}, mr.time_history.data(), nullptr,
                       "epoch time");
  }
  result::set_attr(cpp, "minimizer_method", mr.method);
  result::write_scalar_str(result::only_in(cpp, result::Layout::rabbit), "minimizer_method", mr.method);
  result::write_scalar(cpp, "minimizer_status", static_cast<int64_t>(mr.status));
  result::write_scalar_str(cpp, "minimizer_message", mr.message);
  result::write_scalar(cpp, "niter", mr.iterations);
  result::write_scalar(cpp, "nfev", mr.nfev);
  result::write_scalar(cpp, "nhev", mr.nhvp + mr.nhess);
  result::write_scalar_bool(cpp, "stopped_early", mr.stopped_early);
  result::write_scalar(cpp, "nrestarts", static_cast<int64_t>(mr.restarts));
  result::write_scalar_bool(cpp, "converged", mr.converged);
  result::write_scalar(cpp, "edm", mr.edm);
  result::write_scalar(cpp, "max_scaled_gradient", mr.max_scaled_grad);
  result::write_scalar(cpp, "newton_polish_steps", static_cast<int64_t>(mr.polish_steps));
  result::write_scalar_str(cpp, "stop_reason", mr.stop_reason);
  result::write_scalar_str(cpp, "certified_by", mr.certified_by);
}

namespace {

// --noHessian (docs/output-format.md "Hessian-free mode"): CG on Hessian-vector products over the floating
// coordinates.
void uncertainties_without_hessian(FitContext& ctx, result::Group group, const VectorXd& x,
                                   VectorXd& variances) {
  const auto& ps = ctx.model->parameters;
  const auto& layout = ctx.layout;
  postfit::RestrictedObjective sub(*ctx.fitter, layout.floating, x);
  VectorXd y = sub.restrict(x), g;
  sub.value_grad(y, g);
  auto apply = [&](const VectorXd& v) {
    VectorXd gg;
    MatrixXd hv;
    sub.value_grad_hvp(y, v, gg, hv);
    return VectorXd(hv.col(0));
  };
  const int64_t maxiter = std::max<int64_t>(10 * sub.size(), 100);
  VectorXd v = conjugate_gradient(apply, g, 1e-10, maxiter, "the EDM");
  double edm = 0.5 * g.dot(v);
  log().info("edmval: {}", py_float(edm));
  result::write_scalar(group, "edmval", edm);
  for (auto r : layout.reported) {
    auto it = std::find(layout.floating.begin(), layout.floating.end(), r);
    if (it == layout.floating.end())
      throw NumericalError(
          fmt::format("--noHessian: the variance of frozen parameter {} cannot be computed", ps.names[r]));
    int64_t k = it - layout.floating.begin();
    VectorXd e = VectorXd::Zero(sub.size());
    e(k) = 1.0;
    VectorXd c = conjugate_gradient(apply, e, 1e-10, maxiter, "the variance of " + ps.names[r]);
    variances(r) = c(k);
  }
}

}  // namespace

void postfit_uncertainties(FitContext& ctx, FitSession& session, ResultLayoutWriter& out, result::Group group,
                           const VectorXd& x, VectorXd& variances, MatrixXd& cov, bool& have_cov) {
  const auto& o = ctx.options;
  const int64_t npar = ctx.model->parameters.size();
  variances = VectorXd::Constant(npar, std::numeric_limits<double>::quiet_NaN());
  if (o.no_hessian) {
    if (!o.no_edm) uncertainties_without_hessian(ctx, group, x, variances);
    return;
  }
  VectorXd g;
  MatrixXd hess;
  // The Hessian that certified the fit, taken at this x; else a new one.
  if (!session.take_fit_hessian(g, hess)) ctx.fitter->value_grad_hess(x, g, hess);
  auto res = postfit::covariance_from_hessian(hess, g, ctx.layout.floating, prefit_covariance(*ctx.model),
                                              ctx.fitter->dense_linalg());
  cov = res.cov;
  have_cov = true;
  log().info("edmval: {}", py_float(res.edm));
  result::write_scalar(group, "edmval", res.edm);
  result::write_hist(group, "cov", {out.shared("parms_x"), out.shared("parms_y")}, cov.data(),
                     nullptr);  // symmetric: column-major equals row-major
  if (ctx.bb_on && o.diagnostics) log().info("edmvalbeta: not computed (the beta profile is analytic)");
  variances = cov.diagonal();
  if (impacts_requested(o)) write_impacts(ctx, out, group, x, cov, hess);
}

void write_likelihood_values(FitContext& ctx, result::Group g, const VectorXd& x) {
  const auto& ps = ctx.model->parameters;
  auto& fitter = *ctx.fitter;
  // Includes each external term's const (rabbit PR #147); ndfsat does not count external terms.
  const double nll = fitter.value(x);
  const int64_t ndfsat = ctx.input->nbins - ps.npoi - ps.npou - ctx.input->nsystnoconstraint;
  log().info("Saturated chi2:");
  log().info("    ndof: {}", ndfsat);
  log().info("    2*deltaNLL: {}", std::round(200.0 * nll) / 100.0);
  log().info("    p-value: {}%",
             std::round(10000.0 * postfit::chi2_survival(2.0 * nll, static_cast<double>(ndfsat))) / 100.0);
  result::write_scalar(g, "nllvalreduced", nll);
  result::write_scalar(g, "ndfsat", ndfsat);
  result::write_scalar_bool(g, "postfit_profile", !ctx.options.no_postfit_profile_bb);
  if (!ctx.options.full_nll) return;
  // value(x) holds the external terms' const; their lognorm is full-NLL only (rabbit PR #147,
  // docs/output-format.md).
  double full = constraint_full_nll_constant(ps) + ctx.model->global_terms->x_terms_full_constant() +
                (fitter.value(x) - 0.0);
  // The shards' data and BB constants: full_value − value per shard.
  VectorXd xis = ctx.xi(x);
  // (value + constant) − value, as the full NLL is formed, so the sum is that of the full NLLs
  auto constants = [&](YieldModel& y) {
    const double v = y.value(xis);
    return (v + y.full_nll_constant()) - y.value(xis);
  };
  bool own_yields = true;
  for (const auto& s : fitter.shards()) own_yields = own_yields && s->yield_model();
  if (own_yields) {
    for (const auto& s : fitter.shards()) full += constants(*s->yield_model());
  } else {
    full += constants(ctx.yield_model());  // the same constants over all bins, on the host
  }
  log().info("2*deltaNLL(full): {}", py_float(full));
  result::write_scalar(g, "nllvalfull", full);
}

void write_parameters(FitContext& ctx, ResultLayoutWriter& out, result::Group g, result::Group cpp,
                      const VectorXd& x, const VectorXd& var) {
  const auto& ps = ctx.model->parameters;
  result::write_hist(g, "parms", {out.shared("parms")}, x.data(), var.data());
  std::vector<std::string> pois(ps.names.begin(), ps.names.begin() + ps.npoi);
  VectorXd mu(ps.npoi), muvar(ps.npoi);
  for (int64_t i = 0; i < ps.npoi; ++i) {
    mu(i) = ps.squared_pois ? x(i) * x(i) : x(i);
    muvar(i) = ps.squared_pois ? 4.0 * x(i) * x(i) * var(i) : var(i);
  }
  result::write_hist(cpp, "poi_mu", {Axis::strcat("pois", pois)}, mu.data(), muvar.data());
}

}  // namespace rabbit::cli
