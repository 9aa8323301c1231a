// Nearly-exact trust-region subproblem (More–Sorensen 1983; Conn–Gould–Toint §7.3), following
// minimizers-and-sharding.md §3.1 with the potrf failure index used for the λ lower bound (D2)
// and scipy's pᵀ(H+λI)p in the hard-case test (D1).
#include <algorithm>
#include <cmath>
#include <limits>

#include "rabbit/core/logging.hpp"
#include "rabbit/minimize/subproblem.hpp"

namespace rabbit {

namespace {
constexpr double kEasy = 0.1;
constexpr double kTheta = 0.01;

double safeguarded_lambda(double lower, double upper) {
  return std::max(std::sqrt(std::max(lower * upper, 0.0)), lower + kTheta * (upper - lower));
}
}  // namespace

void boundary_roots(const Eigen::VectorXd& z, const Eigen::VectorXd& d, double radius, double& t_lo, double& t_hi) {
  const double a = d.squaredNorm();
  const double b = 2.0 * z.dot(d);
  const double c = z.squaredNorm() - radius * radius;
  if (a == 0.0) {
    t_lo = t_hi = 0.0;
    return;
  }
  const double s = std::sqrt(std::max(b * b - 4.0 * a * c, 0.0));
  const double aux = b + std::copysign(s, b);
  if (aux == 0.0) {  // b = 0 and c = 0: z on the sphere, d orthogonal to it
    t_lo = t_hi = 0.0;
    return;
  }
  const double r1 = -aux / (2.0 * a);
  const double r2 = -2.0 * c / aux;
  t_lo = std::min(r1, r2);
  t_hi = std::max(r1, r2);
}

ExactSubproblem::ExactSubproblem(double f, Eigen::VectorXd g, Eigen::MatrixXd H, const DenseLinalg& linalg)
    : TrustRegionSubproblem(f, std::move(g)), H_(std::move(H)), linalg_(linalg) {
  const auto n = H_.rows();
  if (n > 0) {
    const Eigen::VectorXd diag = H_.diagonal();
    const Eigen::VectorXd offsum = H_.cwiseAbs().rowwise().sum() - diag.cwiseAbs();
    gersh_lb_ = (diag - offsum).minCoeff();
    gersh_ub_ = (diag + offsum).maxCoeff();
    min_diag_ = diag.minCoeff();
  }
  norm_inf_ = linalg_.norm_inf(H_);
  norm_fro_ = linalg_.norm_frobenius(H_);
  close_to_zero_ = static_cast<double>(n) * std::numeric_limits<double>::epsilon() * norm_inf_;
}

double ExactSubproblem::model_value(const Eigen::VectorXd& p) {
  return f_ + g_.dot(p) + 0.5 * p.dot(H_ * p);
}

int64_t ExactSubproblem::factorize(double lambda, Eigen::MatrixXd& L) {
  ++stats_.factorizations;
  return linalg_.cholesky_shifted(H_, lambda, L);
}

void ExactSubproblem::smallest_singular(const Eigen::MatrixXd& L, const DenseLinalg& linalg, double& s_min,
                                        Eigen::VectorXd& z) {
  const auto n = L.rows();
  z.resize(n);
  for (Eigen::Index i = 0; i < n; ++i) z[i] = (i % 2 == 0) ? 1.0 : -1.0;
  z /= std::sqrt(static_cast<double>(n));
  for (int pass = 0; pass < 8; ++pass) {
    linalg.solve_lower(L, z);
    linalg.solve_lower_transpose(L, z);
    const double nz = z.norm();
    if (!(nz > 0.0) || !std::isfinite(nz)) break;
    z /= nz;
  }
  s_min = (L.triangularView<Eigen::Lower>().transpose() * z).norm();
}

// A + λI failed to factorise at leading order k: scipy's singular_leading_submatrix gives
// δ ≥ 0 and v with (A+λI+δ/‖v‖²·...)… concretely vᵀ(A + λI)v = −δ, so λ + δ/‖v‖² ≤ −λ_min(H).
double ExactSubproblem::lower_bound_from_failure(double lambda, int64_t failed_order, const Eigen::MatrixXd& L) const {
  const Eigen::Index m = failed_order - 1;  // size of the leading block that did factorise
  const double akk = H_(m, m) + lambda;
  if (m == 0) return lambda + std::max(-akk, 0.0);
  Eigen::VectorXd u = H_.col(m).head(m);
  linalg_.solve_lower(L, u);
  const double delta = u.squaredNorm() - akk;
  Eigen::VectorXd v = -u;
  linalg_.solve_lower_transpose(L, v);
  const double bound = lambda + std::max(delta, 0.0) / (v.squaredNorm() + 1.0);
  return std::isfinite(bound) ? bound : lambda;
}

SubproblemStep ExactSubproblem::finish(Eigen::VectorXd p, bool hits) {
  SubproblemStep step;
  step.model_value = model_value(p);
  step.p = std::move(p);
  step.hits_boundary = hits;
  return step;
}

SubproblemStep ExactSubproblem::fallback(const Eigen::VectorXd* p_last, const Eigen::MatrixXd* L_valid,
                                         double radius) {
  log().warn("trust-exact: lambda search hit maxiter={}; returning the best of the last step and the Cauchy step",
             max_lambda_trials);
  std::vector<Eigen::VectorXd> candidates;
  if (p_last && p_last->size() == g_.size() && p_last->allFinite()) {
    Eigen::VectorXd p = *p_last;
    const double pn = p.norm();
    if (pn > radius) p *= radius / pn;
    candidates.push_back(std::move(p));
  }
  if (gnorm_ > 0.0) {
    const double gHg = g_.dot(H_ * g_);
    const double t = gHg <= 0.0 ? radius / gnorm_ : std::min(radius / gnorm_, gnorm_ * gnorm_ / gHg);
    candidates.push_back(-t * g_);
  }
  if (candidates.empty()) {
    if (L_valid) {
      double s_min = 0.0;
      Eigen::VectorXd z;
      smallest_singular(*L_valid, linalg_, s_min, z);
      Eigen::VectorXd plus = radius * z;
      // ‖g‖ = 0: the model is symmetric in ±z, so either sign gives the same value; keep it if it
      // does not increase the model (D3: compare with f, not with 0).
      if (model_value(plus) <= f_) candidates.push_back(plus);
    }
    if (candidates.empty()) candidates.push_back(Eigen::VectorXd::Zero(g_.size()));
  }
  Eigen::VectorXd best = candidates.front();
  double best_model = model_value(best);
  for (size_t i = 1; i < candidates.size(); ++i) {
    const double m = model_value(candidates[i]);
    if (m < best_model) {
      best_model = m;
      best = candidates[i];
    }
  }
  const bool hits = best.norm() >= radius * (1.0 - 1e-12);
  return finish(std::move(best), hits);
}

SubproblemStep ExactSubproblem::solve(double radius) {
  ++stats_.solves;
  const auto n = g_.size();
  const double hnorm = std::min(norm_fro_, norm_inf_);
  double lambda_ub = std::max(0.0, gnorm_ / radius + std::min(-gersh_lb_, hnorm));
  double lambda_lb = std::max({0.0, -min_diag_, gnorm_ / radius - std::min(gersh_ub_, hnorm)});
  if (radius < previous_radius_ && have_saved_lower_bound_) lambda_lb = std::max(lambda_lb, saved_lower_bound_);
  double lambda = lambda_lb == 0.0 ? 0.0 : safeguarded_lambda(lambda_lb, lambda_ub);

  Eigen::MatrixXd L;
  int64_t info = 0;
  bool already_factorized = false;
  bool hits = true;
  int trials = 0;
  Eigen::VectorXd p;
  bool have_p = false;
  SubproblemStep result;
  bool done = false;

  while (!done) {
    if (already_factorized) {
      already_factorized = false;
    } else {
      info = factorize(lambda, L);
    }
    if (trials >= max_lambda_trials) {
      result = fallback(have_p ? &p : nullptr, info == 0 ? &L : nullptr, radius);
      break;
    }
    ++trials;
    ++stats_.inner_iterations;

    if (info == 0 && gnorm_ > close_to_zero_) {
      p = -g_;
      linalg_.solve_lower(L, p);
      linalg_.solve_lower_transpose(L, p);
      have_p = true;
      const double pn = p.norm();
      if (pn <= radius && lambda == 0.0) {
        hits = false;
        result = finish(p, hits);
        break;
      }
      Eigen::VectorXd w = p;
      linalg_.solve_lower(L, w);
      const double wn = w.norm();
      const double lambda_new = std::max(0.0, lambda + (pn / wn) * (pn / wn) * (pn - radius) / radius);
      if (pn < radius) {
        // Inside with λ > 0: try the hard-case correction along the near-null vector of H + λI.
        double s_min = 0.0;
        Eigen::VectorXd z;
        smallest_singular(L, linalg_, s_min, z);
        double ta = 0.0, tb = 0.0;
        boundary_roots(p, z, radius, ta, tb);
        const double t = std::abs(ta) < std::abs(tb) ? ta : tb;
        const double q = (L.triangularView<Eigen::Lower>().transpose() * p).squaredNorm();  // pᵀ(H+λI)p
        if (t * t * s_min * s_min <= k_hard * (q + lambda * radius * radius)) {
          // Weak duality certifies the step: for H + λI ⪰ 0 the optimal model value is at least
          // m(p) − ½λ(Δ² − ‖p‖²), so the corrected step is accepted only when its reduction is a
          // known fraction of the best possible one (and never when it raises the model).
          Eigen::VectorXd corrected = p + t * z;
          const double m_p = model_value(p);
          const double m_corrected = model_value(corrected);
          const double bound = m_p - 0.5 * lambda * (radius * radius - pn * pn);
          if (m_corrected <= m_p && f_ - m_corrected >= hard_case_certified_ratio * (f_ - bound)) {
            result = finish(std::move(corrected), true);
            break;
          }
        }
        lambda_ub = lambda;
        lambda_lb = std::max(lambda_lb, lambda - s_min * s_min);
        // A Newton step at or below the proven lower bound would only fail to factorise.
        info = lambda_new > lambda_lb ? factorize(lambda_new, L) : -1;
        if (info == 0) {
          lambda = lambda_new;
          already_factorized = true;
        } else {
          if (info > 0) lambda_lb = std::max({lambda_lb, lambda_new, lower_bound_from_failure(lambda_new, info, L)});
          lambda = safeguarded_lambda(lambda_lb, lambda_ub);
        }
      } else {
        if (std::abs(pn - radius) / radius <= kEasy) {
          result = finish(p, true);
          break;
        }
        lambda_lb = lambda;
        lambda = lambda_new;
      }
    } else if (info == 0) {
      // ‖g‖ ≈ 0: only negative curvature can give a decrease.
      if (lambda == 0.0) {
        result = finish(Eigen::VectorXd::Zero(n), false);
        break;
      }
      double s_min = 0.0;
      Eigen::VectorXd z;
      smallest_singular(L, linalg_, s_min, z);
      if (s_min * s_min <= k_hard * lambda) {
        Eigen::VectorXd candidate = radius * z;
        if (model_value(candidate) <= f_) {
          result = finish(std::move(candidate), true);
          break;
        }
      }
      lambda_ub = lambda;
      lambda_lb = std::max(lambda_lb, lambda - s_min * s_min);
      lambda = safeguarded_lambda(lambda_lb, lambda_ub);
    } else {
      // H + λI is not positive definite: λ < −λ_min(H), and the failing minor sharpens that bound.
      lambda_lb = std::max({lambda_lb, lambda, lower_bound_from_failure(lambda, info, L)});
      if (lambda_ub - lambda_lb <= 1e-10 * std::max(1.0, lambda_ub)) lambda_ub = 2.0 * lambda_ub + 1.0;
      if (lambda_ub < lambda_lb) lambda_ub = 2.0 * lambda_lb + 1.0;
      lambda = safeguarded_lambda(lambda_lb, lambda_ub);
    }
  }
  saved_lower_bound_ = lambda_lb;
  have_saved_lower_bound_ = true;
  previous_radius_ = radius;
  (void)done;
  return result;
}

}  // namespace rabbit
