#pragma once
// --scan and --contourScan (docs/output-format.md "Likelihood scans and contours"): profile likelihood scans
// of single parameters and contour points, minimised by the fit session's policy.
#include <Eigen/Core>

#include "fit_context.hpp"
#include "fit_session.hpp"
#include "result_layout_writer.hpp"

namespace rabbit::cli {

/// Writes nll_scan_<parameter> for each --scan parameter and contour_scan for --contourScan,
/// around the fitted x with covariance cov.
void write_scans(FitContext& ctx, FitSession& session, ResultLayoutWriter& out, result::Group group,
                 const Eigen::VectorXd& x, const Eigen::MatrixXd& cov);

}  // namespace rabbit::cli
