#pragma once
// Native trust-region minimizers (docs/minimizers.md "Entry point" to "Preconditioner"): one outer loop with
// scipy's constants driving a More–Sorensen (trust-exact), Steihaug-CG (trust-ncg) or GLTR
// (trust-krylov) subproblem, optional internal-coordinate preconditioning, early stopping and
// restarts.
#include <Eigen/Core>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "rabbit/minimize/dense_linalg.hpp"
#include "rabbit/minimize/objective.hpp"
#include "rabbit/minimize/preconditioner.hpp"

namespace rabbit {

enum class MinimizerMethod { trust_krylov, trust_ncg, trust_exact };

/// Maps a --minimizerMethod name (including the tf- aliases) to a method; anything else throws
/// OptionError listing the valid names.
MinimizerMethod parse_minimizer_method(const std::string& name);
/// Canonical name ("trust-krylov", "trust-ncg", "trust-exact").
std::string method_name(MinimizerMethod method);

/// What the callback sees once per outer iteration, after accepted and rejected proposals.
struct IterationInfo {
  int64_t iteration = 0;               ///< outer iterations so far in this minimize() call (all rounds)
  int round = 0;                       ///< restart round (0 = first run)
  const Eigen::VectorXd* x = nullptr;  ///< current accepted iterate, physical coordinates
  double f = 0.0;                      ///< its value (never the proposal's)
  double delta_f = 0.0;                ///< f − f of the previous callback (0 after a rejection)
  double radius = 0.0;                 ///< trust radius after the update
  double grad_norm = 0.0;              ///< ‖g‖₂ in internal coordinates
  double elapsed_s = 0.0;              ///< seconds since minimize() started
  bool accepted = false;
};

struct MinimizerOptions {
  std::string method = "trust-krylov";  ///< --minimizerMethod
  int64_t maxiter = -1;                 ///< --minimizerMaxiter; ≤ 0 → 200·n
  double gtol = 0.0;                    ///< --minimizerGtol; ‖g‖₂ (internal) below it ends the run
  std::optional<double> ftol;           ///< --minimizerFtol: no native method reads it (warned once)
  int early_stopping = -1;              ///< --earlyStopping N; ≤ 0 disables
  double stall_rel_tol = 0.0;           ///< --stallRelTol
  int max_restarts = -1;                ///< --maxRestarts: −1 while improving, 0 never, N cap
  double initial_trust_radius = 1.0;
  double max_trust_radius = 1000.0;
  double eta = 0.15;
  int64_t cg_maxiter = -1;             ///< internal: CG cap (n) / GLTR basis cap (min(n, 1000))
  int64_t hvp_batch = -1;              ///< --hvpBatch for dense Hessians; ≤ 0 keeps the objective's
  PreconditionerOptions precondition;  ///< --precondition*
  /// Dense factorizations of trust-exact (cuSOLVER for CUDA fits); null: default_linalg(). Not owned.
  const DenseLinalg* linalg = nullptr;
  /// Called once per outer iteration; an exception thrown here propagates out of minimize().
  std::function<void(const IterationInfo&)> callback;

  // ---- convergence certificate (docs/minimizers.md "Convergence")
  /// --edmTol: the fit is converged only when EDM = ½ gᵀH⁻¹g ≤ edm_tol · max(1, |f|) with H ≻ 0.
  double edm_tol = 1e-15;
  /// Curvature used to certify (and polish) the end point: the dense Hessian, conjugate gradients
  /// on HVPs, or automatic (dense up to dense_certify_max_n parameters).
  enum class Certify { automatic, dense, hvp, off };
  Certify certify = Certify::automatic;
  int64_t dense_certify_max_n = 300;
  /// Newton steps allowed after the trust region when the EDM is above edm_tol.
  int max_polish_steps = 10;
  /// Below this predicted reduction (relative to max(1, |f|)) a proposal is judged by the reduction
  /// its gradients measure (trapezoid rule), not by f, whose rounding noise — f sums terms far
  /// larger than f — can be of the size of the step's effect.
  double small_step_rel = 1e-8;
  /// ...unless f rose by more than this (relative to max(1, |f|)): more than rounding can explain.
  double f_veto_rel = 1e-6;
  /// The loop ends (status 0) after an accepted interior step that predicted less than this
  /// fraction of edm_tol·max(1, |f|).
  double stop_edm_fraction = 1e-4;
};

/// Status codes: scipy's 0–3, upstream's 4, and 5 (early stop) and 6 (numerical precision) as
/// C++ additions.
enum MinimizerStatus : int {
  status_success = 0,
  status_maxiter = 1,
  status_bad_approximation = 2,
  status_linalg_error = 3,
  status_model_failure = 4,
  status_stopped_early = 5,
  status_noise_floor = 6,  ///< C++ addition: a Newton-like step is below f's and ‖g‖'s rounding noise
};
const char* status_message(int status);

struct MinimizerResult {
  Eigen::VectorXd x;  ///< physical coordinates
  double f = 0.0;
  Eigen::VectorXd grad;  ///< physical gradient at x
  int status = status_maxiter;
  std::string message;
  bool success = false;  ///< status 0 or 6 (whether the point is a minimum: `converged`)
  std::string method;
  int64_t iterations = 0;      ///< outer iterations, accepted or rejected, all rounds
  int64_t nfev = 0;            ///< objective evaluations (value or value+grad)
  int64_t ngev = 0;            ///< gradient evaluations
  int64_t nhvp = 0;            ///< Hessian-vector products spent by the subproblems
  int64_t nhess = 0;           ///< dense Hessians
  int64_t factorizations = 0;  ///< Cholesky factorisations in the subproblems
  int64_t subproblem_solves = 0;
  double trust_radius = 0.0;  ///< final radius (to resume with)
  bool stopped_early = false;
  int restarts = 0;
  std::vector<double> loss_history;  ///< f per callback, all rounds
  std::vector<double> time_history;  ///< seconds since start per callback

  // ---- convergence certificate (docs/minimizers.md "Convergence")
  bool converged = false;  ///< EDM ≤ edm_tol·max(1,|f|) at x with a positive-definite Hessian
  double edm = std::numeric_limits<double>::quiet_NaN();  ///< ½ gᵀH⁻¹g at x (NaN if not certified)
  /// max_i |g_i| / sqrt(H_ii) at x (dense certificate only; NaN otherwise)
  double max_scaled_grad = std::numeric_limits<double>::quiet_NaN();
  int polish_steps = 0;      ///< Newton steps taken after the trust region
  std::string certified_by;  ///< "dense Hessian", "conjugate gradients on HVPs" or "" (not certified)
  std::string stop_reason;   ///< why the minimizer stopped, in one line (trust region, polish, certificate)
};

/// Minimises objective from x0 (physical coordinates), then certifies the end point (EDM with the
/// dense Hessian or CG on HVPs) and polishes it with Newton steps when the EDM is above
/// options.edm_tol. Throws OptionError on bad options, NumericalError if f(x0) is not finite;
/// exceptions from the callback propagate.
MinimizerResult minimize(Objective& objective, const Eigen::VectorXd& x0, const MinimizerOptions& options);

/// One trust-region run (no preconditioner, no early stopping or restarts) in the objective's own
/// coordinates; `iteration_hook(x, f, radius, grad_norm, accepted)` is called per iteration and
/// may throw. Exposed for tests and for callers that manage their own coordinates.
using TrustRegionHook =
    std::function<void(const Eigen::VectorXd& x, double f, double radius, double grad_norm, bool accepted)>;
MinimizerResult trust_region_minimize(Objective& objective, const Eigen::VectorXd& x0, MinimizerMethod method,
                                      const MinimizerOptions& options,
                                      const TrustRegionHook& iteration_hook = {});

/// The certificate and Newton polish of minimize() on their own: evaluates the curvature at
/// result.x, takes Newton steps (backtracking, judged on f and on the gradient) while the EDM is
/// above options.edm_tol, and fills result's x, f, grad, converged, edm, max_scaled_grad,
/// polish_steps and certified_by. Returns false if the curvature was not positive definite or a
/// Newton step could not be accepted (the caller may then try another subproblem solver).
bool certify_and_polish(Objective& objective, const MinimizerOptions& options, MinimizerResult& result);

}  // namespace rabbit
