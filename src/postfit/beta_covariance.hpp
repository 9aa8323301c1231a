#pragma once
// The bin-by-bin part of the postfit histogram covariance (internal to src/postfit): the covariance of
// the yields through β, in rabbit's forms (docs/likelihood.md "Profiled β", docs/differences-from-rabbit.md
// for the full mode's row sums). compute_histograms (histograms.cpp) builds one per call.
#include <Eigen/Core>
#include <cstdint>

#include "bb_response.hpp"
#include "rabbit/postfit/mapping.hpp"

namespace rabbit::postfit {

struct BetaCovariance {
  bool bb;                                  // bin-by-bin statistics in the model
  int64_t nobs, nbf, P;                     // observed bins, all bins, processes
  const BBResponse& bbr;                    // ∂ν/∂β and the β curvatures
  const Eigen::VectorXd& dd;                // ℓ''_b: the data term's curvature per bin (postfit), else 0
  const Eigen::MatrixXd& Hinv;              // the covariance fit's dense H_ββ⁻¹, else empty
  const Eigen::MatrixXd& betavar_partials;  // ∂ν_b/∂β_e of beta variations, else empty
  const Eigen::VectorXd& penalty_rows;      // an observable regulariser's row sums in β, else empty

  double penalty_row(int64_t e) const { return penalty_rows.size() ? penalty_rows(e) : 0.0; }
  /// A curvature that divides: positive, or (rabbit's rule) any non-zero row sum that the penalty
  /// enters; its Laplacian makes that row sum negative in some bins, and rabbit divides by it all the same.
  bool divides(double H, int64_t e) const { return H > 0.0 || (H != 0.0 && penalty_row(e) != 0.0); }
  /// The row sum of H_ββ over entry e's bin (full mode).
  double entry_row_sum(int64_t e) const;
  /// Full mode: u_e² / (row sum of H_ββ over the bin's entries), H_ββ = diag(c) + ℓ''_b u uᵀ.
  double full_entry_var(int64_t b, int64_t p) const;
  /// The β covariance term of the inclusive yields of bins b, b'. exact_block: the exact inverse of the
  /// bin's H_ββ block in full mode (the linear chi2, where rabbit is exact too); otherwise rabbit's
  /// row-sum form of the histogram variances.
  double incl_cov(int64_t b, int64_t bp, bool exact_block = false) const;
  /// The β variance of process p's yield in bin b.
  double proc_var(int64_t b, int64_t p) const;
  /// R = ∂ν/∂β over bins [0, nb) with the rows incl_cov takes (the covariance fit's dense form).
  Eigen::MatrixXd rows(int64_t nb) const;
  /// incl_cov(b, b) over bins [0, nb).
  Eigen::VectorXd diagonal(int64_t nb, bool exact_block) const;
  /// The β part of Cov(ν) over bins [0, nb) seen through a block Ar = A[rows, 0:nb] of a mapping:
  /// Ar·Cβ [rows × nb]. Cβ is dense only with the covariance fit's H_ββ⁻¹ (then through rows());
  /// otherwise it is diagonal and Ar·Cβ scales the columns of Ar.
  Eigen::MatrixXd mapped_left(const MappingJacobian& Ar, bool exact_block) const;
  /// The diagonal of Ar·Cβ·Arᵀ.
  Eigen::VectorXd mapped_var(const MappingJacobian& Ar) const;
  /// The β part of a mapping A of N: G = A U with U[b·P + p, e(b, p)] = ∂N_bp/∂β_e, and Cov(β) the dense
  /// H_ββ⁻¹ of the covariance fit (cbeta left empty), else diagonal in cbeta: 1/H_b per bin (lite) or
  /// the entry's 1/(row sum of H_ββ) (full), the forms incl_cov takes for the inclusive bins.
  void process_terms(const MappingJacobian& A, MappingJacobian& G, Eigen::VectorXd& cbeta) const;
};

}  // namespace rabbit::postfit
