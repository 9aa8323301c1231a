// Nearly-exact trust-region subproblem (More–Sorensen 1983; Conn–Gould–Toint §7.3), following
// docs/minimizers.md "Subproblems" with the potrf failure index used for the λ lower bound
// and scipy's pᵀ(H+λI)p in the hard-case test (both adopted from upstream's recommendations).
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

void boundary_roots(const Eigen::VectorXd& z, const Eigen::VectorXd& d, double radius, double& t_lo,
                    double& t_hi) {
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
double ExactSubproblem::lower_bound_from_failure(double lambda, int64_t failed_order,
                                                 const Eigen::MatrixXd& L) const {
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

SubproblemStep ExactSubproblem::finish(Eigen::VectorXd p, bool hits, double lambda) {
  SubproblemStep step;
  step.model_change = g_.dot(p) + 0.5 * p.dot(H_ * p);
  step.model_value = f_ + step.model_change;
  step.p = std::move(p);
  step.hits_boundary = hits;
  last_lambda_ = lambda;
  return step;
}

// Two Lanczos runs sharing one block product H·[q_g q_r] per step, with classical Gram–Schmidt
// applied twice against each run's basis. The run from g gives the projected trust-region
// problem (its multiplier is the first λ of a solve); the run from a fixed pseudo-random vector
// gives the smallest Ritz value θ ≥ λ_min(H), so −θ is a proven lower bound on λ*, which is
// what keeps the first factorisation from failing on indefinite and hard-case Hessians (the Krylov
// space of g never sees an eigenvector g is orthogonal to).
void ExactSubproblem::lanczos_start(double radius) {
  have_start_ = true;
  ritz_min_ = std::numeric_limits<double>::infinity();
  ritz_residual_ = 0.0;
  const Eigen::Index n = g_.size();
  if (start_lanczos_steps <= 0 || n == 0) return;
  const Eigen::Index kmax = std::min<Eigen::Index>(n, start_lanczos_steps);
  const double scale = std::max(norm_inf_, std::numeric_limits<double>::min());
  struct Run {
    Eigen::MatrixXd Q;
    std::vector<double> alpha, beta;
    Eigen::VectorXd q;
    bool active = true;
    double last_estimate = std::numeric_limits<double>::quiet_NaN();
  };
  Run runs[2];
  runs[0].active = gnorm_ > close_to_zero_;
  if (runs[0].active) runs[0].q = g_ / gnorm_;
  {
    // splitmix64: a deterministic start without any correlation to the matrix's structure.
    uint64_t state = 0x9E3779B97F4A7C15ull ^ static_cast<uint64_t>(n);
    runs[1].q.resize(n);
    for (Eigen::Index i = 0; i < n; ++i) {
      uint64_t z = (state += 0x9E3779B97F4A7C15ull);
      z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
      z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
      z ^= z >> 31;
      runs[1].q[i] = static_cast<double>(z >> 11) * 0x1.0p-53 - 0.5;
    }
    runs[1].q.normalize();
  }
  for (Run& r : runs) r.Q.resize(n, kmax);

  Eigen::MatrixXd X, Y;
  Eigen::VectorXd w_ritz;
  Eigen::MatrixXd V_ritz;
  auto smallest_ritz = [&](const Run& r, double& theta, double& residual) {
    const auto k = static_cast<Eigen::Index>(r.alpha.size());
    const Eigen::VectorXd a = Eigen::Map<const Eigen::VectorXd>(r.alpha.data(), k);
    const Eigen::VectorXd b = Eigen::Map<const Eigen::VectorXd>(r.beta.data(), k - 1);
    linalg_.tridiagonal_eigen(a, b, w_ritz, V_ritz);
    theta = w_ritz[0];
    residual = r.beta[k - 1] * std::abs(V_ritz(k - 1, 0));
  };
  for (Eigen::Index j = 0; j < kmax; ++j) {
    int active[2], m = 0;
    for (int r = 0; r < 2; ++r)
      if (runs[r].active) active[m++] = r;
    if (m == 0) break;
    X.resize(n, m);
    for (int c = 0; c < m; ++c) X.col(c) = runs[active[c]].q;
    linalg_.symmetric_multiply(H_, X, Y);
    stats_.hvps += m;
    for (int c = 0; c < m; ++c) {
      Run& r = runs[active[c]];
      r.Q.col(j) = r.q;
      Eigen::VectorXd w = Y.col(c);
      const double a = r.q.dot(w);
      w -= a * r.q;
      if (j > 0) w -= r.beta[j - 1] * r.Q.col(j - 1);
      const auto basis = r.Q.leftCols(j + 1);
      for (int pass = 0; pass < 2; ++pass) {
        const Eigen::VectorXd cgs = basis.transpose() * w;
        w.noalias() -= basis * cgs;
      }
      const double b = w.norm();
      r.alpha.push_back(a);
      r.beta.push_back(b);
      if (!(b > 1e-14 * scale)) {  // invariant subspace: T is exact on it
        r.active = false;
        continue;
      }
      r.q = w / b;
      if ((j + 1) % 4 != 0) continue;
      if (active[c] == 0) {
        // Stop when the projected multiplier has settled (it only seeds the Newton iteration).
        krylov_diag_ = Eigen::Map<const Eigen::VectorXd>(r.alpha.data(), j + 1);
        krylov_offdiag_ = Eigen::Map<const Eigen::VectorXd>(r.beta.data(), j);
        const double lam = krylov_lambda(radius);
        if (std::abs(lam - r.last_estimate) <= 1e-3 * std::max(lam, 1e-12 * scale)) r.active = false;
        r.last_estimate = lam;
      } else {
        double theta = 0.0, residual = 0.0;
        smallest_ritz(r, theta, residual);
        if (residual <= 1e-10 * scale) r.active = false;
      }
    }
  }
  for (int r = 0; r < 2; ++r) {
    if (runs[r].alpha.empty()) continue;
    double theta = 0.0, residual = 0.0;
    smallest_ritz(runs[r], theta, residual);
    if (theta < ritz_min_) {
      ritz_min_ = theta;
      ritz_residual_ = residual;
    }
  }
  if (!runs[0].alpha.empty()) {
    const auto k = static_cast<Eigen::Index>(runs[0].alpha.size());
    krylov_diag_ = Eigen::Map<const Eigen::VectorXd>(runs[0].alpha.data(), k);
    krylov_offdiag_ = Eigen::Map<const Eigen::VectorXd>(runs[0].beta.data(), k - 1);
  }
}

// Multiplier of the trust-region problem projected on the Krylov space of g (0: interior), or −1
// without one. For H + λI ≻ 0 the Galerkin step is never longer than p(λ) (CG iterates grow in
// norm), so this estimate lies at or below λ*: the Newton iteration starts on its monotone side.
double ExactSubproblem::krylov_lambda(double radius) const {
  if (krylov_diag_.size() == 0) return -1.0;
  Eigen::VectorXd h;
  double lambda = 0.0;
  bool boundary = false;
  GltrSubproblem::tridiagonal_solve(krylov_diag_, krylov_offdiag_, gnorm_, radius, linalg_, h, lambda,
                                    boundary);
  return std::isfinite(lambda) ? lambda : -1.0;
}

// Hard case: λ − s² (s² = zᵀ(H+λI)z, the Rayleigh quotient of the near-null vector) is a lower
// bound on −λ_min(H) that inverse iteration makes tight to rounding, so one factorisation just
// above it gives the KKT point p(λ') + t z with ‖(H+λ'I)(p + tz) + g‖ = t‖(H+λ'I)z‖ ≈ t·margin.
bool ExactSubproblem::refine_hard_case(double lambda, double s_min_sq, double radius, Eigen::VectorXd& p_out,
                                       double& lambda_out) {
  const double lam0 = lambda - s_min_sq;
  double margin = 1e-12 * std::max({norm_inf_, std::abs(lambda), 1e-300});
  for (int attempt = 0; attempt < 2; ++attempt, margin *= 1e3) {
    const double lam = std::max(lam0 + margin, 0.0);
    if (!(lam < lambda)) return false;
    Eigen::MatrixXd L;
    if (factorize(lam, L) != 0) continue;
    Eigen::VectorXd p = -g_;
    linalg_.solve_lower(L, p);
    linalg_.solve_lower_transpose(L, p);
    if (!p.allFinite() || p.norm() >= radius) return false;  // not the hard case after all
    double s_min = 0.0;
    Eigen::VectorXd z;
    smallest_singular(L, linalg_, s_min, z);
    double ta = 0.0, tb = 0.0;
    boundary_roots(p, z, radius, ta, tb);
    const double t = std::abs(ta) < std::abs(tb) ? ta : tb;
    p_out = p + t * z;
    lambda_out = lam;
    return p_out.allFinite();
  }
  return false;
}

SubproblemStep ExactSubproblem::fallback(const Eigen::VectorXd* p_last, const Eigen::MatrixXd* L_valid,
                                         double radius) {
  log().warn(
      "trust-exact: lambda search hit maxiter={}; returning the best of the last step and the Cauchy step",
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
  return finish(std::move(best), hits, std::numeric_limits<double>::quiet_NaN());
}

SubproblemStep ExactSubproblem::solve(double radius) {
  ++stats_.solves;
  const auto n = g_.size();
  if (!have_start_) lanczos_start(radius);
  const double hnorm = std::min(norm_fro_, norm_inf_);
  double lambda_ub = std::max(0.0, gnorm_ / radius + std::min(-gersh_lb_, hnorm));
  double lambda_lb = std::max({0.0, -min_diag_, gnorm_ / radius - std::min(gersh_ub_, hnorm)});
  if (radius < previous_radius_ && have_saved_lower_bound_)
    lambda_lb = std::max(lambda_lb, saved_lower_bound_);
  const bool have_ritz = std::isfinite(ritz_min_);
  if (have_ritz) lambda_lb = std::max(lambda_lb, -ritz_min_);  // θ ≥ λ_min(H), so λ* ≥ −θ
  if (lambda_ub < lambda_lb) lambda_ub = lambda_lb;

  // First λ: the Krylov estimate (≤ λ*), lifted just above −θ when H looks indefinite so that
  // the first factorisation succeeds; without a start, the spec's safeguarded bracket point.
  double lambda = lambda_lb == 0.0 ? 0.0 : safeguarded_lambda(lambda_lb, lambda_ub);
  const double guess = gnorm_ > close_to_zero_ ? krylov_lambda(radius) : -1.0;
  if (guess >= 0.0 || (have_ritz && ritz_min_ < 0.0)) {
    double start = std::max(guess, 0.0);
    if (have_ritz && ritz_min_ < 0.0)
      start = std::max(start, -ritz_min_ + std::max(ritz_residual_, 1e-10 * std::max(hnorm, 1e-300)));
    if (start < lambda_lb || (start == lambda_lb && lambda_lb > 0.0))
      start = lambda_lb + kTheta * (lambda_ub - lambda_lb);
    lambda = std::min(start, lambda_ub);
  }

  Eigen::MatrixXd L;
  int64_t info = 0;
  bool already_factorized = false;
  int trials = 0;
  Eigen::VectorXd p;
  bool have_p = false;
  SubproblemStep result;
  const double ratio = hard_case_certified_ratio;

  for (;;) {
    if (already_factorized) {
      already_factorized = false;
    } else {
      info = factorize(lambda, L);
    }
    if (trials >= max_lambda_trials) {
      result = fallback(have_p ? &p : nullptr, info == 0 ? &L : nullptr, radius);
      last_lambda_ = std::numeric_limits<double>::quiet_NaN();
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
        result = finish(p, false, 0.0);
        break;
      }
      Eigen::VectorXd w = p;
      linalg_.solve_lower(L, w);
      const double wn = w.norm();
      const double lambda_new = std::max(0.0, lambda + (pn / wn) * (pn / wn) * (pn - radius) / radius);
      // Weak duality: with H + λI ≻ 0, every feasible step has m ≥ m(p) + ½λ(‖p‖² − Δ²), so
      // reduction_bound ≥ the optimal reduction f − m*. Here q = pᵀ(H+λI)p = −gᵀp.
      const double q = -g_.dot(p);
      const double pHp = q - lambda * pn * pn;
      const double reduction_bound = 0.5 * (q + lambda * radius * radius);
      const double scale_to_sphere = radius / pn;
      const double scaled_reduction = scale_to_sphere * q - 0.5 * scale_to_sphere * scale_to_sphere * pHp;
      if (pn < radius) {
        // Inside with λ > 0 (λ ≥ λ*). Candidates: the hard-case correction along the near-null
        // vector of H + λI and the Newton step stretched onto the sphere; the better one is
        // accepted only when certified to reach `ratio` of the optimal reduction.
        double s_min = 0.0;
        Eigen::VectorXd z;
        smallest_singular(L, linalg_, s_min, z);
        double ta = 0.0, tb = 0.0;
        boundary_roots(p, z, radius, ta, tb);
        const double t = std::abs(ta) < std::abs(tb) ? ta : tb;
        const double m_p = f_ - q + 0.5 * pHp;  // f + gᵀp + ½pᵀHp
        Eigen::VectorXd corrected = p + t * z;
        const double m_corrected = model_value(corrected);
        const bool correction_ok = t * t * s_min * s_min <= k_hard * (q + lambda * radius * radius) &&
                                   m_corrected <= m_p && f_ - m_corrected >= ratio * reduction_bound;
        const bool scaled_ok = scaled_reduction >= ratio * reduction_bound;
        if (scaled_ok && (!correction_ok || f_ - scaled_reduction <= m_corrected)) {
          result = finish(scale_to_sphere * p, true, lambda);
          break;
        }
        if (correction_ok) {
          double lambda_exit = lambda;
          // (H+λI)(p + tz) + g = t(H+λI)z: tighten it when the near-null vector is not null enough.
          Eigen::VectorXd hz = L.triangularView<Eigen::Lower>().transpose() * z;
          hz = L.triangularView<Eigen::Lower>() * hz;
          if (std::abs(t) * hz.norm() > hard_case_kkt_tol * gnorm_) {
            Eigen::VectorXd refined;
            double lambda_refined = 0.0;
            if (refine_hard_case(lambda, s_min * s_min, radius, refined, lambda_refined) &&
                model_value(refined) <= m_corrected + 1e-12 * std::abs(f_ - m_corrected)) {
              corrected = std::move(refined);
              lambda_exit = lambda_refined;
            }
          }
          result = finish(std::move(corrected), true, lambda_exit);
          break;
        }
        lambda_ub = lambda;
        lambda_lb = std::max(lambda_lb, lambda - s_min * s_min);
        // A Newton step at or below the proven lower bound would only fail to factorise.
        info = lambda_new > lambda_lb ? factorize(lambda_new, L) : -1;
        if (info == 0) {
          lambda = lambda_new;
          already_factorized = true;
        } else {
          if (info > 0)
            lambda_lb = std::max({lambda_lb, lambda_new, lower_bound_from_failure(lambda_new, info, L)});
          lambda = safeguarded_lambda(lambda_lb, lambda_ub);
        }
      } else {
        // Outside (λ ≤ λ*): scipy's k_easy exit, or the step scaled back onto the sphere when
        // the dual bound certifies it.
        if (std::abs(pn - radius) / radius <= kEasy) {
          result = finish(p, true, lambda);
          break;
        }
        if (scaled_reduction >= ratio * reduction_bound) {
          result = finish(scale_to_sphere * p, true, lambda);
          break;
        }
        lambda_lb = lambda;
        lambda = lambda_new;
      }
    } else if (info == 0) {
      // ‖g‖ ≈ 0: only negative curvature can give a decrease.
      if (lambda == 0.0) {
        result = finish(Eigen::VectorXd::Zero(n), false, 0.0);
        break;
      }
      double s_min = 0.0;
      Eigen::VectorXd z;
      smallest_singular(L, linalg_, s_min, z);
      if (s_min * s_min <= k_hard * lambda) {
        Eigen::VectorXd candidate = radius * z;
        if (model_value(candidate) <= f_) {
          result = finish(std::move(candidate), true, lambda);
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
  return result;
}

}  // namespace rabbit
