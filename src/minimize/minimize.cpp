// minimize(): method dispatch, the preconditioner boundary, early stopping and restarts
// (docs/minimizers.md "Entry point" to "Early stopping and restarts").
#include <chrono>
#include <cmath>
#include <optional>

#include "rabbit/core/error.hpp"
#include "rabbit/core/logging.hpp"
#include "rabbit/minimize/minimizer.hpp"
#include "trust_region_internal.hpp"

namespace rabbit {

MinimizerMethod parse_minimizer_method(const std::string& name) {
  if (name == "trust-krylov" || name == "tf-trust-krylov") return MinimizerMethod::trust_krylov;
  if (name == "trust-ncg" || name == "tf-trust-ncg") return MinimizerMethod::trust_ncg;
  if (name == "trust-exact" || name == "tf-trust-exact") return MinimizerMethod::trust_exact;
  const bool known_unimplemented = name == "BFGS" || name == "L-BFGS-B" || name == "CG" || name == "dogleg";
  throw OptionError(
      fmt::format("--minimizerMethod {}: {}; valid names are trust-krylov (default), trust-ncg, trust-exact, "
                  "tf-trust-krylov, "
                  "tf-trust-ncg, tf-trust-exact",
                  name, known_unimplemented ? "not implemented in rabbit-cpp" : "unknown method"));
}

std::string method_name(MinimizerMethod method) {
  switch (method) {
    case MinimizerMethod::trust_krylov:
      return "trust-krylov";
    case MinimizerMethod::trust_ncg:
      return "trust-ncg";
    case MinimizerMethod::trust_exact:
      return "trust-exact";
  }
  return "unknown";
}

namespace {

// Thrown by the iteration hook when the early-stopping window sees no reduction; caught by the
// restart loop, never seen by callers.
struct StallSignal {};

bool is_stalled(double loss, double reference, double rel_tol) {
  if (rel_tol == 0.0) return loss >= reference;  // exact original predicate, also for ±inf
  return loss >= reference - rel_tol * std::abs(reference);
}

Preconditioner make_preconditioner(Objective& objective, const Eigen::VectorXd& x,
                                   const PreconditionerOptions& po, MinimizerResult& counters) {
  if (!po.enabled) return Preconditioner(x);
  const auto start = std::chrono::steady_clock::now();
  Eigen::MatrixXd reference;
  try {
    if (po.reference_matrix) {
      reference = po.reference_matrix(x);
    } else {
      Eigen::VectorXd g;
      objective.value_grad_hess(x, g, reference);
      ++counters.nfev;
      ++counters.ngev;
      ++counters.nhess;
    }
  } catch (const std::bad_alloc&) {
    log().warn(
        "Preconditioner: the reference matrix could not be allocated; running unpreconditioned "
        "(lower --hvpBatch on a multi-device fit)");
    return Preconditioner(x);
  }
  log().debug("Preconditioner: reference matrix ({}) in {:.3f} s", po.from,
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  return Preconditioner::build(x, reference, po);
}

// Work counters of `more` added to `total`.
void add_work(MinimizerResult& total, const MinimizerResult& more) {
  total.iterations += more.iterations;
  total.nfev += more.nfev;
  total.ngev += more.ngev;
  total.nhvp += more.nhvp;
  total.nhess += more.nhess;
  total.factorizations += more.factorizations;
  total.subproblem_solves += more.subproblem_solves;
}

// The trust-region rounds (restarts after early stops) without the certificate.
MinimizerResult run_rounds(Objective& objective, const Eigen::VectorXd& x0, const MinimizerOptions& options) {
  const MinimizerMethod method = parse_minimizer_method(options.method);
  detail::validate_trust_region_options(options);
  validate(options.precondition);
  if (options.stall_rel_tol < 0.0)
    throw OptionError(fmt::format("--stallRelTol must be >= 0, got {}", options.stall_rel_tol));
  if (x0.size() != objective.size())
    throw OptionError(
        fmt::format("minimize: start point has {} entries, the objective {}", x0.size(), objective.size()));
  if (options.ftol)
    log().warn(
        "{} does not implement ftol; ignoring --minimizerFtol. Use a scipy --minimizerMethod if you need it.",
        options.method);
  if (options.hvp_batch > 0) objective.set_hvp_batch(options.hvp_batch);

  const auto t0 = std::chrono::steady_clock::now();
  auto seconds = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };

  MinimizerResult total;
  total.method = method_name(method);
  Eigen::VectorXd x = x0;
  std::optional<double> previous_round_loss;
  double last_info_log = 0.0;
  double previous_f = std::numeric_limits<double>::quiet_NaN();

  for (int round = 0;; ++round) {
    const Preconditioner pc = make_preconditioner(objective, x, options.precondition, total);
    PreconditionedObjective internal(objective, pc);
    const Eigen::VectorXd y0 = pc.from_physical(x);

    std::vector<double> round_losses;
    Eigen::VectorXd last_y = y0;
    const int64_t iterations_before = total.iterations;
    auto hook = [&](const Eigen::VectorXd& y, double f, double radius, double grad_norm, bool accepted) {
      const int64_t iteration = iterations_before + static_cast<int64_t>(round_losses.size()) + 1;
      if (std::isnan(f)) throw NumericalError(fmt::format("Loss value is NaN at iteration {}", iteration));
      const int window = options.early_stopping;
      if (window > 0 && static_cast<int64_t>(round_losses.size()) > window &&
          is_stalled(f, round_losses[round_losses.size() - window], options.stall_rel_tol)) {
        log().info("No reduction in loss after {} iterations, early stopping.", window);
        throw StallSignal{};
      }
      const double elapsed = seconds();
      const double delta_f = std::isnan(previous_f) ? 0.0 : f - previous_f;
      previous_f = f;
      round_losses.push_back(f);
      total.loss_history.push_back(f);
      total.time_history.push_back(elapsed);
      last_y = y;
      // trace, not debug: rabbit_fit's callback prints rabbit's own per-iteration line at debug.
      log().trace("iteration {}: f = {:.10g}, df = {:.3e}, radius = {:.3e}, |g| = {:.3e}, {:.2f} s, {}",
                  iteration, f, delta_f, radius, grad_norm, elapsed, accepted ? "accepted" : "rejected");
      if (elapsed - last_info_log >= 10.0) {
        last_info_log = elapsed;
        log().info("{} iteration {}: f = {:.10g}, radius = {:.3e}, |g| = {:.3e}, {:.1f} s", total.method,
                   iteration, f, radius, grad_norm, elapsed);
      }
      if (options.callback) {
        const Eigen::VectorXd x_physical = pc.to_physical(y);
        IterationInfo info;
        info.iteration = iteration;
        info.round = round;
        info.x = &x_physical;
        info.f = f;
        info.delta_f = delta_f;
        info.radius = radius;
        info.grad_norm = grad_norm;
        info.elapsed_s = elapsed;
        info.accepted = accepted;
        options.callback(info);
      }
    };

    MinimizerResult run;
    bool stalled = false;
    try {
      detail::run_trust_region(internal, y0, method, options, hook, run);
    } catch (const StallSignal&) {
      stalled = true;
    }
    add_work(total, run);  // fold this round into the totals (its histories went there via the hook)
    total.trust_radius = run.trust_radius;
    const Eigen::VectorXd y = stalled ? last_y : run.x;
    x = pc.to_physical(y);
    total.f = run.f;
    Eigen::VectorXd g_internal = run.grad;
    pc.grad_to_physical(g_internal);
    total.grad = std::move(g_internal);
    total.stopped_early = stalled;
    if (stalled) {
      total.status = status_stopped_early;
    } else {
      total.status = run.status;
    }
    if (!stalled) break;

    const std::optional<double> last =
        round_losses.empty() ? std::nullopt : std::optional<double>(round_losses.back());
    if (previous_round_loss && last &&
        *last >= *previous_round_loss - 1e-9 * std::max(1.0, std::abs(*previous_round_loss))) {
      log().info("Restart did not reduce the loss further");
      break;
    }
    if (options.max_restarts >= 0 && total.restarts >= options.max_restarts) {
      if (options.max_restarts > 0)
        log().warn("Minimizer still stalling after {} restart(s); raise --maxRestarts to continue",
                   total.restarts);
      break;
    }
    ++total.restarts;
    previous_round_loss = last;
    log().info("Restarting the minimizer (restart {}) with a fresh trust radius", total.restarts);
  }
  total.x = x;
  total.message = status_message(total.status);
  total.success = total.status == status_success || total.status == status_noise_floor;
  total.stop_reason = fmt::format("{}: {}", total.method, total.message);
  return total;
}

// The solver tried when the certificate fails after a run: one that sees the curvature differently
// (the dense Hessian where the certificate may use it, else the other Krylov method).
MinimizerMethod fallback_method(MinimizerMethod used, bool dense_allowed) {
  if (used != MinimizerMethod::trust_exact && dense_allowed) return MinimizerMethod::trust_exact;
  return used == MinimizerMethod::trust_krylov ? MinimizerMethod::trust_ncg : MinimizerMethod::trust_krylov;
}

void add_counters(MinimizerResult& total, const MinimizerResult& more) {
  add_work(total, more);
  total.restarts += more.restarts;
  total.loss_history.insert(total.loss_history.end(), more.loss_history.begin(), more.loss_history.end());
  total.time_history.insert(total.time_history.end(), more.time_history.begin(), more.time_history.end());
}

}  // namespace

MinimizerResult minimize(Objective& objective, const Eigen::VectorXd& x0, const MinimizerOptions& options) {
  if (!(options.edm_tol > 0.0))
    throw OptionError(fmt::format("--edmTol must be positive, got {}", options.edm_tol));
  const auto t0 = std::chrono::steady_clock::now();
  MinimizerResult total = run_rounds(objective, x0, options);
  if (!certify_and_polish(objective, options, total) && options.certify != MinimizerOptions::Certify::off) {
    const bool dense_allowed = options.certify == MinimizerOptions::Certify::dense ||
                               (options.certify == MinimizerOptions::Certify::automatic &&
                                objective.size() <= options.dense_certify_max_n);
    MinimizerOptions second = options;
    second.method = method_name(fallback_method(parse_minimizer_method(options.method), dense_allowed));
    second.precondition.enabled = false;
    log().info("{}; trying {} from there", total.stop_reason, second.method);
    MinimizerResult more = run_rounds(objective, total.x, second);
    std::string reason = total.stop_reason + "; then " + more.stop_reason;
    add_counters(total, more);
    total.x = more.x;
    total.f = more.f;
    total.grad = more.grad;
    total.status = more.status;
    total.message = more.message;
    total.success = more.success;
    total.stop_reason = reason;
    certify_and_polish(objective, options, total);
  }
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (total.converged)
    log().info(
        "{}: converged (EDM {:.3g}, {} Newton polish steps) after {} iterations, f = {:.10g}, nfev {}, nhvp "
        "{}, "
        "nhess {}, {:.2f} s",
        total.method, total.edm, total.polish_steps, total.iterations, total.f, total.nfev, total.nhvp,
        total.nhess, elapsed);
  else if (options.certify != MinimizerOptions::Certify::off)
    log().info("{}: not converged ({}), EDM {:.3g}, f = {:.10g}, {:.2f} s", total.method, total.stop_reason,
               total.edm, total.f, elapsed);
  return total;
}

}  // namespace rabbit
