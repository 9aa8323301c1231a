#pragma once
// The β response of the expected yields that histograms.cpp and the histogram impacts share (internal to
// src/postfit; docs/likelihood.md "Applying β to the yields").
#include <Eigen/Core>
#include <cstdint>

#include "rabbit/fit/fitter.hpp"
#include "rabbit/model/model.hpp"
#include "rabbit/model/yield_model.hpp"
#include "rabbit/postfit/mapping.hpp"

namespace rabbit::postfit {

// The linear response of the yields to the BB parameters β at one point (docs/likelihood.md "Applying β to
// the yields"): dN[b, p] = ∂Ñ_bp/∂β_e with e = entry(b, p), and the curvatures of L in β.
struct BBResponse {
  bool full = false;
  int64_t nproc = 0;
  Eigen::MatrixXd dN;    // [nbinsfull, nproc]
  Eigen::VectorXd beta;  // β_e used (stored or profiled)
  Eigen::VectorXd c;  // ∂²L_β/∂β_e² (constraint curvature), 0 for masked gamma/multiplicative entries
  Eigen::VectorXd q;  // |∂²L_β/∂β_e∂β⁰_e|
  int64_t entry(int64_t b, int64_t p) const { return full ? b * nproc + p : b; }
};

/// The response at x: β stored (prefit) or profiled β̂(x).
BBResponse bb_response(const Model& model, YieldModel& shard, Fitter& fitter, const Eigen::VectorXd& x,
                       const Eigen::VectorXd& xi, bool prefit);

/// ∂N/∂β [nbinsfull·nproc × entries], rows b·nproc + p (the columns of Mapping::jacobian_processes): one
/// nonzero dN(b, p) per process of a bin, at its entry.
MappingJacobian process_beta_rows(const BBResponse& r);

/// dβ̂/dx [nentries_observed × npar] (0 for frozen columns, d1 = dξ/dx = 0): the yield model's analytic
/// dβ̂/dξ · diag(d1) (docs/likelihood.md "Profiled β"; one pass over the tensor), or, where the model
/// does not offer it (a covariance fit's one global profile), central differences of the profile.
Eigen::MatrixXd profiled_beta_jacobian(const Model& model, YieldModel& shard, Fitter& fitter,
                                       const Eigen::VectorXd& x, const Eigen::VectorXd& xi,
                                       const Eigen::VectorXd& d1);

}  // namespace rabbit::postfit
