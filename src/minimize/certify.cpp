// The convergence certificate of a fit and its Newton polish (docs/minimizers.md "Convergence").
//
// A trust-region run ends for many reasons (model failure near f's rounding noise, iteration cap,
// early stopping); none of them proves a minimum. Here the end point is certified: the curvature
// H (dense Hessian, or conjugate gradients on HVPs) must be positive definite and the estimated
// distance to the minimum EDM = ½ gᵀH⁻¹g must be at most edm_tol·max(1, |f|). While it is not,
// Newton steps p = −H⁻¹g are taken with backtracking. Near the minimum a Newton step changes f by
// about the EDM, which can be below f's rounding noise, so a step is accepted on f (Armijo) or,
// when f cannot resolve it, on a smaller gradient norm with f unchanged within its noise.
#include <fmt/format.h>

#include <Eigen/Cholesky>
#include <cmath>
#include <limits>

#include "rabbit/core/error.hpp"
#include "rabbit/core/logging.hpp"
#include "rabbit/minimize/conjugate_gradient.hpp"
#include "rabbit/minimize/minimizer.hpp"

namespace rabbit {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Curvature at one point: f, g, the Newton step −H⁻¹g and the EDM, or ok = false.
struct Curvature {
  bool ok = false;
  std::string failure;  // why not ok, one line
  double f = kNaN;
  Eigen::VectorXd g;
  Eigen::VectorXd newton;
  double edm = kNaN;
  double max_scaled_grad = kNaN;
};

bool use_dense(const MinimizerOptions& o, int64_t n) {
  switch (o.certify) {
    case MinimizerOptions::Certify::dense:
      return true;
    case MinimizerOptions::Certify::hvp:
      return false;
    default:
      return n <= o.dense_certify_max_n;
  }
}

Curvature dense_curvature(Objective& objective, const Eigen::VectorXd& x, MinimizerResult& counters) {
  Curvature c;
  Eigen::MatrixXd H;
  c.f = objective.value_grad_hess(x, c.g, H);
  ++counters.nfev;
  ++counters.ngev;
  ++counters.nhess;
  if (!std::isfinite(c.f) || !c.g.allFinite() || !H.allFinite()) {
    c.failure = "the objective, gradient or Hessian is not finite";
    return c;
  }
  Eigen::LLT<Eigen::MatrixXd> llt(H);
  if (llt.info() != Eigen::Success) {
    c.failure = "the Hessian is not positive definite";
    return c;
  }
  c.newton = -llt.solve(c.g);
  c.edm = -0.5 * c.g.dot(c.newton);
  c.max_scaled_grad = 0.0;
  for (Eigen::Index i = 0; i < H.rows(); ++i)
    c.max_scaled_grad = std::max(c.max_scaled_grad, std::abs(c.g(i)) / std::sqrt(H(i, i)));
  c.ok = true;
  return c;
}

Curvature cg_curvature(Objective& objective, const Eigen::VectorXd& x, MinimizerResult& counters) {
  Curvature c;
  c.f = objective.value_grad(x, c.g);
  ++counters.nfev;
  ++counters.ngev;
  if (!std::isfinite(c.f) || !c.g.allFinite()) {
    c.failure = "the objective or gradient is not finite";
    return c;
  }
  auto apply = [&](const Eigen::VectorXd& v) {
    Eigen::MatrixXd hv;
    objective.hvp(x, v, hv);
    return Eigen::VectorXd(hv.col(0));
  };
  const int64_t n = objective.size();
  try {
    c.newton =
        -conjugate_gradient(apply, c.g, 1e-10, std::max<int64_t>(10 * n, 100), "the EDM", &counters.nhvp);
  } catch (const NumericalError& e) {
    c.failure = e.what();
    return c;
  }
  c.edm = -0.5 * c.g.dot(c.newton);
  if (!(c.edm >= 0.0)) {
    c.failure = "the Hessian is not positive definite";
    return c;
  }
  c.ok = true;
  return c;
}

}  // namespace

bool certify_and_polish(Objective& objective, const MinimizerOptions& options, MinimizerResult& result) {
  result.converged = false;
  result.edm = kNaN;
  result.max_scaled_grad = kNaN;
  if (options.certify == MinimizerOptions::Certify::off) return true;
  const int64_t n = objective.size();
  const bool dense = use_dense(options, n);
  result.certified_by = dense ? "dense Hessian" : "conjugate gradients on HVPs";
  auto curvature = [&](const Eigen::VectorXd& x) {
    return dense ? dense_curvature(objective, x, result) : cg_curvature(objective, x, result);
  };
  auto tolerance = [&](double f) { return options.edm_tol * std::max(1.0, std::abs(f)); };

  Curvature c = curvature(result.x);
  for (;;) {
    result.f = c.f;
    result.grad = c.g;
    result.edm = c.edm;
    result.max_scaled_grad = c.max_scaled_grad;
    if (!c.ok) {
      result.stop_reason += fmt::format("; not certified: {}", c.failure);
      return false;
    }
    if (c.edm <= tolerance(c.f)) {
      result.converged = true;
      return true;
    }
    if (result.polish_steps >= options.max_polish_steps) {
      result.stop_reason += fmt::format("; EDM {:.3g} still above the tolerance after {} Newton steps", c.edm,
                                        result.polish_steps);
      return false;
    }
    // One Newton step with backtracking: Armijo on f, or — where f's rounding noise may hide the
    // step (EDM below small_step_rel·max(1,|f|), see trust_region.cpp) — the gradients' trapezoid
    // reduction, with f vetoing only a rise beyond f_veto_rel·max(1,|f|).
    const double noise = options.small_step_rel * std::max(1.0, std::abs(c.f));
    const double veto = options.f_veto_rel * std::max(1.0, std::abs(c.f));
    bool accepted = false;
    double t = 1.0;
    for (int halving = 0; halving < 30; ++halving, t *= 0.5) {
      const Eigen::VectorXd step = t * c.newton;
      const Eigen::VectorXd x_try = result.x + step;
      Eigen::VectorXd g_try;
      const double f_try = objective.value_grad(x_try, g_try);
      ++result.nfev;
      ++result.ngev;
      if (!std::isfinite(f_try)) continue;
      // The quadratic model predicts a reduction of t(2 − t)·EDM along the Newton direction.
      const double predicted = t * (2.0 - t) * c.edm;
      const bool armijo = f_try <= c.f - 1e-4 * predicted;
      // Where f cannot resolve the step, the trapezoid rule on the gradients measures it (as in the
      // trust region's small steps), with f vetoing a rise beyond the noise scale.
      const double gradient_reduction = -0.5 * (c.g + g_try).dot(step);
      const bool by_gradient =
          c.edm <= noise && f_try <= c.f + veto && gradient_reduction >= 0.25 * predicted;
      if (armijo || by_gradient) {
        result.x = x_try;
        accepted = true;
        break;
      }
    }
    if (!accepted) {
      result.stop_reason += fmt::format("; no Newton step from EDM {:.3g} lowered f or the gradient", c.edm);
      return false;
    }
    // A full step that needed damping means the point is outside Newton's quadratic basin: the
    // globalised trust region (the caller's fallback) is the better tool from here.
    const bool damped = t < 0.75;
    ++result.polish_steps;
    if (damped) {
      result.stop_reason += fmt::format("; the Newton step from EDM {:.3g} needed damping", c.edm);
      Curvature at_new = curvature(result.x);
      result.f = at_new.f;
      result.grad = at_new.g;
      result.edm = at_new.edm;
      result.max_scaled_grad = at_new.max_scaled_grad;
      result.converged = at_new.ok && at_new.edm <= tolerance(at_new.f);
      return result.converged;
    }
    Curvature next = curvature(result.x);
    log().debug("Newton polish step {}: EDM {:.3g} -> {:.3g}, f = {:.15g}", result.polish_steps, c.edm,
                next.edm, next.f);
    c = std::move(next);
  }
}

}  // namespace rabbit
