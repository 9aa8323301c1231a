#include "fit_session.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include "rabbit/core/logging.hpp"
#include "rabbit/core/termination.hpp"

namespace rabbit::cli {

using Eigen::MatrixXd;
using Eigen::VectorXd;

FitSession::FitSession(FitContext& ctx) : ctx_(ctx) {
  const auto& o = ctx.options;
  min_options_.method = o.minimizer_method;
  min_options_.maxiter = o.minimizer_maxiter.value_or(-1);
  min_options_.gtol = o.minimizer_gtol.value_or(0.0);
  min_options_.early_stopping = static_cast<int>(o.early_stopping);
  min_options_.stall_rel_tol = o.stall_rel_tol;
  min_options_.max_restarts = static_cast<int>(o.max_restarts);
  min_options_.hvp_batch = o.hvp_batch;
  min_options_.linalg = &ctx.fitter->dense_linalg();  // cuSOLVER when the fit runs on a GPU
  min_options_.edm_tol = o.edm_tol;
  PreconditionerOptions& pc = min_options_.precondition;
  pc.enabled = o.precondition;
  pc.blocks = o.precondition_blocks;
  pc.block_threshold = o.precondition_block_threshold;
  pc.from = o.precondition_from;
  pc.ridge = o.precondition_ridge;
  pc.transform = o.precondition_transform;
  validate(pc);
  if (o.snapshot_file)
    snapshots_ = std::make_unique<SnapshotWriter>(*o.snapshot_file, o.snapshot_interval_hours,
                                                  ctx.model->parameters.names);
}

// --preconditionParams resolved against the coordinates of one restricted objective
// (docs/minimizers.md "Preconditioner"): each expression is a systematic-group name or a
// name/full-match regex; parameters that do not float here (frozen, or fixed by a scan) drop out.
PreconditionerOptions FitSession::preconditioner_for(postfit::RestrictedObjective& sub,
                                                     const std::vector<int64_t>& floating, bool on_fitter,
                                                     bool log_selection) const {
  PreconditionerOptions po = min_options_.precondition;
  if (!po.enabled) return po;
  const auto& ps = ctx_.model->parameters;
  const auto& layout = ctx_.layout;
  std::vector<int64_t> position(static_cast<size_t>(ps.size()), -1);
  for (size_t k = 0; k < floating.size(); ++k) position[floating[k]] = static_cast<int64_t>(k);
  auto add_set = [&](const std::vector<int64_t>& params, const std::string& label) {
    std::vector<int64_t> set;
    for (auto i : params)
      if (position[i] >= 0) set.push_back(position[i]);
    po.index_sets.push_back(std::move(set));
    po.index_set_labels.push_back(label);
  };
  po.index_sets.clear();
  po.index_set_labels.clear();
  if (ctx_.options.precondition_params.empty()) {
    std::vector<int64_t> unconstrained;
    for (int64_t i = 0; i < ps.size(); ++i)
      if (ps.constraint_weights[i] == 0.0) unconstrained.push_back(i);
    add_set(unconstrained, "unconstrained");
  } else {
    for (const auto& expr : ctx_.options.precondition_params) {
      std::vector<int64_t> members;
      const auto g = std::find(layout.group_names.begin(), layout.group_names.end(), expr);
      if (g != layout.group_names.end())
        members = layout.groups[static_cast<size_t>(g - layout.group_names.begin())];
      else
        members = match_names({expr}, ps.names, "--preconditionParams");
      if (members.empty()) {
        if (log_selection)
          log().warn("--preconditionParams: '{}' matches no parameter or group; skipped", expr);
        continue;
      }
      add_set(members, expr);
    }
  }
  // No set at all would mean "every coordinate" to Preconditioner::build; an empty set keeps an
  // empty selection empty (it then warns and runs unpreconditioned).
  if (po.index_sets.empty()) {
    po.index_sets.emplace_back();
    po.index_set_labels.emplace_back("none");
  }
  if (po.from == "gaussnewton") {
    if (on_fitter)
      po.reference_matrix = [this, &sub](const VectorXd& y) { return gauss_newton_matrix(sub, y); };
    else if (log_selection)
      log().warn("--preconditionFrom gaussnewton needs the fit's own likelihood; using the exact Hessian");
  }
  return po;
}

// Fisher information (docs/minimizers.md "Preconditioner"): the exact Hessian with the observed
// data temporarily replaced by the prediction at x (data variances kept), restored even if the
// evaluation throws.
MatrixXd FitSession::gauss_newton_matrix(postfit::RestrictedObjective& sub, const VectorXd& y) const {
  auto& fitter = *ctx_.fitter;
  const VectorXd x = sub.expand(y);
  VectorXd prediction;
  fitter.yield_model().expected_yields(ctx_.xi(x), 0, ctx_.input->nbins, YieldModel::BetaMode::profiled,
                                       &prediction);
  const VectorXd saved_nobs = fitter.observed();
  const VectorXd saved_variances = fitter.observed_variances();
  MatrixXd hess;
  VectorXd grad;
  fitter.set_observed(prediction, saved_variances);
  try {
    sub.value_grad_hess(y, grad, hess);
  } catch (...) {
    fitter.set_observed(saved_nobs, saved_variances);
    throw;
  }
  fitter.set_observed(saved_nobs, saved_variances);
  return hess;
}

VectorXd FitSession::profile_minimize(Objective& obj, const std::vector<int64_t>& floating, const VectorXd& x,
                                      MinimizerResult* result) {
  postfit::RestrictedObjective sub(obj, floating, x);
  MinimizerOptions mo = min_options_;
  mo.callback = nullptr;
  mo.precondition = preconditioner_for(sub, floating, &obj == ctx_.fitter.get(), false);
  MinimizerResult r = minimize(sub, sub.restrict(x), mo);
  VectorXd out = sub.expand(r.x);
  if (result) *result = std::move(r);
  return out;
}

VectorXd FitSession::minimize_full(const VectorXd& x0, bool log_iterations, MinimizerResult* result) {
  postfit::RestrictedObjective sub(*ctx_.fitter, ctx_.layout.floating, x0);
  MinimizerOptions mo = min_options_;
  mo.precondition = preconditioner_for(sub, ctx_.layout.floating, true, log_iterations);
  double last_elapsed = 0.0;
  if (log_iterations || snapshots_)
    mo.callback = [&](const IterationInfo& it) {
      if (log_iterations) {
        log().debug("Iteration {}: loss {}  [dt={:.3f}s elapsed={:.3f}s] change={} radius={} |g|={}{}",
                    it.iteration, py_float(it.f), it.elapsed_s - last_elapsed, it.elapsed_s,
                    py_float(it.delta_f), py_float(it.radius), py_float(it.grad_norm),
                    it.accepted ? "" : " (rejected)");
        last_elapsed = it.elapsed_s;
      }
      if (snapshots_) snapshots_->on_iteration(sub.expand(*it.x));
    };
  // SIGTERM/SIGUSR1 wait for the next iteration's snapshot (rabbit/core/termination.hpp).
  std::optional<termination::DeferTerminationForSnapshot> defer;
  if (snapshots_) defer.emplace();
  std::string opts = fmt::format("'maxiter': {}, 'gtol': {}",
                                 min_options_.maxiter > 0 ? min_options_.maxiter : 200 * sub.size(),
                                 py_float(min_options_.gtol));
  log().info("Perform iterative fit");
  log().info("[minimize] method={} options={{{}}}", ctx_.options.minimizer_method, opts);
  // The end point is certified with the dense Hessian that the covariance needs anyway (it is
  // handed over by take_fit_hessian), or by CG on HVPs under --noHessian (docs/minimizers.md
  // "Convergence").
  mo.certify = ctx_.options.no_hessian ? MinimizerOptions::Certify::hvp : MinimizerOptions::Certify::dense;
  *result = minimize(sub, sub.restrict(x0), mo);
  defer.reset();
  if (snapshots_) snapshots_->on_minimum(sub.expand(result->x));
  log().debug("minimizer ended: status {} ({}), {} iterations, {} evaluations", result->status,
              result->message, result->iterations, result->nfev);
  if (!result->converged)
    log().warn("The fit did not converge: {}; EDM {:.3g} (tolerance {:.3g}), largest scaled gradient {:.3g}",
               result->stop_reason, result->edm, mo.edm_tol * std::max(1.0, std::abs(result->f)),
               result->max_scaled_grad);
  VectorXd x = sub.expand(result->x);
  fit_hessian_valid_ = sub.take_full_hessian(x, fit_grad_, fit_hessian_);
  return x;
}

bool FitSession::take_fit_hessian(VectorXd& grad, MatrixXd& hess) {
  if (!fit_hessian_valid_) return false;
  grad = std::move(fit_grad_);
  hess = std::move(fit_hessian_);
  fit_hessian_valid_ = false;
  return true;
}

void FitSession::forget_fit_hessian() {
  fit_hessian_valid_ = false;
  fit_hessian_.resize(0, 0);
}

}  // namespace rabbit::cli
