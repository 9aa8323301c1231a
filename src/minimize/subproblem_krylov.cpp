// Matrix-free subproblems: truncated Steihaug-CG (docs/minimizers.md "Subproblems") and GLTR
// (docs/minimizers.md "Subproblems"). Both hand the model value of the returned step to the outer loop so a
// proposal costs no extra HVP.
#include <algorithm>
#include <cmath>
#include <limits>

#include "rabbit/core/logging.hpp"
#include "rabbit/minimize/subproblem.hpp"

namespace rabbit {

namespace {
double forcing_tolerance(double gnorm) {
  return std::min(0.5, std::sqrt(gnorm)) * gnorm;
}
}  // namespace

// ---------------------------------------------------------------------------------------------
// Steihaug-CG

SteihaugSubproblem::SteihaugSubproblem(double f, Eigen::VectorXd g, HessianVectorProduct hvp,
                                       int64_t cg_maxiter, double tol)
    : TrustRegionSubproblem(f, std::move(g)), hvp_(std::move(hvp)), cg_maxiter_(cg_maxiter), tol_(tol) {
  if (cg_maxiter_ <= 0) cg_maxiter_ = std::max<int64_t>(1, g_.size());
}

double SteihaugSubproblem::model_value(const Eigen::VectorXd& p) {
  if (have_last_ && p.size() == last_p_.size() && p == last_p_) return last_model_;
  Eigen::VectorXd Hp;
  hvp_(p, Hp);
  ++stats_.hvps;
  return f_ + g_.dot(p) + 0.5 * p.dot(Hp);
}

SubproblemStep SteihaugSubproblem::solve(double radius) {
  ++stats_.solves;
  const auto n = g_.size();
  SubproblemStep step;
  if (gnorm_ == 0.0) {
    step.p = Eigen::VectorXd::Zero(n);
    step.hits_boundary = false;
    step.model_change = 0.0;
  } else {
    const double tol = tol_ >= 0.0 ? tol_ : forcing_tolerance(gnorm_);
    Eigen::VectorXd z = Eigen::VectorXd::Zero(n), Hz = Eigen::VectorXd::Zero(n);
    Eigen::VectorXd r = g_, d = -g_, Bd;
    // Scalars of the model along z + t d, carried so that no exit needs an extra HVP.
    double gz = 0.0, zHz = 0.0;
    bool finished = false;
    for (int64_t k = 0; k < cg_maxiter_ && !finished; ++k) {
      hvp_(d, Bd);
      ++stats_.hvps;
      ++stats_.inner_iterations;
      const double dBd = d.dot(Bd);
      const double rr = r.dot(r);
      const double gd = g_.dot(d), dHz = d.dot(Hz);
      auto model_along = [&](double t) { return gz + t * gd + 0.5 * zHz + t * dHz + 0.5 * t * t * dBd; };
      double t_lo = 0.0, t_hi = 0.0;
      if (dBd <= 0.0) {
        boundary_roots(z, d, radius, t_lo, t_hi);
        const double t = model_along(t_lo) < model_along(t_hi) ? t_lo : t_hi;
        step.p = z + t * d;
        step.model_change = model_along(t);
        step.hits_boundary = true;
        finished = true;
        break;
      }
      const double alpha = rr / dBd;
      Eigen::VectorXd z_next = z + alpha * d;
      if (z_next.norm() >= radius) {
        boundary_roots(z, d, radius, t_lo, t_hi);
        step.p = z + t_hi * d;
        step.model_change = model_along(t_hi);
        step.hits_boundary = true;
        finished = true;
        break;
      }
      Hz += alpha * Bd;
      r += alpha * Bd;
      gz += alpha * gd;
      zHz = z_next.dot(Hz);
      z = std::move(z_next);
      if (r.norm() < tol) {
        step.p = z;
        step.model_change = gz + 0.5 * zHz;
        step.hits_boundary = false;
        finished = true;
        break;
      }
      const double beta = r.dot(r) / rr;
      d = -r + beta * d;
    }
    if (!finished) {  // iteration cap: the last interior iterate
      step.p = z;
      step.model_change = gz + 0.5 * zHz;
      step.hits_boundary = false;
    }
  }
  step.model_value = f_ + step.model_change;
  last_p_ = step.p;
  last_model_ = step.model_value;
  have_last_ = true;
  return step;
}

// ---------------------------------------------------------------------------------------------
// GLTR

GltrSubproblem::GltrSubproblem(double f, Eigen::VectorXd g, HessianVectorProduct hvp, int64_t kmax,
                               double tol)
    : TrustRegionSubproblem(f, std::move(g)), hvp_(std::move(hvp)), kmax_(kmax), tol_(tol) {
  const int64_t n = g_.size();
  kmax_ = kmax_ > 0 ? std::min(kmax_, n) : std::min<int64_t>(n, 1000);
  kmax_ = std::max<int64_t>(kmax_, 1);
}

bool GltrSubproblem::lanczos_step() {
  const int64_t j = basis_size();
  const auto n = g_.size();
  if (j == 0) q_next_ = g_ / gnorm_;
  if (Q_.cols() <= j) {  // grow the basis buffer geometrically; unused columns are never read
    const int64_t capacity = std::min<int64_t>(kmax_, std::max<int64_t>(16, 2 * Q_.cols()));
    Q_.conservativeResize(n, std::max<int64_t>(capacity, j + 1));
  }
  Q_.col(j) = q_next_;
  Eigen::VectorXd u;
  hvp_(q_next_, u);
  ++stats_.hvps;
  ++stats_.inner_iterations;
  const double delta = q_next_.dot(u);
  Eigen::VectorXd w = u - delta * q_next_;
  if (j > 0) w -= offdiag_[j - 1] * Q_.col(j - 1);
  // Classical Gram–Schmidt twice against the whole basis: keeps it orthonormal to working
  // precision even when the Hessian is very ill-conditioned.
  const auto basis = Q_.leftCols(j + 1);
  for (int pass = 0; pass < 2; ++pass) {
    const Eigen::VectorXd c = basis.transpose() * w;
    w.noalias() -= basis * c;
  }
  const double gamma = w.norm();
  diag_.push_back(delta);
  offdiag_.push_back(gamma);
  q_next_ = w / std::max(gamma, std::numeric_limits<double>::min());
  return gamma > 1e-14 * std::max(1.0, std::abs(delta));
}

void GltrSubproblem::tridiagonal_solve(const Eigen::VectorXd& d, const Eigen::VectorXd& e, double gnorm,
                                       double radius, const DenseLinalg& linalg, Eigen::VectorXd& h,
                                       double& lambda, bool& boundary) {
  const auto k = d.size();
  Eigen::VectorXd w;
  Eigen::MatrixXd V;
  linalg.tridiagonal_eigen(d, e, w, V);
  const Eigen::VectorXd ghat = gnorm * V.row(0).transpose();
  const double w_min = w[0];
  auto step_norm = [&](double lam) { return (ghat.array() / (w.array() + lam)).matrix().norm(); };

  double lo = 0.0;
  const double lambda_floor = std::max(0.0, -w_min);
  if (w_min > 0.0) {
    const Eigen::VectorXd h0 = -(ghat.array() / w.array()).matrix();
    if (h0.norm() <= radius) {
      h = V * h0;
      lambda = 0.0;
      boundary = false;
      return;
    }
    lo = 0.0;  // the root lies in (0, ∞): no hard case possible
  } else {
    const double scale = 1e-12 * std::max(1.0, std::abs(w_min));
    const double lambda_eps = lambda_floor + scale + 1e-300;
    if (step_norm(lambda_eps) < radius) {
      // Hard case: the gradient has no weight on the bottom eigenspace; fill the remaining
      // length along it.
      Eigen::VectorXd hh(k);
      for (Eigen::Index i = 0; i < k; ++i) hh[i] = (w[i] - w_min) <= scale ? 0.0 : -ghat[i] / (w[i] - w_min);
      hh[0] += std::sqrt(std::max(radius * radius - hh.squaredNorm(), 0.0));
      h = V * hh;
      lambda = lambda_floor;
      boundary = true;
      return;
    }
    lo = lambda_eps;
  }
  double hi = std::max(2.0 * lo, lambda_floor + gnorm / radius + std::abs(w_min) + 1.0);
  for (int guard = 0; step_norm(hi) > radius && guard < 2000; ++guard) hi *= 2.0;
  for (int it = 0; it < 200 && hi - lo > 1e-15 * std::max(1.0, hi); ++it) {
    const double mid = 0.5 * (lo + hi);
    if (step_norm(mid) > radius)
      lo = mid;
    else
      hi = mid;
  }
  // The upper end keeps ‖h‖ ≤ Δ exactly; it is within 1e-15 relative of the root.
  lambda = hi;
  h = V * (-(ghat.array() / (w.array() + hi))).matrix();
  boundary = true;
}

double GltrSubproblem::projected_model(const Eigen::VectorXd& h) const {
  const auto k = h.size();
  double quad = 0.0;
  for (Eigen::Index i = 0; i < k; ++i) {
    quad += diag_[i] * h[i] * h[i];
    if (i + 1 < k) quad += 2.0 * offdiag_[i] * h[i] * h[i + 1];
  }
  return gnorm_ * h[0] + 0.5 * quad;  // m − f
}

double GltrSubproblem::model_value(const Eigen::VectorXd& p) {
  if (have_last_ && p.size() == last_p_.size() && p == last_p_) return last_model_;
  Eigen::VectorXd Hp;
  hvp_(p, Hp);
  ++stats_.hvps;
  return f_ + g_.dot(p) + 0.5 * p.dot(Hp);
}

SubproblemStep GltrSubproblem::solve(double radius) {
  ++stats_.solves;
  SubproblemStep step;
  const auto n = g_.size();
  if (gnorm_ == 0.0) {
    step.p = Eigen::VectorXd::Zero(n);
    step.model_change = 0.0;
    step.hits_boundary = false;
  } else {
    const double tol = tol_ >= 0.0 ? tol_ : forcing_tolerance(gnorm_);
    const DenseLinalg& linalg = default_linalg();
    Eigen::VectorXd h;
    double lambda = 0.0;
    bool hits = false;
    for (;;) {
      const int64_t k = basis_size();
      if (k > 0) {
        const Eigen::VectorXd d = Eigen::Map<const Eigen::VectorXd>(diag_.data(), k);
        const Eigen::VectorXd e = Eigen::Map<const Eigen::VectorXd>(offdiag_.data(), k - 1);
        tridiagonal_solve(d, e, gnorm_, radius, linalg, h, lambda, hits);
        const double residual = offdiag_[k - 1] * std::abs(h[k - 1]);
        const double tol_eff = hits ? 0.1 * tol : tol;
        if (residual <= tol_eff || !can_extend_) break;
        if (k >= kmax_) {
          log().debug("GLTR hit the subspace cap ({} Lanczos vectors); residual {:.3e}", kmax_, residual);
          break;
        }
      }
      can_extend_ = lanczos_step();
    }
    double model = projected_model(h);
    // False-convergence guard: a Krylov model that predicts no descent although ‖g‖ > 0 can only
    // come from lost orthogonality; the Cauchy step along −g (first Lanczos direction, exact
    // curvature δ₀) always predicts descent, so take it when it is better.
    const double delta0 = diag_[0];
    const double t = delta0 <= 0.0 ? radius : std::min(radius, gnorm_ / delta0);
    const double cauchy_model = -t * gnorm_ + 0.5 * t * t * delta0;  // m − f
    if (!(model < cauchy_model) && cauchy_model < 0.0 && model >= 0.0) {
      log().debug("GLTR: projected model predicts no descent (m - f = {:.3e}); using the Cauchy step", model);
      h = Eigen::VectorXd::Zero(h.size());
      h[0] = -t;
      model = cauchy_model;
      hits = t >= radius;
    }
    step.p = Q_.leftCols(h.size()) * h;
    step.model_change = model;
    step.hits_boundary = hits;
  }
  step.model_value = f_ + step.model_change;
  last_p_ = step.p;
  last_model_ = step.model_value;
  have_last_ = true;
  return step;
}

}  // namespace rabbit
