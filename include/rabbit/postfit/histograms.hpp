#pragma once
// Expected-yield histograms of the BaseMapping with their uncertainties (docs/output-format.md "Histogram uncertainties")
// and the linear chi2 (docs/output-format.md "Chi-square values"), from the CPU shard's yields and Jacobians.
#include <cstdint>

#include <Eigen/Core>

#include "rabbit/model/yield_model.hpp"
#include "rabbit/fit/fitter.hpp"
#include "rabbit/model/model.hpp"

namespace rabbit::postfit {

struct HistogramRequest {
  bool prefit = false;             // β at its stored value, J at fixed β; else β̂ and total J
  bool errors = false;             // inclusive variances
  bool covariance = false;         // inclusive covariance over all bins
  bool per_process = false;
  bool errors_per_process = false;
  bool chi2 = false;               // linear chi2 over the unmasked bins
};

struct HistogramResult {
  Eigen::VectorXd inclusive;        // [nbinsfull]
  Eigen::VectorXd inclusive_var;    // [nbinsfull]
  Eigen::MatrixXd inclusive_cov;    // [nbinsfull, nbinsfull]
  Eigen::MatrixXd per_process;      // [nbinsfull, nproc]
  Eigen::MatrixXd per_process_var;  // [nbinsfull, nproc]
  double chi2 = 0.0;  // +inf when a bin of zero variance has a nonzero residual
  int64_t ndf = 0;     // unmasked bins less those of zero variance and zero residual
};

/// Cov(y) = J C Jᵀ + J_β H_ββ⁻¹ J_βᵀ (the second term with MC stat on; H_ββ of L_β alone
/// prefit, of the full L at fixed x postfit). `cov` is the parameter covariance to propagate.
HistogramResult compute_histograms(const Model& model, YieldModel& shard, Fitter& fitter,
                                   const Eigen::VectorXd& x, const Eigen::MatrixXd& cov, const HistogramRequest& request);

}  // namespace rabbit::postfit
