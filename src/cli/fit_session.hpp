#pragma once
// The minimisation policy of a run (docs/minimizers.md): the minimizer options from the command
// line, the preconditioner for each restricted objective, the full fit with its log and
// certificate, and the hand-over of the certificate's Hessian to the covariance step.
#include <Eigen/Core>
#include <memory>
#include <vector>

#include "fit_context.hpp"
#include "rabbit/minimize/minimizer.hpp"
#include "rabbit/postfit/scans.hpp"
#include "snapshot_writer.hpp"

namespace rabbit::cli {

class FitSession {
 public:
  explicit FitSession(FitContext& ctx);

  /// Minimises the fitter over the floating parameters from x0; log_iterations logs every
  /// iteration and the preconditioner selection. Keeps the certificate's Hessian (take_fit_hessian).
  /// With --snapshotFile, snapshots the iterations and the end point (snapshot_writer.hpp).
  Eigen::VectorXd minimize_full(const Eigen::VectorXd& x0, bool log_iterations, MinimizerResult* result);
  /// --forceLinear: one Newton step over the floating parameters from x0 (linear_step.cpp).
  Eigen::VectorXd newton_step_full(const Eigen::VectorXd& x0, MinimizerResult* result);
  /// Minimises `obj` over `floating` from x, silently (profiles of scans and contours, refits of
  /// impacts); `result` (optional) gets the minimizer's summary.
  Eigen::VectorXd profile_minimize(Objective& obj, const std::vector<int64_t>& floating,
                                   const Eigen::VectorXd& x, MinimizerResult* result = nullptr);

  /// The gradient and Hessian that certified the last minimize_full, at its end point, once: the
  /// covariance step uses them instead of evaluating the Hessian again. False when there are none.
  bool take_fit_hessian(Eigen::VectorXd& grad, Eigen::MatrixXd& hess);
  /// Forgets a kept Hessian (a new fit starts).
  void forget_fit_hessian();

 private:
  PreconditionerOptions preconditioner_for(postfit::RestrictedObjective& sub,
                                           const std::vector<int64_t>& floating, bool on_fitter,
                                           bool log_selection) const;
  Eigen::MatrixXd gauss_newton_matrix(postfit::RestrictedObjective& sub, const Eigen::VectorXd& y) const;

  FitContext& ctx_;
  MinimizerOptions min_options_;
  bool fit_hessian_valid_ = false;
  Eigen::VectorXd fit_grad_;
  Eigen::MatrixXd fit_hessian_;
  std::unique_ptr<SnapshotWriter> snapshots_;  // --snapshotFile: the full fits' progress
};

}  // namespace rabbit::cli
