#pragma once
// --asymImpacts (docs/output-format.md "Asymmetric impacts from contours"): for each selected nuisance the
// two points of the Δ(2NLL) = 1 contour that extremise it, as rabbit's impacts_asym; grouped by freezing each
// group and comparing the POI/NOI intervals (impacts_asym_grouped).
#include <Eigen/Core>

#include "fit_context.hpp"
#include "fit_session.hpp"
#include "result_layout_writer.hpp"

namespace rabbit::cli {

/// Writes impacts_asym and impacts_asym_grouped into `group`; x is the best fit, cov its covariance (the
/// contour searches' Gaussian start).
void write_asym_impacts(FitContext& ctx, FitSession& session, ResultLayoutWriter& out, result::Group group,
                        const Eigen::VectorXd& x, const Eigen::MatrixXd& cov);

}  // namespace rabbit::cli
