#pragma once
// The linear chi2's quadratic form rᵀV⁻¹r (docs/output-format.md "Chi-square values"): from a dense V, or
// from V over the observed bins as a diagonal plus a low-rank part, which costs O(nobs·npar²) instead of the
// O(nobs³) of a dense V ("Cost of the chi2 with many bins"). Internal to src/postfit (histograms.cpp).
#include <Eigen/Core>
#include <Eigen/SparseCore>
#include <cstdint>
#include <optional>

#include "parallel_products.hpp"

namespace rabbit::postfit {

/// The postfit V = diag(delta) + U S Uᵀ [n × n], U [n × 2p], S = [[X, 1], [1, 0]] with X [p × p], whose
/// inverse [[0, 1], [1, −X]] is known without a product.
struct DiagonalPlusLowRank {
  Eigen::VectorXd delta;
  Eigen::MatrixXd U;
  Eigen::MatrixXd X;
};

/// The terms of V for the identity mapping with diagonal data variances and H_ββ diagonal or per-bin
/// blocks (no covariance fit, no penalty on β). With J = ∂ν/∂x on the observed bins, C the parameter
/// covariance, d_β the β part of Var(ν) per bin (exact block), v_n the data variances:
///   prefit   V = J C Jᵀ + diag(d_β + v_n);
///   postfit  V = R_x0 diag(cw) R_x0ᵀ + R_n diag(v_n) R_nᵀ + R_b0 diag(s) R_b0ᵀ, R_x0 = J C,
///            R_n = (J C Jᵀ + diag(d_β)) diag(w) − 1, R_b0 = J C Bᵀ + D,
/// which is diag(e²v_n + rowsum(D² s)) + [JC, K] [[X, 1], [1, 0]] [JC, K]ᵀ with e = d_β w − 1,
/// K = diag(w v_n e) J + D diag(s) B and X = diag(cw) + Jᵀ diag(w² v_n) J + Bᵀ diag(s) B.
struct LinearChi2Terms {
  bool postfit = false;
  const Eigen::MatrixXd* J = nullptr;   // [nobs × npar]
  const Eigen::MatrixXd* C = nullptr;   // prefit: the parameter covariance
  const Eigen::MatrixXd* JC = nullptr;  // postfit: J C [nobs × npar] (linear_chi2_low_rank only)
  Eigen::VectorXd beta_var;             // d_β [nobs] (empty: 0)
  Eigen::VectorXd data_var;             // v_n [nobs]
  // postfit only
  Eigen::VectorXd w;                   // ∂²L/∂ν∂n per bin (its minus)
  Eigen::VectorXd cw;                  // constraint weights, 0 for frozen parameters
  const Eigen::MatrixXd* B = nullptr;  // dβ̂/dx [ne × npar], null without bin-by-bin statistics
  Eigen::VectorXd h;                   // or B = diag(h) J [nobs] as the yield model gives it (lite BB)
  Eigen::VectorXd s;                   // q² Var(β⁰) per entry [ne]
  Eigen::SparseMatrix<double> D;       // direct β̂ response at fixed x [nobs × ne], one bin per row
};

/// The postfit form of any terms (full bin-by-bin statistics included); throws for prefit terms.
DiagonalPlusLowRank linear_chi2_low_rank(const LinearChi2Terms& t, ParallelProducts& prod);

/// rᵀV⁻¹r of the prefit form, V = diag(d_β + v_n) + J C Jᵀ, by the Woodbury identity without copying J;
/// empty where a diagonal entry is not > 0 or for postfit terms.
std::optional<double> prefit_chi2(const LinearChi2Terms& t, const Eigen::VectorXd& r, ParallelProducts& prod);

/// rᵀV⁻¹r of the postfit form where K's and B's rows are multiples of J's rows of their own bins: without
/// bin-by-bin statistics, or with lite ones whose β̂ follows the bin's yield alone (every process of the bin
/// with MC statistics; B's rows are then h_b J_b). U S Uᵀ's blocks become Gram matrices of J and J C with
/// per-bin weights, and G22 − X one of them (docs/output-format.md "Cost of the chi2 with many bins"):
/// about half the products of quadratic_form(linear_chi2_low_rank(t)), no nobs × 2·npar U. Empty where
/// the rows are not such multiples (to 1e-11 of the row), B has not one row per bin, or a Δ is not > 0.
/// Given t.h (the yield model's gains, lite BB), B's rows are taken to be h_b J_b without a check.
std::optional<double> proportional_rows_chi2(const LinearChi2Terms& t, const Eigen::VectorXd& r,
                                             ParallelProducts& prod);

/// Whether the low-rank form (rank npar prefit, 2·npar postfit) is cheaper than a dense V of nobs bins.
bool linear_chi2_low_rank_pays(int64_t nobs, int64_t npar, bool postfit);

/// S as a dense matrix.
Eigen::MatrixXd middle(const DiagonalPlusLowRank& V);

/// V's diagonal.
Eigen::VectorXd diagonal(const DiagonalPlusLowRank& V);

/// rᵀV⁻¹r by the Woodbury identity with the known S⁻¹, V⁻¹ = Δ⁻¹ − Δ⁻¹U (S⁻¹ + UᵀΔ⁻¹U)⁻¹ UᵀΔ⁻¹ (no
/// k × k × k product); needs delta > 0.
double quadratic_form(DiagonalPlusLowRank V, const Eigen::VectorXd& r, ParallelProducts& prod);

/// chi2 = rᵀV⁻¹r over the bins of non-zero variance and ndf their count less ndf_reduction; a bin of zero
/// variance and non-zero residual makes chi2 +inf. V's pseudo-inverse when ndf_reduction > 0.
void dense_chi2(const Eigen::MatrixXd& V, const Eigen::VectorXd& r, int64_t ndf_reduction, double& chi2,
                int64_t& ndf);

}  // namespace rabbit::postfit
