// The convergence certificate and Newton polish (docs/minimizers.md "Convergence"): small steps
// judged on the gradient where f's rounding hides them, the noise-floor stop, the certificate with
// the dense Hessian and with CG on HVPs, the fallback solver, and honest failures.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "rabbit/minimize/minimizer.hpp"
#include "support/analytic_objectives.hpp"

using namespace rabbit;
using rabbit::test::Quadratic;
using rabbit::test::Rosenbrock;
using rabbit::test::WithDirectHessian;

namespace {

// A quadratic whose value carries rounding-like noise of relative size 1e-12 of a large constant
// (as a NLL summed over many bins does) while the gradient is exact: f alone cannot resolve the
// last Newton steps.
class NoisyValueQuadratic : public WithDirectHessian<Quadratic> {
 public:
  using WithDirectHessian<Quadratic>::WithDirectHessian;
  double f(const Eigen::VectorXd& x) const override {
    // Deterministic noise: a hash of the bits of x.
    uint64_t h = 1469598103934665603ULL;
    for (Eigen::Index i = 0; i < x.size(); ++i) {
      uint64_t bits;
      std::memcpy(&bits, &x[i], sizeof bits);
      h = (h ^ bits) * 1099511628211ULL;
    }
    const double noise = (static_cast<double>(h >> 11) * 0x1.0p-53 - 0.5) * 2e-10;
    return Quadratic::f(x) + noise;
  }
};

Eigen::MatrixXd spd(int n, double cond, unsigned seed) {
  std::mt19937 rng(seed);
  Eigen::VectorXd w(n);
  for (int i = 0; i < n; ++i) w[i] = std::pow(cond, static_cast<double>(i) / (n - 1));
  return test::with_spectrum(w, rng);
}

// A Hessian-vector product that returns NaN: the Krylov solvers cannot model anything.
class BrokenHvp : public WithDirectHessian<Rosenbrock> {
 public:
  BrokenHvp() : WithDirectHessian<Rosenbrock>(4) {}
  void hvp(const Eigen::VectorXd&, const Eigen::MatrixXd& V, Eigen::MatrixXd& HV) override {
    HV = Eigen::MatrixXd::Constant(V.rows(), V.cols(), std::numeric_limits<double>::quiet_NaN());
  }
};

// f = x² − y² + ¼y⁴: a saddle at the origin, minima at y = ±√2.
class Saddle : public test::AnalyticObjective {
 public:
  int64_t size() const override { return 2; }
  double f(const Eigen::VectorXd& x) const override {
    return x[0] * x[0] - x[1] * x[1] + 0.25 * std::pow(x[1], 4);
  }
  Eigen::VectorXd gradient(const Eigen::VectorXd& x) const override {
    return Eigen::Vector2d(2 * x[0], -2 * x[1] + std::pow(x[1], 3));
  }
  Eigen::MatrixXd hessian(const Eigen::VectorXd& x) const override {
    Eigen::Matrix2d H;
    H << 2, 0, 0, -2 + 3 * x[1] * x[1];
    return H;
  }
};

}  // namespace

TEST(Certificate, SmallStepsAreJudgedOnTheGradientUpToTheNoiseFloor) {
  for (const char* method : {"trust-krylov", "trust-ncg", "trust-exact"}) {
    SCOPED_TRACE(method);
    const int n = 20;
    NoisyValueQuadratic objective(spd(n, 1e4, 3), Eigen::VectorXd::LinSpaced(n, -1, 1));
    objective.set_minimum_value(1e2);  // f ≈ 100 with noise 1e-10: steps below that are invisible to f
    MinimizerOptions o;
    o.method = method;
    o.certify = MinimizerOptions::Certify::off;  // the trust-region loop alone...
    o.stop_edm_fraction = 0.0;                   // ...run down to its rounding floor
    const MinimizerResult r = minimize(objective, Eigen::VectorXd::Zero(n), o);
    // The end is the rounding floor: a Newton-like step nothing can confirm (6), or a model that
    // predicts no decrease at a radius times |g| below f's rounding (2).
    EXPECT_TRUE(r.status == status_noise_floor || r.status == status_bad_approximation) << r.message;
    // Exact gradient: the loop goes on to its rounding, far below what f could resolve.
    EXPECT_LT(r.grad.norm(), 1e-12);
    EXPECT_LT((r.x - objective.minimum()).cwiseAbs().maxCoeff(), 1e-12);
  }
}

TEST(Certificate, DenseAndHvpCertificatesAgree) {
  const int n = 15;
  WithDirectHessian<Quadratic> objective(spd(n, 1e3, 5), Eigen::VectorXd::LinSpaced(n, -2, 1));
  objective.set_minimum_value(7.0);
  MinimizerOptions o;
  o.certify = MinimizerOptions::Certify::dense;
  const MinimizerResult dense = minimize(objective, Eigen::VectorXd::Zero(n), o);
  EXPECT_TRUE(dense.converged) << dense.stop_reason;
  EXPECT_EQ(dense.certified_by, "dense Hessian");
  EXPECT_LE(dense.edm, 1e-15 * 7.0);
  EXPECT_TRUE(std::isfinite(dense.max_scaled_grad));
  const int64_t hess_before = objective.hess_calls;
  o.certify = MinimizerOptions::Certify::hvp;
  const MinimizerResult cg = minimize(objective, Eigen::VectorXd::Zero(n), o);
  EXPECT_TRUE(cg.converged) << cg.stop_reason;
  EXPECT_EQ(cg.certified_by, "conjugate gradients on HVPs");
  EXPECT_EQ(objective.hess_calls, hess_before);  // no dense Hessian
  EXPECT_LE(cg.edm, 1e-15 * 7.0);
  EXPECT_TRUE(std::isnan(cg.max_scaled_grad));
  // The EDM is ½gᵀA⁻¹g at the returned point.
  const Eigen::VectorXd g = objective.gradient(dense.x);
  EXPECT_NEAR(dense.edm, 0.5 * g.dot(objective.hessian(dense.x).ldlt().solve(g)), 1e-30);
}

TEST(Certificate, NewtonPolishFinishesAnEarlyStop) {
  // A maxiter stop far from the minimum: the Newton polish (with backtracking) gets there.
  WithDirectHessian<Rosenbrock> objective(2);
  MinimizerOptions o;
  o.maxiter = 12;
  o.certify = MinimizerOptions::Certify::dense;
  const MinimizerResult r = minimize(objective, Eigen::Vector2d(-1.2, 1), o);
  EXPECT_NE(r.stop_reason.find("Maximum number of iterations"), std::string::npos) << r.stop_reason;
  EXPECT_GT(r.polish_steps, 0);
  EXPECT_TRUE(r.converged) << r.stop_reason;
  EXPECT_LT((r.x - Eigen::Vector2d(1, 1)).norm(), 1e-10);
}

TEST(Certificate, ModelFailureIsRescuedByTheFallbackSolver) {
  BrokenHvp objective;
  MinimizerOptions o;
  o.method = "trust-ncg";
  o.certify = MinimizerOptions::Certify::dense;
  const MinimizerResult r = minimize(objective, Eigen::VectorXd::Zero(4), o);
  EXPECT_TRUE(r.converged) << r.stop_reason;
  EXPECT_NE(r.stop_reason.find("trust-ncg: The subproblem could not predict descent"), std::string::npos)
      << r.stop_reason;
  EXPECT_LT((r.x - Eigen::VectorXd::Ones(4)).norm(), 1e-8);
}

TEST(Certificate, ASaddleIsNotConvergedAndTheFallbackLeavesIt) {
  WithDirectHessian<Saddle> objective;
  MinimizerOptions o;
  o.certify = MinimizerOptions::Certify::dense;
  // g = 0 at the saddle: a stationary point, but not a minimum.
  MinimizerResult at_saddle;
  at_saddle.x = Eigen::Vector2d(0, 0);
  EXPECT_FALSE(certify_and_polish(objective, o, at_saddle));
  EXPECT_FALSE(at_saddle.converged);
  EXPECT_NE(at_saddle.stop_reason.find("not positive definite"), std::string::npos) << at_saddle.stop_reason;
  // minimize(): trust-krylov stops at once (g = 0), then trust-exact's negative-curvature step
  // leaves the saddle.
  const MinimizerResult r = minimize(objective, Eigen::Vector2d(0, 0), o);
  EXPECT_TRUE(r.converged) << r.stop_reason;
  EXPECT_NEAR(std::abs(r.x[1]), std::sqrt(2.0), 1e-10);
}

TEST(Certificate, TighterToleranceThanReachableIsReported) {
  const int n = 6;
  NoisyValueQuadratic objective(spd(n, 10, 9), Eigen::VectorXd::LinSpaced(n, -1, 1));
  objective.set_minimum_value(1e2);
  MinimizerOptions o;
  o.certify = MinimizerOptions::Certify::dense;
  o.edm_tol = 1e-300;
  const MinimizerResult r = minimize(objective, Eigen::VectorXd::Zero(n), o);
  EXPECT_FALSE(r.converged);
  EXPECT_FALSE(r.stop_reason.empty());
  EXPECT_LT(r.edm, 1e-25);  // at the rounding floor all the same
}
