#pragma once
// The MC-statistical (Barlow–Beeston) part of the global impacts on histogram bins (docs/output-format.md
// "Global impacts on histogram bins"), from the β response that compute_histograms already holds. Internal to
// src/postfit (histograms.cpp).
#include <Eigen/Core>
#include <cstdint>

#include "rabbit/fit/fitter.hpp"
#include "rabbit/model/model.hpp"
#include "rabbit/model/yield_model.hpp"
#include "rabbit/postfit/mapping.hpp"

namespace rabbit::postfit {

/// What the β part needs; sizes: ny outputs, nbf input bins, ne β entries, npar parameters.
struct BetaImpactTerms {
  const MappingJacobian* A = nullptr;  // ∂y/∂ν [ny × nbf]; nullptr: the identity
  // (a process-selecting mapping: A = ∂y/∂vec(N) and UH's rows b·nproc + p, U = ∂N/∂β)
  // The direct response U H_ββ⁻¹ [nbf × ne] with U = ∂ν/∂β (rabbit's pdexpdbeta before the mapping), for an
  // H_ββ that is diagonal per entry or block-diagonal per bin, so that it is as sparse as U; with Hinv given,
  // U alone. No nonzeros: no direct response.
  MappingJacobian UH;
  const Eigen::MatrixXd* Hinv = nullptr;  // the covariance fit's dense H_ββ⁻¹ (postfit)
  Eigen::VectorXd s2;                     // the weight of each entry's squared impact [ne]
  const Eigen::MatrixXd* B = nullptr;  // dβ̂/dx [ne_obs × npar]; nullptr or empty prefit (β not profiled)
  bool full = false;                   // entries e = b·nproc + p
  int64_t nproc = 1;
};

/// Squared MC-stat impacts per output: total [ny] and, in full mode, per process [ny × nproc].
struct BetaImpacts {
  Eigen::VectorXd total_sq;
  Eigen::MatrixXd per_process_sq;
};

/// rabbit's impacts_beta0[e, i] = S_β,e (M[e, i] + D[e, i]) with M = dβ̂/dx · C J_yᵀ (the profiled response)
/// and D = (A U H⁻¹)ᵀ (the direct one), squared and summed over the entries; JC = J_y C [ny × npar]. The
/// Gaussian kind has the same form with its own weights and the exact H⁻¹.
/// Without a dense H⁻¹ the Σ_e S² M² part is diag(JC G JCᵀ) with G = Bᵀ S² B [npar × npar] and D is as
/// sparse as A U, so that nothing of size entries × outputs is built (docs/architecture.md "Mappings").
BetaImpacts hist_beta_impacts(const BetaImpactTerms& t, const Eigen::MatrixXd& JC);

}  // namespace rabbit::postfit

namespace rabbit::postfit {

/// The Gaussian kind's data-stat and MC-stat parts per output (rabbit's gaussian_global_impacts_obs,
/// docs/output-format.md "Gaussian global impacts on histogram bins"): squared, [ny] and, BB full mode,
/// [ny × nproc]. A = ∂y/∂ν (nullptr: identity) or, `by_process`, ∂y/∂vec(N) of a process-selecting mapping;
/// JC = J_y C as the histogram takes J_y (through β̂ when `profile`), x̂'s response from the profiled
/// likelihood at x. Throws OptionError for the cases it does not cover (--covarianceFit with BB, beta
/// variations).
struct GaussianHistImpacts {
  Eigen::VectorXd stat_sq;
  Eigen::VectorXd bb_sq;
  Eigen::MatrixXd bb_proc_sq;
};
GaussianHistImpacts gaussian_hist_impacts(const Model& model, YieldModel& shard, Fitter& fitter,
                                          const MappingJacobian* A, bool by_process, const Eigen::VectorXd& x,
                                          const Eigen::MatrixXd& JC, bool profile);

}  // namespace rabbit::postfit
