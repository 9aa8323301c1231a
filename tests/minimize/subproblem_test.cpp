// Subproblem solvers against an exact eigendecomposition reference.
#include "rabbit/minimize/subproblem.hpp"

#include <gtest/gtest.h>

#include <Eigen/Eigenvalues>
#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "rabbit/minimize/dense_linalg.hpp"
#include "support/analytic_objectives.hpp"

using namespace rabbit;

namespace {

struct ExactSolution {
  Eigen::VectorXd p;
  double model = 0.0;  // gᵀp + ½pᵀHp (without f)
  bool boundary = false;
  bool hard = false;
};

double quadratic_model(const Eigen::MatrixXd& H, const Eigen::VectorXd& g, const Eigen::VectorXd& p) {
  return g.dot(p) + 0.5 * p.dot(H * p);
}

// Global minimiser of the trust-region subproblem from the eigendecomposition, hard case included.
ExactSolution exact_trust_region(const Eigen::MatrixXd& H, const Eigen::VectorXd& g, double radius) {
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(H);
  const Eigen::VectorXd w = es.eigenvalues();
  const Eigen::MatrixXd& V = es.eigenvectors();
  const Eigen::VectorXd gh = V.transpose() * g;
  const double w_min = w[0];
  auto norm_at = [&](double lam) { return (gh.array() / (w.array() + lam)).matrix().norm(); };
  ExactSolution s;
  if (w_min > 0 && norm_at(0.0) <= radius) {
    s.p = V * (-(gh.array() / w.array())).matrix();
  } else {
    const double lam_lo = std::max(0.0, -w_min);
    const double tiny = 1e-13 * std::max(1.0, std::abs(w_min));
    if (w_min <= 0 && norm_at(lam_lo + tiny) < radius) {
      Eigen::VectorXd h(w.size());
      for (Eigen::Index i = 0; i < w.size(); ++i)
        h[i] = (w[i] - w_min) <= 1e-10 * std::max(1.0, std::abs(w_min)) ? 0.0 : -gh[i] / (w[i] - w_min);
      h[0] = std::sqrt(std::max(radius * radius - h.squaredNorm(), 0.0));
      s.p = V * h;
      s.hard = true;
    } else {
      double lo = w_min > 0 ? 0.0 : lam_lo + tiny, hi = lam_lo + g.norm() / radius + std::abs(w_min) + 1.0;
      while (norm_at(hi) > radius) hi *= 2;
      for (int it = 0; it < 300; ++it) {
        const double mid = 0.5 * (lo + hi);
        (norm_at(mid) > radius ? lo : hi) = mid;
      }
      s.p = V * (-(gh.array() / (w.array() + hi))).matrix();
    }
    s.boundary = true;
  }
  s.model = quadratic_model(H, g, s.p);
  return s;
}

struct Case {
  Eigen::MatrixXd H;
  Eigen::VectorXd g;
  std::string label;
};

// PD, indefinite, wide-spectrum and constructed hard cases of size n.
std::vector<Case> make_cases(int n, std::mt19937& rng) {
  std::uniform_real_distribution<double> uni(0.0, 1.0);
  std::normal_distribution<double> normal;
  std::vector<Case> cases;
  for (int family = 0; family < 4; ++family) {
    Eigen::VectorXd w(n);
    for (int i = 0; i < n; ++i) {
      switch (family) {
        case 0:
          w[i] = 0.1 + 9.9 * uni(rng);
          break;  // PD
        case 1:
          w[i] = -5.0 + 15.0 * uni(rng);
          break;  // indefinite
        case 2:
          w[i] = std::pow(10.0, -3.0 + 6.0 * i / (n - 1));
          break;  // PD, cond 1e6
        default:
          w[i] = -2.0 + 12.0 * uni(rng);
          break;  // hard case below
      }
    }
    if (family == 1) w[0] = -std::abs(w[0]) - 0.5;
    std::sort(w.data(), w.data() + n);
    if (family == 3) w[0] = -3.0;
    const Eigen::MatrixXd Q = test::random_orthogonal(n, rng);
    Eigen::MatrixXd H = Q * w.asDiagonal() * Q.transpose();
    H = 0.5 * (H + H.transpose()).eval();
    Eigen::VectorXd g(n);
    for (int i = 0; i < n; ++i) g[i] = normal(rng);
    if (family == 3) g -= Q.col(0) * Q.col(0).dot(g);  // no weight on the bottom eigenvector
    cases.push_back({H, g,
                     family == 0   ? "pd"
                     : family == 1 ? "indefinite"
                     : family == 2 ? "cond1e6"
                                   : "hard"});
  }
  return cases;
}

}  // namespace

TEST(ExactSubproblem, ModelReductionAndFactorizationsOverManyCases) {
  std::mt19937 rng(2024);
  double worst = 1.0;
  int64_t solves = 0, factorizations = 0;
  std::map<std::string, std::pair<int64_t, int64_t>> by_family;  // label → (solves, factorizations)
  for (int n : {20, 50, 120, 300, 500}) {
    for (int trial = 0; trial < (n >= 300 ? 1 : 3); ++trial) {
      for (const Case& c : make_cases(n, rng)) {
        for (double radius : {0.01, 0.3, 1.0, 10.0, 100.0}) {
          ExactSubproblem sub(0.0, c.g, c.H);
          const SubproblemStep step = sub.solve(radius);
          const ExactSolution ref = exact_trust_region(c.H, c.g, radius);
          const double true_model = quadratic_model(c.H, c.g, step.p);
          EXPECT_NEAR(step.model_value, true_model, 1e-9 * (1 + std::abs(true_model)));
          EXPECT_LE(step.p.norm(), radius * (1 + 0.1 + 1e-6)) << c.label << " n=" << n << " r=" << radius;
          ASSERT_LT(ref.model, 0.0);
          const double ratio = true_model / ref.model;
          worst = std::min(worst, ratio);
          EXPECT_GE(ratio, 0.96) << c.label << " n=" << n << " radius=" << radius;
          solves += sub.stats().solves;
          factorizations += sub.stats().factorizations;
          auto& fam = by_family[c.label + " r=" + std::to_string(radius).substr(0, 5)];
          fam.first += sub.stats().solves;
          fam.second += sub.stats().factorizations;
        }
      }
    }
  }
  const double per_solve = static_cast<double>(factorizations) / solves;
  RecordProperty("worst_ratio", std::to_string(worst));
  RecordProperty("factorizations_per_solve", std::to_string(per_solve));
  std::printf(
      "trust-exact: worst model reduction %.4f of exact, %.2f factorizations per solve (%lld solves)\n",
      worst, per_solve, static_cast<long long>(solves));
  for (const auto& [label, counts] : by_family)
    std::printf("  %-22s %.2f factorizations per solve\n", label.c_str(),
                static_cast<double>(counts.second) / counts.first);
  // Issue 4: at most 2 on average (measured 1.25: the Lanczos start puts the first λ within the
  // k_easy window or just above −λ_min; see docs/minimizers.md).
  EXPECT_LE(per_solve, 2.0);
}

TEST(ExactSubproblem, HardCaseSatisfiesKktConditions) {
  // Constructed hard cases: g has no weight on the bottom eigenvector(s) and Δ exceeds
  // ‖(H − λ_min I)⁺ g‖, so λ* = −λ_min and the solution needs a component along the null space.
  std::mt19937 rng(5);
  std::normal_distribution<double> normal;
  int cases = 0;
  for (int n : {10, 40, 150}) {
    for (int variant = 0; variant < 3; ++variant) {
      Eigen::VectorXd w = Eigen::VectorXd::LinSpaced(n, -2.0, 8.0);
      if (variant == 1) w[1] = w[0];                                     // double bottom eigenvalue
      if (variant == 2) w = Eigen::VectorXd::LinSpaced(n, -1e-3, 50.0);  // nearly singular bottom
      const Eigen::MatrixXd Q = test::random_orthogonal(n, rng);
      Eigen::MatrixXd H = Q * w.asDiagonal() * Q.transpose();
      H = 0.5 * (H + H.transpose()).eval();
      Eigen::VectorXd g(n);
      for (int i = 0; i < n; ++i) g[i] = normal(rng);
      const int null_dim = variant == 1 ? 2 : 1;
      for (int k = 0; k < null_dim; ++k) g -= Q.col(k) * Q.col(k).dot(g);
      Eigen::VectorXd h_min(n);  // ‖(H − λ_min I)⁺ g‖: the hard case needs Δ above it
      for (int i = 0; i < n; ++i) h_min[i] = i < null_dim ? 0.0 : Q.col(i).dot(g) / (w[i] - w[0]);
      for (double factor : {1.5, 4.0, 50.0}) {
        const double radius = factor * h_min.norm();
        ExactSubproblem sub(0.0, g, H);
        const SubproblemStep step = sub.solve(radius);
        const ExactSolution ref = exact_trust_region(H, g, radius);
        ASSERT_TRUE(ref.hard) << "n=" << n << " variant " << variant;
        const double lambda = sub.last_lambda();
        SCOPED_TRACE(::testing::Message()
                     << "n=" << n << " variant " << variant << " radius " << radius << " lambda " << lambda);
        EXPECT_TRUE(step.hits_boundary);
        // KKT: (H + λI)p = −g, λ ≥ 0, ‖p‖ = Δ, H + λI positive semidefinite (λ ≥ −λ_min).
        const Eigen::MatrixXd shifted = H + lambda * Eigen::MatrixXd::Identity(n, n);
        EXPECT_LE((shifted * step.p + g).norm(), 1e-8 * g.norm());
        EXPECT_GE(lambda, 0.0);
        EXPECT_NEAR(step.p.norm(), radius, 1e-6 * radius);
        Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(shifted, Eigen::EigenvaluesOnly);
        EXPECT_GE(es.eigenvalues()[0], -1e-12 * H.norm());
        EXPECT_NEAR(lambda, -w[0], 1e-8 * std::max(1.0, std::abs(w[0])));
        // A KKT point with H + λI ⪰ 0 is the global minimiser: the model matches the exact one.
        EXPECT_NEAR(quadratic_model(H, g, step.p), ref.model, 1e-8 * std::abs(ref.model));
        EXPECT_NEAR(step.model_value, quadratic_model(H, g, step.p), 1e-9 * std::abs(ref.model));
        ++cases;
      }
    }
  }
  EXPECT_EQ(cases, 27);
}

TEST(ExactSubproblem, ResolveAtASmallerRadiusAfterARejection) {
  // The outer loop re-solves at Δ/4 after a rejection; the saved λ lower bound and the Lanczos
  // start carry over, and the steps stay as good as fresh solves.
  std::mt19937 rng(8);
  for (const Case& c : make_cases(60, rng)) {
    ExactSubproblem sub(0.0, c.g, c.H);
    for (double radius = 40.0; radius > 1e-3; radius /= 4.0) {
      const SubproblemStep step = sub.solve(radius);
      const ExactSolution ref = exact_trust_region(c.H, c.g, radius);
      EXPECT_LE(step.p.norm(), radius * (1 + 0.1 + 1e-6)) << c.label << " r=" << radius;
      EXPECT_GE(quadratic_model(c.H, c.g, step.p) / ref.model, 0.96) << c.label << " r=" << radius;
    }
    EXPECT_LE(sub.stats().factorizations, 2 * sub.stats().solves) << c.label;
  }
}

TEST(SmallestSingular, InverseIterationFindsTheGap) {
  std::mt19937 rng(11);
  for (int n : {10, 50}) {
    for (double gap : {1e-8, 1e-4, 1e-1}) {
      Eigen::VectorXd w(n);
      w[0] = gap;
      w.tail(n - 1) = Eigen::VectorXd::LinSpaced(n - 1, 1.0, 10.0);
      const Eigen::MatrixXd Q = test::random_orthogonal(n, rng);
      const Eigen::MatrixXd A = Q * w.asDiagonal() * Q.transpose();
      Eigen::MatrixXd L;
      ASSERT_EQ(default_linalg().cholesky(0.5 * (A + A.transpose()), L), 0);
      double s = 0;
      Eigen::VectorXd z;
      ExactSubproblem::smallest_singular(L, default_linalg(), s, z);
      EXPECT_NEAR(z.norm(), 1.0, 1e-12);
      EXPECT_GE(s, std::sqrt(gap) * (1 - (gap < 1e-6 ? 1e-4 : 1e-9)));
      if (gap <= 1e-4) {
        EXPECT_LE(s, std::sqrt(gap) * (1 + 1e-6));
        EXPECT_GT(std::abs(z.dot(Q.col(0))), 1 - 1e-8);
      } else {
        EXPECT_LE(s, 10 * std::sqrt(gap));
      }
    }
  }
}

TEST(DenseLinalg, CholeskyFailureIndexMatchesLapack) {
  std::mt19937 rng(3);
  const int n = 200;
  Eigen::VectorXd w = Eigen::VectorXd::LinSpaced(n, 1.0, 5.0);
  Eigen::MatrixXd A = test::with_spectrum(w, rng);
  EigenLinalg eigen_la;
  LapackLinalg lapack_la;
  Eigen::MatrixXd L1, L2;
  EXPECT_EQ(eigen_la.cholesky(A, L1), 0);
  EXPECT_EQ(lapack_la.cholesky(A, L2), 0);
  EXPECT_LT((L1 - L2).cwiseAbs().maxCoeff(), 1e-12);
  EXPECT_LT((L1 * L1.transpose() - A).cwiseAbs().maxCoeff(), 1e-12);
  for (int k : {1, 2, 37, 130, 200}) {  // make the k-th leading minor the first indefinite one
    Eigen::MatrixXd B = A;
    B(k - 1, k - 1) = -1.0;
    EXPECT_EQ(eigen_la.cholesky(B, L1), k);
    EXPECT_EQ(lapack_la.cholesky(B, L2), k);
    if (k > 1) {
      const auto m = k - 1;
      const Eigen::MatrixXd lead = L1.topLeftCorner(m, m).triangularView<Eigen::Lower>();
      EXPECT_LT((lead * lead.transpose() - B.topLeftCorner(m, m)).cwiseAbs().maxCoeff(), 1e-11);
    }
  }
  EXPECT_NEAR(eigen_la.norm_inf(A), A.cwiseAbs().rowwise().sum().maxCoeff(), 1e-12);
}

TEST(SteihaugSubproblem, ReproducesAReferenceCg) {
  std::mt19937 rng(17);
  for (const Case& c : make_cases(10, rng)) {
    for (double radius : {0.01, 1.0, 100.0}) {
      // Textbook Steihaug-CG on the dense matrix (Nocedal–Wright alg. 7.2).
      const double gn = c.g.norm();
      const double tol = std::min(0.5, std::sqrt(gn)) * gn;
      Eigen::VectorXd z = Eigen::VectorXd::Zero(10), r = c.g, d = -c.g, ref;
      bool ref_boundary = false;
      for (int k = 0; k < 10; ++k) {
        const Eigen::VectorXd Bd = c.H * d;
        const double dBd = d.dot(Bd);
        double t1, t2;
        if (dBd <= 0) {
          boundary_roots(z, d, radius, t1, t2);
          const Eigen::VectorXd pa = z + t1 * d, pb = z + t2 * d;
          ref = quadratic_model(c.H, c.g, pa) < quadratic_model(c.H, c.g, pb) ? pa : pb;
          ref_boundary = true;
          break;
        }
        const double alpha = r.dot(r) / dBd;
        const Eigen::VectorXd zn = z + alpha * d;
        if (zn.norm() >= radius) {
          boundary_roots(z, d, radius, t1, t2);
          ref = z + t2 * d;
          ref_boundary = true;
          break;
        }
        const Eigen::VectorXd rn = r + alpha * Bd;
        z = zn;
        if (rn.norm() < tol) {
          ref = z;
          break;
        }
        d = -rn + (rn.dot(rn) / r.dot(r)) * d;
        r = rn;
        ref = z;
      }
      int64_t hvps = 0;
      SteihaugSubproblem sub(1.5, c.g, [&](const Eigen::VectorXd& v, Eigen::VectorXd& Hv) {
        ++hvps;
        Hv = c.H * v;
      });
      const SubproblemStep step = sub.solve(radius);
      EXPECT_TRUE(step.p.isApprox(ref, 1e-7) || (step.p - ref).norm() < 1e-9) << c.label << " r=" << radius;
      EXPECT_EQ(step.hits_boundary, ref_boundary);
      const double m = 1.5 + quadratic_model(c.H, c.g, step.p);
      EXPECT_NEAR(step.model_value, m, 1e-9 * (1 + std::abs(m)));
      const int64_t before = hvps;
      EXPECT_EQ(sub.model_value(step.p), step.model_value);  // cached: no HVP
      EXPECT_EQ(hvps, before);
    }
  }
}

TEST(GltrSubproblem, NearExactWhenTheKrylovSpaceIsExhausted) {
  std::mt19937 rng(23);
  for (int n : {10, 40}) {
    for (const Case& c : make_cases(n, rng)) {
      if (c.label == "hard") continue;  // the Krylov space of g never sees the bottom eigenvector
      for (double radius : {0.01, 1.0, 100.0}) {
        GltrSubproblem sub(
            0.0, c.g, [&](const Eigen::VectorXd& v, Eigen::VectorXd& Hv) { Hv = c.H * v; }, -1, 1e-10);
        const SubproblemStep step = sub.solve(radius);
        const ExactSolution ref = exact_trust_region(c.H, c.g, radius);
        const double m = quadratic_model(c.H, c.g, step.p);
        EXPECT_LE(step.p.norm(), radius * (1 + 1e-8));
        EXPECT_GE(m / ref.model, 0.999) << c.label << " n=" << n << " r=" << radius;
        EXPECT_NEAR(step.model_value, m, 1e-8 * (1 + std::abs(m)));
      }
    }
  }
}

TEST(GltrSubproblem, TridiagonalHardCase) {
  Eigen::VectorXd d(3), e(2), h;
  d << 3, 1, -2;
  e << 0.5, 0;
  double lambda = 0;
  bool boundary = false;
  GltrSubproblem::tridiagonal_solve(d, e, 1.0, 10.0, default_linalg(), h, lambda, boundary);
  EXPECT_TRUE(boundary);
  EXPECT_LE(h.norm(), 10 * (1 + 1e-9));
  EXPECT_NEAR(lambda, 2.0, 1e-9 * 2.0);
  Eigen::MatrixXd T = Eigen::MatrixXd::Zero(3, 3);
  T.diagonal() = d;
  T(0, 1) = T(1, 0) = 0.5;
  Eigen::VectorXd g = Eigen::VectorXd::Zero(3);
  g[0] = 1.0;
  EXPECT_LT(g.dot(h) + 0.5 * h.dot(T * h), 0.0);
  EXPECT_LT(((T + lambda * Eigen::MatrixXd::Identity(3, 3)) * h + g).norm(), 1e-6);
}

TEST(GltrSubproblem, ResolveAtASmallerRadiusReusesTheKrylovBasis) {
  std::mt19937 rng(31);
  const int n = 30;
  Eigen::VectorXd w(n);
  std::uniform_real_distribution<double> uni(0.1, 10.0);
  for (int i = 0; i < n; ++i) w[i] = uni(rng);
  const Eigen::MatrixXd H = test::with_spectrum(w, rng);
  Eigen::VectorXd g = Eigen::VectorXd::Ones(n);
  int64_t hvps = 0;
  GltrSubproblem sub(0.0, g, [&](const Eigen::VectorXd& v, Eigen::VectorXd& Hv) {
    ++hvps;
    Hv = H * v;
  });
  const SubproblemStep first = sub.solve(1.0);
  EXPECT_TRUE(first.hits_boundary);
  const int64_t basis_after_first = sub.basis_size();
  const int64_t hvps_after_first = hvps;
  EXPECT_EQ(hvps_after_first, basis_after_first);
  const SubproblemStep second = sub.solve(0.25);
  EXPECT_EQ(hvps, hvps_after_first) << "a re-solve at a smaller radius must not spend HVPs";
  EXPECT_EQ(sub.basis_size(), basis_after_first);
  const ExactSolution ref = exact_trust_region(H, g, 0.25);
  EXPECT_GE(quadratic_model(H, g, second.p) / ref.model, 0.999);
  EXPECT_LE(second.p.norm(), 0.25 * (1 + 1e-8));
}
