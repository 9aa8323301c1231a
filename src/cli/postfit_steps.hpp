#pragma once
// The postfit steps of one fit that write into its result group (docs/output-format.md): the
// minimizer's summary, the covariance (with the impacts that need its Hessian), the likelihood
// values and the fitted parameters.
#include <Eigen/Core>

#include "fit_context.hpp"
#include "fit_session.hpp"
#include "result_layout_writer.hpp"

namespace rabbit::cli {

/// epoch_loss/epoch_time and the _cpp minimizer diagnostics of the reported fit.
/// epochs: also the epoch_loss/epoch_time histograms (not for --forceLinear, which has no iterations,
/// as upstream writes none).
void write_minimizer_summary(result::Group group, result::Group cpp, const MinimizerResult& mr,
                             bool epochs = true);

/// The covariance at x: from the certificate's Hessian (or a new one), with the EDM and the
/// requested impacts; under --noHessian the EDM and the reported variances by CG on
/// Hessian-vector products. variances gets the diagonal (NaN where not computed); cov and have_cov
/// are set only when a covariance was computed.
void postfit_uncertainties(FitContext& ctx, FitSession& session, ResultLayoutWriter& out, result::Group group,
                           const Eigen::VectorXd& x, Eigen::VectorXd& variances, Eigen::MatrixXd& cov,
                           bool& have_cov);

/// The saturated chi2 (logged), nllvalreduced, ndfsat, postfit_profile and, with --fullNll,
/// nllvalfull.
void write_likelihood_values(FitContext& ctx, result::Group group, const Eigen::VectorXd& x);

/// parms (values and variances) and _cpp/poi_mu (mu = x² or x, linearised variance).
void write_parameters(FitContext& ctx, ResultLayoutWriter& out, result::Group group, result::Group cpp,
                      const Eigen::VectorXd& x, const Eigen::VectorXd& variances);

}  // namespace rabbit::cli
