#pragma once
// Trust-region subproblems (docs/minimizers.md "Subproblems"): minimise the quadratic model
//   m(p) = f + gᵀp + ½ pᵀHp   subject to ‖p‖ ≤ Δ
// at one linearisation point. A subproblem is built once per accepted iterate and may be solved
// again at a smaller radius after a rejected proposal (same point, same data).
#include <Eigen/Core>
#include <cstdint>
#include <functional>
#include <memory>

#include "rabbit/minimize/dense_linalg.hpp"

namespace rabbit {

/// Hessian-vector product at the subproblem's own linearisation point: Hv ← H·v.
using HessianVectorProduct = std::function<void(const Eigen::VectorXd& v, Eigen::VectorXd& Hv)>;

struct SubproblemStep {
  Eigen::VectorXd p;
  bool hits_boundary = false;
  double model_value = 0.0;  ///< m(p), computed without extra HVPs
  /// m(p) − f = gᵀp + ½pᵀHp, computed without cancellation against f: near a minimum the
  /// predicted reduction is far below f's rounding, where m(p) itself equals f.
  double model_change = 0.0;
};

/// Work counters of one subproblem (accumulated over all its solves).
struct SubproblemStats {
  int64_t solves = 0;
  int64_t hvps = 0;              ///< Hessian-vector products spent by the subproblem
  int64_t factorizations = 0;    ///< Cholesky factorisations (trust-exact)
  int64_t inner_iterations = 0;  ///< λ trials (exact), CG steps (Steihaug), Lanczos steps (GLTR)
};

class TrustRegionSubproblem {
 public:
  TrustRegionSubproblem(double f, Eigen::VectorXd g) : f_(f), g_(std::move(g)), gnorm_(g_.norm()) {}
  virtual ~TrustRegionSubproblem() = default;

  double f() const { return f_; }
  const Eigen::VectorXd& g() const { return g_; }
  double gnorm() const { return gnorm_; }

  /// Approximate minimiser of the model within radius Δ. Throws NumericalError on a linear
  /// algebra failure that the solver cannot recover from.
  virtual SubproblemStep solve(double radius) = 0;

  /// m(p); the value of the last returned step is cached, any other p costs one HVP (or a
  /// dense matrix-vector product).
  virtual double model_value(const Eigen::VectorXd& p) = 0;

  const SubproblemStats& stats() const { return stats_; }

 protected:
  double f_;
  Eigen::VectorXd g_;
  double gnorm_;
  SubproblemStats stats_;
};

/// Nearly-exact More–Sorensen solver on a dense Hessian (trust-exact, docs/minimizers.md "Subproblems").
///
/// Beyond the spec's bracket, the first λ of each solve comes from a short Lanczos start (two
/// runs sharing one block product per step: one from g, whose projected trust-region problem
/// estimates λ*, and one from a fixed pseudo-random vector, whose smallest Ritz value θ bounds
/// λ* ≥ −θ), and interior exits are accepted when weak duality certifies the reduction; see
/// docs/minimizers.md. Lanczos products are counted in stats().hvps, never as factorisations.
class ExactSubproblem : public TrustRegionSubproblem {
 public:
  ExactSubproblem(double f, Eigen::VectorXd g, Eigen::MatrixXd H,
                  const DenseLinalg& linalg = default_linalg());
  SubproblemStep solve(double radius) override;
  double model_value(const Eigen::VectorXd& p) override;

  /// Cap on λ trials per solve (spec: 50).
  int max_lambda_trials = 50;
  /// Relative-error bar for accepting a hard-case correction (More–Sorensen σ; scipy 0.2).
  double k_hard = 0.2;
  /// A step accepted inside the bracket (hard-case correction, or the Newton step scaled onto the
  /// sphere) must reach this fraction of the weak-duality lower bound on the optimal model
  /// reduction (certified, not estimated).
  double hard_case_certified_ratio = 0.96;
  /// Lanczos steps of the λ start (per run; 0 disables the start and restores the plain bracket).
  int start_lanczos_steps = 40;
  /// A hard-case exit is refined (one more factorisation, at λ from the Rayleigh quotient of the
  /// near-null vector) until ‖(H+λI)p + g‖ ≤ this × ‖g‖.
  double hard_case_kkt_tol = 1e-9;

  /// λ of the factorisation behind the last returned step: (H + λI)p = −g holds for Newton steps
  /// (λ = 0 for an interior one) and, to hard_case_kkt_tol, for hard-case exits; a step scaled
  /// onto the sphere only approximately. NaN for the maxiter fallback.
  double last_lambda() const { return last_lambda_; }

  /// Smallest singular value of the lower factor L and its unit vector z (‖Lᵀz‖ = s_min) by
  /// eight passes of inverse iteration from a deterministic start. Exposed for tests.
  static void smallest_singular(const Eigen::MatrixXd& L, const DenseLinalg& linalg, double& s_min,
                                Eigen::VectorXd& z);

 private:
  int64_t factorize(double lambda, Eigen::MatrixXd& L);
  double lower_bound_from_failure(double lambda, int64_t failed_order, const Eigen::MatrixXd& L) const;
  SubproblemStep fallback(const Eigen::VectorXd* p_last, const Eigen::MatrixXd* L_valid, double radius);
  SubproblemStep finish(Eigen::VectorXd p, bool hits, double lambda);
  void lanczos_start(double radius);
  double krylov_lambda(double radius) const;
  bool refine_hard_case(double lambda, double s_min_sq, double radius, Eigen::VectorXd& p_out,
                        double& lambda_out);

  Eigen::MatrixXd H_;
  const DenseLinalg& linalg_;
  double gersh_lb_ = 0, gersh_ub_ = 0, norm_inf_ = 0, norm_fro_ = 0, min_diag_ = 0, close_to_zero_ = 0;
  double previous_radius_ = -1.0;
  double saved_lower_bound_ = -1.0;
  bool have_saved_lower_bound_ = false;
  double last_lambda_ = 0.0;
  // Lanczos start, computed at the first solve and kept for re-solves at smaller radii.
  bool have_start_ = false;
  Eigen::VectorXd krylov_diag_, krylov_offdiag_;  // tridiagonal T of the run from g
  double ritz_min_ = 0.0;                         // smallest Ritz value of both runs (≥ λ_min(H))
  double ritz_residual_ = 0.0;                    // its residual bound β_k|s_k|
};

/// Truncated conjugate gradients (Steihaug, trust-ncg, docs/minimizers.md "Subproblems").
class SteihaugSubproblem : public TrustRegionSubproblem {
 public:
  /// cg_maxiter ≤ 0 means n; tol < 0 means the forcing sequence min(0.5, sqrt‖g‖)·‖g‖.
  SteihaugSubproblem(double f, Eigen::VectorXd g, HessianVectorProduct hvp, int64_t cg_maxiter = -1,
                     double tol = -1.0);
  SubproblemStep solve(double radius) override;
  double model_value(const Eigen::VectorXd& p) override;

 private:
  HessianVectorProduct hvp_;
  int64_t cg_maxiter_;
  double tol_;
  Eigen::VectorXd last_p_;
  double last_model_ = 0.0;
  bool have_last_ = false;
};

/// Generalized Lanczos trust region (trust-krylov, docs/minimizers.md "Subproblems"), fully reorthogonalised
/// Lanczos whose basis survives re-solves at smaller radii.
class GltrSubproblem : public TrustRegionSubproblem {
 public:
  /// kmax ≤ 0 means min(n, 1000); tol < 0 means the forcing sequence.
  GltrSubproblem(double f, Eigen::VectorXd g, HessianVectorProduct hvp, int64_t kmax = -1, double tol = -1.0);
  SubproblemStep solve(double radius) override;
  double model_value(const Eigen::VectorXd& p) override;

  /// Number of Lanczos vectors built so far (exposed for tests).
  int64_t basis_size() const { return static_cast<int64_t>(diag_.size()); }

  /// Solution of the projected problem min ‖g‖h₀ + ½hᵀTh, ‖h‖ ≤ Δ for tridiagonal T (diagonal
  /// d, off-diagonal e); returns h, λ and whether it lies on the boundary. Exposed for tests.
  static void tridiagonal_solve(const Eigen::VectorXd& d, const Eigen::VectorXd& e, double gnorm,
                                double radius, const DenseLinalg& linalg, Eigen::VectorXd& h, double& lambda,
                                bool& boundary);

 private:
  bool lanczos_step();
  double projected_model(const Eigen::VectorXd& h) const;

  HessianVectorProduct hvp_;
  int64_t kmax_;
  double tol_;
  Eigen::MatrixXd Q_;       // n × capacity, columns are the Lanczos vectors
  Eigen::VectorXd q_next_;  // the next (normalised) Lanczos vector
  std::vector<double> diag_, offdiag_;
  bool can_extend_ = true;
  Eigen::VectorXd last_p_;
  double last_model_ = 0.0;
  bool have_last_ = false;
};

/// Roots t_lo ≤ t_hi of ‖z + t d‖ = Δ, computed without cancellation.
void boundary_roots(const Eigen::VectorXd& z, const Eigen::VectorXd& d, double radius, double& t_lo,
                    double& t_hi);

}  // namespace rabbit
