// The trust-region outer loop shared by the three native methods (docs/minimizers.md "Outer loop"):
// scipy's constants and status codes, proposals judged on f alone, NaN/Inf ρ as a rejection and
// the model-failure guard of docs/minimizers.md "Outer loop".
#include <cmath>
#include <limits>
#include <memory>
#include <stdexcept>

#include "rabbit/core/error.hpp"
#include "rabbit/core/logging.hpp"
#include "rabbit/minimize/minimizer.hpp"
#include "rabbit/minimize/subproblem.hpp"
#include "trust_region_internal.hpp"

namespace rabbit {

const char* status_message(int status) {
  switch (status) {
    case status_success:
      return "Optimization terminated successfully.";
    case status_maxiter:
      return "Maximum number of iterations has been exceeded.";
    case status_bad_approximation:
      return "A bad approximation caused failure to predict improvement.";
    case status_linalg_error:
      return "A linalg error occurred, such as a non-psd Hessian.";
    case status_model_failure:
      return "The subproblem could not predict descent at any trust radius, but the gradient is not small: "
             "the "
             "quadratic MODEL failed, the fit did not converge, and the returned point is not a minimum.";
    case status_stopped_early:
      return "No reduction in loss over the early-stopping window, early stopping.";
    case status_noise_floor:
      return "Converged to numerical precision: a Newton-like step changes neither the loss nor the gradient "
             "norm "
             "beyond their rounding noise.";
    default:
      return "Unknown status.";
  }
}

namespace detail {

void validate_trust_region_options(const MinimizerOptions& o) {
  if (!(o.eta >= 0.0 && o.eta < 0.25))
    throw OptionError(fmt::format("trust region: eta must satisfy 0 <= eta < 0.25, got {}", o.eta));
  if (!(o.max_trust_radius > 0.0))
    throw OptionError(
        fmt::format("trust region: the maximum trust radius must be positive, got {}", o.max_trust_radius));
  if (!(o.initial_trust_radius > 0.0))
    throw OptionError(fmt::format("trust region: the initial trust radius must be positive, got {}",
                                  o.initial_trust_radius));
  if (!(o.initial_trust_radius < o.max_trust_radius))
    throw OptionError(fmt::format("trust region: the initial trust radius {} must be below the maximum {}",
                                  o.initial_trust_radius, o.max_trust_radius));
}

void run_trust_region(Objective& objective, const Eigen::VectorXd& x0, MinimizerMethod method,
                      const MinimizerOptions& options, const TrustRegionHook& hook, MinimizerResult& out) {
  validate_trust_region_options(options);
  const int64_t n = objective.size();
  if (x0.size() != n)
    throw OptionError(fmt::format("minimize: start point has {} entries, the objective {}", x0.size(), n));
  const int64_t maxiter = options.maxiter > 0 ? options.maxiter : 200 * std::max<int64_t>(n, 1);
  out.method = method_name(method);

  // Totals of subproblems already retired, plus the live one's counters when read.
  SubproblemStats retired;
  auto add_stats = [&](const SubproblemStats& s) {
    retired.hvps += s.hvps;
    retired.factorizations += s.factorizations;
    retired.solves += s.solves;
  };

  auto build = [&](const Eigen::VectorXd& x) -> std::unique_ptr<TrustRegionSubproblem> {
    Eigen::VectorXd g;
    if (method == MinimizerMethod::trust_exact) {
      Eigen::MatrixXd H;
      const double f = objective.value_grad_hess(x, g, H);
      ++out.nfev;
      ++out.ngev;
      ++out.nhess;
      return std::make_unique<ExactSubproblem>(f, std::move(g), std::move(H),
                                               options.linalg ? *options.linalg : default_linalg());
    }
    const double f = objective.value_grad(x, g);
    ++out.nfev;
    ++out.ngev;
    // The HVP is bound to this subproblem's own point (a copy), never the last evaluated one.
    HessianVectorProduct hvp = [&objective, point = Eigen::VectorXd(x)](const Eigen::VectorXd& v,
                                                                        Eigen::VectorXd& Hv) {
      Eigen::MatrixXd HV;
      objective.hvp(point, v, HV);
      Hv = HV.col(0);
    };
    if (method == MinimizerMethod::trust_ncg)
      return std::make_unique<SteihaugSubproblem>(f, std::move(g), std::move(hvp), options.cg_maxiter);
    return std::make_unique<GltrSubproblem>(f, std::move(g), std::move(hvp), options.cg_maxiter);
  };

  Eigen::VectorXd x = x0;
  std::unique_ptr<TrustRegionSubproblem> model = build(x);
  auto publish = [&]() {
    out.x = x;
    out.f = model->f();
    out.grad = model->g();
    out.nhvp = retired.hvps + model->stats().hvps;
    out.factorizations = retired.factorizations + model->stats().factorizations;
    out.subproblem_solves = retired.solves + model->stats().solves;
  };
  publish();
  if (!std::isfinite(model->f()))
    throw NumericalError(
        fmt::format("minimize: the objective is not finite at the start point (f = {})", model->f()));

  double radius = options.initial_trust_radius;
  int status = status_maxiter;
  int64_t k = 0;
  int shrinks = 0;
  while (k < maxiter) {
    SubproblemStep step;
    try {
      step = model->solve(radius);
    } catch (const NumericalError& e) {
      log().warn("{}: subproblem failed: {}", out.method, e.what());
      status = status_linalg_error;
      break;
    } catch (const std::domain_error& e) {
      log().warn("{}: subproblem failed: {}", out.method, e.what());
      status = status_linalg_error;
      break;
    } catch (const std::invalid_argument& e) {
      log().warn("{}: subproblem failed: {}", out.method, e.what());
      status = status_linalg_error;
      break;
    }
    const double predicted_reduction = -step.model_change;
    if (!(predicted_reduction > 0.0)) {
      // Model-failure guard: a stationary point ends the run (status 2); otherwise the model is
      // retried at smaller radii before the failure is reported (status 4).
      const double noise = 1e-12 * std::max(std::abs(model->f()), 1.0);
      if (radius * model->gnorm() <= noise) {
        status = status_bad_approximation;
        break;
      }
      if (shrinks >= 20) {
        status = status_model_failure;
        break;
      }
      ++shrinks;
      radius *= 0.25;
      continue;
    }
    shrinks = 0;
    Eigen::VectorXd x_proposal = x + step.p;
    const double fscale = std::max(1.0, std::abs(model->f()));
    // Near a minimum a step changes f by less than f's rounding noise (f is a sum of many large
    // terms), so ρ from f is noise there (docs/minimizers.md "Convergence"). For such small steps
    // the actual reduction is measured from the gradients instead, by the trapezoid rule
    // f(x+p) − f(x) ≈ ½(g + g_p)ᵀp, exact for a quadratic and free of f's cancellation.
    const bool small_step = predicted_reduction <= options.small_step_rel * fscale;
    double f_proposal = 0.0;
    double gradient_reduction = std::numeric_limits<double>::quiet_NaN();
    if (small_step) {
      Eigen::VectorXd g_proposal;
      f_proposal = objective.value_grad(x_proposal, g_proposal);
      ++out.ngev;
      gradient_reduction = -0.5 * (model->g() + g_proposal).dot(step.p);
    } else {
      f_proposal = objective.value(x_proposal);
    }
    ++out.nfev;
    const double actual_reduction = model->f() - f_proposal;
    double rho = actual_reduction / predicted_reduction;
    // f itself still vetoes a step that raises it by more than any rounding could (f_veto_rel).
    if (small_step && std::isfinite(f_proposal) && f_proposal <= model->f() + options.f_veto_rel * fscale)
      rho = gradient_reduction / predicted_reduction;
    if (!std::isfinite(rho)) rho = -std::numeric_limits<double>::infinity();
    // So close to the minimum the quadratic model is exact to third order, so the gradients must
    // confirm a Newton-like (interior) step with ρ ≈ 1. One they cannot confirm (|ρ − 1| > ½, e.g.
    // ρ = 2 when the step lands on the mirror point) means the run is at the rounding floor of the
    // objective and its gradient: nothing is left to gain.
    if (small_step && !step.hits_boundary && !(std::abs(rho - 1.0) <= 0.5)) {
      status = status_noise_floor;
      break;
    }
    if (rho < 0.25) {
      radius *= 0.25;
    } else if (rho > 0.75 && step.hits_boundary) {
      radius = std::min(2.0 * radius, options.max_trust_radius);
    }
    const bool accepted = rho > options.eta;
    if (accepted) {
      x = std::move(x_proposal);
      add_stats(model->stats());
      model = build(x);
    }
    ++k;
    out.iterations = k;
    out.trust_radius = radius;
    publish();
    if (hook) hook(x, model->f(), radius, model->gnorm(), accepted);
    if (model->gnorm() < options.gtol) {
      status = status_success;
      break;
    }
    // An accepted interior (Newton-like) step whose predicted reduction — the EDM of the point it
    // left, as far as the subproblem resolved it — was far below the EDM tolerance: the new point's
    // EDM is smaller still (superlinear convergence). Stopping here saves the iterations that would
    // only wander at the rounding floor; minimize() certifies the point (docs/minimizers.md).
    if (accepted && !step.hits_boundary &&
        predicted_reduction <= options.stop_edm_fraction * options.edm_tol * fscale) {
      status = status_success;
      break;
    }
  }
  out.iterations = k;
  out.trust_radius = radius;
  publish();
  out.status = status;
  out.message = status_message(status);
  out.success = status == status_success || status == status_noise_floor;
  if (status == status_model_failure) {
    log().warn(
        "{}: {} |g| = {:.3e} after {} radius reductions, final radius {:.3e}. Rerun with "
        "--minimizerMethod trust-exact and compare the NLL.",
        out.method, out.message, model->gnorm(), shrinks, radius);
  } else if (status == status_bad_approximation || status == status_success || status == status_noise_floor) {
    log().debug("{}: {} (status {}, {} iterations)", out.method, out.message, status, k);
  } else {
    log().warn("{}: {} (status {}, {} iterations)", out.method, out.message, status, k);
  }
}

}  // namespace detail

MinimizerResult trust_region_minimize(Objective& objective, const Eigen::VectorXd& x0, MinimizerMethod method,
                                      const MinimizerOptions& options,
                                      const TrustRegionHook& iteration_hook) {
  MinimizerResult result;
  detail::run_trust_region(objective, x0, method, options, iteration_hook, result);
  return result;
}

}  // namespace rabbit
