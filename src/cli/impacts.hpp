#pragma once
// Impacts of the systematic uncertainties on the reported parameters (docs/output-format.md
// "Traditional impacts", "Global impacts", "Gaussian global impacts"): one registry of impact kinds, each a
// per-parameter and a grouped histogram. Adding a kind is one entry in impact_kinds() (impacts.cpp).
#include <Eigen/Core>

#include "fit_context.hpp"
#include "result_layout_writer.hpp"

namespace rabbit::cli {

/// Whether any impact kind is requested (they need the covariance and the Hessian).
bool impacts_requested(const FitOptions& o);

/// Writes the requested impact kinds into `group`, at the fitted x with covariance cov and the
/// profiled Hessian hess.
void write_impacts(FitContext& ctx, ResultLayoutWriter& out, result::Group group, const Eigen::VectorXd& x,
                   const Eigen::MatrixXd& cov, const Eigen::MatrixXd& hess);

}  // namespace rabbit::cli
