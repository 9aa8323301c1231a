#pragma once
// What an observable regulariser (-r SVD on a masked channel) adds to the β terms of the postfit histograms
// with bin-by-bin statistics (docs/likelihood.md "Regularisation and β"). Internal to src/postfit
// (histograms.cpp).
#include <Eigen/Core>

#include "bb_response.hpp"
#include "rabbit/model/model.hpp"
#include "rabbit/model/yield_model.hpp"

namespace rabbit::postfit {

/// Per BB entry e: Σ_e' ∂²P/∂β_e∂β_e' of the weighted penalty P at the full yields ν (rabbit's pd2ldbeta2
/// is the gradient of ∂L/∂β with respect to all β at once: the row sums of H_ββ). Only masked-channel bins
/// enter the penalty with BB (src/backend/cpu/observable_regularizer.cpp), so only their entries are
/// non-zero. Zero-length when the model has no observable regulariser.
Eigen::VectorXd penalty_beta_row_sums(const Model& model, const Eigen::VectorXd& nu, const BBResponse& r);

/// The postfit chi2's response to the masked channels' β⁰ through x̂ (rabbit's dres/dβ⁰ = ∂r/∂x dx/dβ⁰,
/// dx/dβ⁰ = −C ∂²L/∂x∂β⁰): column e = JCo K_e · sqrt(Var β⁰_e) for the masked entries the penalty reads,
/// K_e = Jᵀ H_P U_e + g_b ∂U_be/∂x (g, H_P the penalty's gradient and Hessian in ν; U = ∂ν/∂β), so that
/// the chi2's covariance gains R Rᵀ. JCo = J_y C over the chi2's outputs [nyo × npar], J = ∂ν/∂x
/// [nbf × npar], d1 = dξ/dx. Var β⁰_e = c_e/q_e² (rabbit's var_beta0), 0 where q = 0.
Eigen::MatrixXd penalty_masked_beta_response(const Model& model, YieldModel& shard, const Eigen::VectorXd& xi,
                                             const Eigen::VectorXd& d1, const Eigen::VectorXd& nu,
                                             const Eigen::MatrixXd& J, const Eigen::MatrixXd& JCo,
                                             const BBResponse& r);

}  // namespace rabbit::postfit
