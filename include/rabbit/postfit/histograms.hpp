#pragma once
// Expected-yield histograms of a mapping with their uncertainties (docs/output-format.md "Histogram
// uncertainties") and the linear chi2 (docs/output-format.md "Chi-square values"), from the CPU shard's
// yields and Jacobians.
#include <Eigen/Core>
#include <algorithm>
#include <cstdint>

#include "rabbit/fit/fitter.hpp"
#include "rabbit/model/model.hpp"
#include "rabbit/model/yield_model.hpp"
#include "rabbit/postfit/mapping.hpp"

namespace rabbit::postfit {

struct HistogramRequest {
  bool prefit = false;      // β at its stored value, J at fixed β; else β̂ and total J
  bool errors = false;      // inclusive variances
  bool covariance = false;  // inclusive covariance over all bins
  bool per_process = false;
  bool errors_per_process = false;
  bool chi2 = false;            // linear chi2 over the unmasked bins
  bool global_impacts = false;  // rabbit's global impacts per bin (docs/output-format.md "Global impacts on
                                // histogram bins"); computes inclusive_var too
  bool gaussian_global_impacts = false;  // the Gaussian kind ("Gaussian global impacts on histogram bins")
  int threads = 1;  // for the large dense products: the fit's thread budget (docs/architecture.md "Threads")
};

/// Sizes are the mapping's: ny = Mapping::size() (nbinsfull for BaseMapping).
struct HistogramResult {
  Eigen::VectorXd inclusive;        // [ny]
  Eigen::VectorXd inclusive_var;    // [ny]
  Eigen::MatrixXd inclusive_cov;    // [ny, ny]
  Eigen::MatrixXd per_process;      // [ny, nproc]
  Eigen::MatrixXd per_process_var;  // [ny, nproc]
  // Global impacts: per source sqrt(cw_j) (J_y C)[i, j] [ny, npar] and the squared MC-stat parts [ny] and,
  // BB full mode, [ny, nproc] (empty without BB); the data-stat part is the remainder of inclusive_var.
  Eigen::MatrixXd impacts;
  Eigen::VectorXd impacts_bb_sq;
  Eigen::MatrixXd impacts_bb_proc_sq;
  // Gaussian kind: the same per source (impacts), its own squared data-stat [ny] and MC-stat parts.
  Eigen::VectorXd gaussian_stat_sq;
  Eigen::VectorXd gaussian_bb_sq;
  Eigen::MatrixXd gaussian_bb_proc_sq;
  double chi2 = 0.0;  // +inf when a bin of zero variance has a nonzero residual
  int64_t ndf = 0;    // observed outputs less those of zero variance and zero residual, less ndf_reduction
};

/// y = f(ν) of `mapping` and Cov(y) = A (J C Jᵀ + J_β H_ββ⁻¹ J_βᵀ) Aᵀ with A = ∂y/∂ν (the second term
/// with MC stat on; H_ββ of L_β alone prefit, of the full L at fixed x postfit), computed as (A J) C (A J)ᵀ
/// so that no bins × bins matrix is built for a mapping; `cov` is the parameter covariance to propagate.
/// The chi2 covers the mapping's observed outputs.
HistogramResult compute_histograms(const Model& model, YieldModel& shard, Fitter& fitter,
                                   const Mapping& mapping, const Eigen::VectorXd& x,
                                   const Eigen::MatrixXd& cov, const HistogramRequest& request);
/// The same for BaseMapping.
HistogramResult compute_histograms(const Model& model, YieldModel& shard, Fitter& fitter,
                                   const Eigen::VectorXd& x, const Eigen::MatrixXd& cov,
                                   const HistogramRequest& request);

/// Bins per piece of the BaseMapping's per-process variances (the nbins·nproc × npar Jacobian is made piece
/// by piece): a multiple of 192 bins, so that the values equal one product over all rows; at least 768 bins
/// and 256 per thread, so that the shard's Jacobian pass has a 256-bin piece for every thread.
inline int64_t per_process_piece_bins(int64_t threads) {
  return (std::max<int64_t>(768, 256 * threads) + 191) / 192 * 192;
}

}  // namespace rabbit::postfit
