#pragma once
// The covariance fit's parts outside the evaluation (covariance_fit.cpp holds the coupled
// evaluation itself as ShardEvaluation members).
#include <Eigen/Core>

#include "shard_evaluation.hpp"

namespace rabbit::cpu_detail {

/// C⁻¹ (the file's inverse covariance, or the variances' inverse as rabbit intends) and, for
/// normal-additive BB, the Woodbury form of (C + diag V)⁻¹; nothing unless the fit is coupled.
void build_covariance_matrices(ShardState& s);

/// Covariance fit, normal-multiplicative: dν/dξ [B × n] of the observed bins' yields through
/// rabbit's closed-form β̂; beta_jac (optional, full mode) receives dβ̂/dξ of every observed entry.
Eigen::MatrixXd coupled_multiplicative_jacobian(const ShardEvaluation& eng,
                                                Eigen::MatrixXd* beta_jac = nullptr);

}  // namespace rabbit::cpu_detail
