#pragma once
// --lCurveScan and --lCurveOptimize (docs/user-guide.md "Regularization", docs/model.md "The L curve"):
// run before the fit of each result group, as rabbit's fit() does; they write step_tau/step_lcurve
// and best_tau/best_lcurve into the group.
#include <Eigen/Core>

#include "fit_context.hpp"
#include "fit_session.hpp"
#include "rabbit/postfit/result_tree.hpp"

namespace rabbit::cli {

/// The requested L-curve steps from x, which becomes the last minimum they reached (the fit starts
/// there, as rabbit's does). The scan leaves τ as it found it; the optimisation leaves the τ it found,
/// which the fit then uses.
void run_l_curve_steps(FitContext& ctx, FitSession& session, result::Group group, Eigen::VectorXd& x);

}  // namespace rabbit::cli
