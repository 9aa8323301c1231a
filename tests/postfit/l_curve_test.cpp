// The L curve (docs/model.md "The L curve"): the split of the regularised NLL into L_x and P, and the
// curvature against finite differences along the exact minimum x̂(τ) of a quadratic problem, where
// rabbit's fixed-x derivative of dx̂/dτ is exact (the third derivatives vanish).
#include "rabbit/postfit/l_curve.hpp"

#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <cmath>

#include "rabbit/core/error.hpp"
#include "rabbit/model/model.hpp"

namespace {

using Eigen::MatrixXd;
using Eigen::VectorXd;

// L(x) = L_x(x) + exp(2τ) P(x) with L_x = ½xᵀAx − cᵀx + k and P = ½xᵀBx − dᵀx + e, τ read from the
// model at each call (as the backends do).
class QuadraticRegularised final : public rabbit::Objective {
 public:
  explicit QuadraticRegularised(const rabbit::Model& model) : model_(model) {
    A.resize(3, 3);
    A << 4.0, 1.0, 0.5, 1.0, 3.0, 0.2, 0.5, 0.2, 2.0;
    B.resize(3, 3);
    B << 1.0, -0.5, 0.0, -0.5, 1.0, -0.5, 0.0, -0.5, 1.0;
    B *= 0.05;
    c = VectorXd::LinSpaced(3, 1.0, 2.0);
    d = VectorXd::LinSpaced(3, 0.01, -0.02);
  }
  int64_t size() const override { return 3; }
  double nll(const VectorXd& x) const { return 0.5 * x.dot(A * x) - c.dot(x) + k; }
  double penalty(const VectorXd& x) const { return 0.5 * x.dot(B * x) - d.dot(x) + e; }
  double w() const { return std::exp(2.0 * model_.options.regularization_strength); }
  double value(const VectorXd& x) override { return nll(x) + w() * penalty(x); }
  double value_grad(const VectorXd& x, VectorXd& g) override {
    g = A * x - c + w() * (B * x - d);
    return value(x);
  }
  double value_grad_hvp(const VectorXd& x, const MatrixXd& V, VectorXd& g, MatrixXd& HV) override {
    HV = (A + w() * B) * V;
    return value_grad(x, g);
  }
  /// The minimum at τ.
  VectorXd minimum(double tau) const {
    const double ww = std::exp(2.0 * tau);
    return MatrixXd(A + ww * B).llt().solve(c + ww * d);
  }

  MatrixXd A, B;
  VectorXd c, d;
  double k = 3.0, e = 0.7;

 private:
  const rabbit::Model& model_;
};

TEST(LCurve, TermsSplitTheRegularisedNll) {
  rabbit::Model model;
  model.options.regularization_strength = 0.3;
  QuadraticRegularised f(model);
  const VectorXd x = VectorXd::LinSpaced(3, -0.4, 0.9);
  const auto t = rabbit::postfit::l_curve_terms(f, model, {0, 1, 2}, x);
  EXPECT_EQ(model.options.regularization_strength, 0.3);  // restored
  EXPECT_NEAR(t.nll, f.nll(x), 1e-12);
  EXPECT_NEAR(t.penalty, f.penalty(x), 1e-12 * std::abs(f.penalty(x)));
  EXPECT_LT((t.grad_nll - (f.A * x - f.c)).norm(), 1e-12);
  EXPECT_LT((t.grad_penalty - (f.B * x - f.d)).norm(), 1e-12);
  EXPECT_LT((t.hess_nll - f.A).norm(), 1e-12);
  EXPECT_LT((t.hess_penalty - f.B).norm(), 1e-12);
  // restricted to floating parameters
  const auto t2 = rabbit::postfit::l_curve_terms(f, model, {0, 2}, x);
  ASSERT_EQ(t2.grad_nll.size(), 2);
  EXPECT_NEAR(t2.hess_penalty(1, 0), f.B(2, 0), 1e-12);
}

TEST(LCurve, CurvatureAlongTheMinimumAgreesWithFiniteDifferences) {
  rabbit::Model model;
  QuadraticRegularised f(model);
  auto curve = [&](double tau) {
    const VectorXd x = f.minimum(tau);
    return Eigen::Vector2d(std::log(f.nll(x)), std::log(f.penalty(x)));
  };
  for (double tau : {-0.5, 0.4, 1.8}) {
    model.options.regularization_strength = tau;
    const auto t = rabbit::postfit::l_curve_terms(f, model, {0, 1, 2}, f.minimum(tau));
    const double kappa = rabbit::postfit::l_curve_curvature(t, tau);
    const double h = 1e-3;
    const Eigen::Vector2d p0 = curve(tau), pp = curve(tau + h), pm = curve(tau - h);
    const Eigen::Vector2d d1 = (pp - pm) / (2 * h), d2 = (pp - 2 * p0 + pm) / (h * h);
    const double expected = (d2[1] * d1[0] - d2[0] * d1[1]) / std::pow(d1.squaredNorm(), 1.5);
    EXPECT_NEAR(kappa, expected, 1e-5 * std::max(1.0, std::abs(expected))) << "tau " << tau;
    // At a minimum κ does not change with τ at fixed x (the first-order terms of l_x and l_y are
    // parallel there, ∇L_x = −w∇P): the Newton steps of --lCurveOptimize vanish (docs/validation.md
    // "The L curve").
    EXPECT_LT(std::abs(rabbit::postfit::l_curve_curvature_derivatives(t, tau).d1), 1e-10) << "tau " << tau;
  }
}

// The closed-form κ'(τ), κ''(τ) at fixed x against five-point differences of κ, away from the minimum
// (where κ' is not 0).
TEST(LCurve, CurvatureDerivativesInTauAgreeWithFiniteDifferences) {
  rabbit::Model model;
  QuadraticRegularised f(model);
  for (double tau : {-0.5, 0.4, 1.8}) {
    model.options.regularization_strength = tau;
    const VectorXd x = f.minimum(tau) + VectorXd::LinSpaced(3, 0.05, -0.08);
    const auto t = rabbit::postfit::l_curve_terms(f, model, {0, 1, 2}, x);
    const auto kd = rabbit::postfit::l_curve_curvature_derivatives(t, tau);
    const double H = 1e-3;
    auto k = [&](double s) { return rabbit::postfit::l_curve_curvature(t, s); };
    const double k0 = k(tau), km2 = k(tau - 2 * H), km1 = k(tau - H), kp1 = k(tau + H), kp2 = k(tau + 2 * H);
    const double dk1 = (km2 - 8 * km1 + 8 * kp1 - kp2) / (12 * H);
    const double dk2 = (-km2 + 16 * km1 - 30 * k0 + 16 * kp1 - kp2) / (12 * H * H);
    EXPECT_EQ(kd.value, k0);
    EXPECT_GT(std::abs(dk1), 1e-3) << "tau " << tau;  // a real test: κ' is not ~0 here
    EXPECT_NEAR(kd.d1, dk1, 1e-7 * std::max(1.0, std::abs(dk1))) << "tau " << tau;
    EXPECT_NEAR(kd.d2, dk2, 1e-5 * std::max(1.0, std::abs(dk2))) << "tau " << tau;
  }
}

TEST(LCurve, NotPositiveDefiniteThrows) {
  rabbit::postfit::LCurveTerms t;
  t.nll = 1.0;
  t.penalty = 1.0;
  t.grad_nll = t.grad_penalty = VectorXd::Ones(2);
  t.hess_nll = -MatrixXd::Identity(2, 2);
  t.hess_penalty = MatrixXd::Zero(2, 2);
  EXPECT_THROW(rabbit::postfit::l_curve_curvature(t, 0.0), rabbit::Error);
}

TEST(LCurve, ScanTausAreNumpysArange) {
  const auto taus = rabbit::postfit::l_curve_scan_taus();
  ASSERT_EQ(taus.size(), 5u);
  EXPECT_EQ(taus[0], 1.7);
  EXPECT_EQ(taus[2], 1.9000000000000001);
  EXPECT_EQ(taus[4], 2.1000000000000005);
}

}  // namespace
