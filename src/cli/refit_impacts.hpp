#pragma once
// Impacts by refits (docs/output-format.md "Impacts by refits"): each source is shifted by ±1 prefit σ
// (a frozen parameter's value and centre for --nonProfiledImpacts, a constraint centre for
// --globalAsymImpacts) and the fit is repeated from the best fit; the shifts of every parameter are written
// as rabbit's [impacts, downUpVar, parms] histograms with their grouped quadrature envelopes. The
// contour-based --asymImpacts (asym_impacts.hpp) run between the two, in upstream's order.
#include <Eigen/Core>

#include "fit_context.hpp"
#include "fit_session.hpp"
#include "result_layout_writer.hpp"

namespace rabbit::cli {

/// Writes `name` as rabbit's [impacts (labels), downUpVar, parms] histogram; row 2k + b of `rows` is
/// source k, bin b.
void write_down_up_table(ResultLayoutWriter& out, result::Group group, const std::string& name,
                         const std::vector<std::string>& labels, const Eigen::MatrixXd& rows);

/// Whether any refit impact kind is requested.
bool refit_impacts_requested(const FitOptions& o);

/// Refuses, before any fit, a requested kind without sources: --nonProfiledImpacts without a frozen
/// parameter, --globalAsymImpacts whose selection holds no constrained parameter (OptionError, one line).
void check_refit_impacts(const FitContext& ctx);

/// Writes the requested refit impact kinds (and --asymImpacts) into `group`. x is the best fit; cov its
/// covariance (read by --asymImpacts and --globalAsymImpactsLinearWarmstart; have_cov false: none). The
/// model's constraint centres are restored before returning.
void write_refit_impacts(FitContext& ctx, FitSession& session, ResultLayoutWriter& out, result::Group group,
                         const Eigen::VectorXd& x, const Eigen::MatrixXd& cov, bool have_cov);

}  // namespace rabbit::cli
