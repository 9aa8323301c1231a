#pragma once
// The two parts of global impacts that are not read off the covariance (docs/output-format.md
// "Global impacts", "Gaussian global impacts"): the MC-statistical part from the profiled Barlow–Beeston
// parameters β̂(x), and the data-statistical part of the Gaussian kind from the profiled yield Jacobian.
#include <Eigen/Core>
#include <cstdint>
#include <vector>

#include "rabbit/fit/fitter.hpp"
#include "rabbit/model/model.hpp"
#include "rabbit/model/yield_model.hpp"

namespace rabbit::postfit {

/// Squared MC-stat global impacts: total [nimp] and, in BB full mode, per process [nimp, nproc]
/// (empty otherwise).
struct McStatImpacts {
  Eigen::VectorXd total_sq;
  Eigen::MatrixXd per_process_sq;
};

/// a_r = S_β · (dβ̂/dx · C e_r) per reported parameter r, with S_β² the curvature of L_β at β̂
/// (k β⁰/β̂² gamma, k normal-multiplicative, 1 normal; 0 where masked). dβ̂/dx is the yield
/// model's analytic dβ̂/dξ times dξ/dx; for covariance fits, which do not offer it, the directional
/// derivative dβ̂/dx · w is taken by central differences of the profile (step 1e-4 of the largest |w_i|).
McStatImpacts mc_stat_global_impacts(const Model& model, Fitter& fitter, YieldModel& cpu,
                                     const Eigen::VectorXd& x, const Eigen::MatrixXd& cov,
                                     const std::vector<int64_t>& reported, bool bb_full, int64_t nproc);

/// Squared data-stat part of Gaussian global impacts per reported parameter r:
/// (J w)ᵀ W V_n W (J w) with w = C e_r and J the profiled yield Jacobian in x (Poisson: W V_n W =
/// n/ν²; χ²: 1/var; covariance fits: the inverse data covariance).
Eigen::VectorXd gaussian_stat_impacts_sq(const Model& model, const FitInputData& input, Fitter& fitter,
                                         YieldModel& cpu, const Eigen::VectorXd& x,
                                         const Eigen::MatrixXd& cov, const std::vector<int64_t>& reported);

}  // namespace rabbit::postfit
