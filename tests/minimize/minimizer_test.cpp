// Outer loop and end-to-end minimisation on analytic objectives.
#include "rabbit/minimize/minimizer.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

#include "rabbit/core/error.hpp"
#include "support/analytic_objectives.hpp"

using namespace rabbit;
using rabbit::test::Quadratic;
using rabbit::test::Rosenbrock;
using rabbit::test::WithDirectHessian;

namespace {

const char* const kMethods[] = {"trust-krylov", "trust-ncg", "trust-exact"};

Eigen::VectorXd rosenbrock_start(int64_t n) {
  Eigen::VectorXd x0(n);
  for (int64_t i = 0; i < n; ++i) x0[i] = (i % 2 == 0) ? -1.2 : 1.0;
  if (n > 2) {  // long chains from (−1.2, 1, …) have a second local minimum; start in the main basin
    for (int64_t i = 0; i < n; ++i) x0[i] = 0.5 + 0.3 * std::sin(1.0 + i);
  }
  return x0;
}

}  // namespace

class RosenbrockTest : public ::testing::TestWithParam<std::tuple<const char*, int, bool>> {};

TEST_P(RosenbrockTest, ReachesTheMinimum) {
  const auto [method, n, precondition] = GetParam();
  WithDirectHessian<Rosenbrock> objective(n);
  MinimizerOptions options;
  options.method = method;
  options.precondition.enabled = precondition;
  const MinimizerResult r = minimize(objective, rosenbrock_start(n), options);
  EXPECT_TRUE(r.converged) << r.stop_reason;
  EXPECT_LE(r.edm, 1e-15);
  EXPECT_LT((r.x - Eigen::VectorXd::Ones(n)).cwiseAbs().maxCoeff(), 1e-8) << method << " n=" << n;
  EXPECT_LT(r.f, 1e-15);
  EXPECT_GT(r.iterations, 0);
  EXPECT_EQ(r.grad.size(), n);
  EXPECT_LT(r.grad.norm(), 1e-6);
}

INSTANTIATE_TEST_SUITE_P(AllSolvers, RosenbrockTest,
                         ::testing::Combine(::testing::ValuesIn(kMethods), ::testing::Values(2, 10, 100),
                                            ::testing::Bool()));

class IllConditionedQuadraticTest : public ::testing::TestWithParam<std::tuple<const char*, bool>> {};

TEST_P(IllConditionedQuadraticTest, ReachesTheMinimum) {
  const auto [method, precondition] = GetParam();
  std::mt19937 rng(7);
  const int n = 30;
  Eigen::VectorXd spectrum(n);
  for (int i = 0; i < n; ++i) spectrum[i] = std::pow(10.0, -4.0 + 8.0 * i / (n - 1));  // cond 1e8
  Eigen::VectorXd b(n);
  std::normal_distribution<double> normal;
  for (int i = 0; i < n; ++i) b[i] = normal(rng);
  b *= 1e-3;  // keeps the minimum O(1) although the smallest eigenvalue is 1e-4
  WithDirectHessian<Quadratic> objective(test::with_spectrum(spectrum, rng), b);
  // With f* = 0 the values near the minimum carry no round-off from a constant, so the run can
  // resolve x to 1e-8 along the 1e-4 eigendirection (f is only resolved to eps·|f*| otherwise).
  objective.set_minimum_value(0.0);
  const Eigen::VectorXd expected = objective.minimum();
  MinimizerOptions options;
  options.method = method;
  options.precondition.enabled = precondition;
  const MinimizerResult r = minimize(objective, Eigen::VectorXd::Zero(n), options);
  // Converged means EDM <= 1e-15 (f* = 0); along the 1e-4 eigendirection that allows an x error of
  // sqrt(2 EDM / 1e-4) = 4.5e-6 at most. The certificate must hold and x must be within it.
  EXPECT_TRUE(r.converged) << r.stop_reason;
  EXPECT_LE(r.edm, 1e-15);
  const Eigen::VectorXd d = r.x - expected;
  EXPECT_LE(0.5 * d.dot(objective.hessian(r.x) * d), 1e-15) << method << " precondition=" << precondition;
  EXPECT_LT(d.cwiseAbs().maxCoeff(), 4.5e-6) << method << " precondition=" << precondition;
}

INSTANTIATE_TEST_SUITE_P(AllSolvers, IllConditionedQuadraticTest,
                         ::testing::Combine(::testing::ValuesIn(kMethods), ::testing::Bool()));

TEST(Minimizer, NanOutsideABoxStillConverges) {
  for (const char* method : kMethods) {
    Eigen::MatrixXd A = Eigen::Vector2d(1.0, 4.0).asDiagonal();
    WithDirectHessian<Quadratic> objective(A, Eigen::Vector2d(1.0, -2.0), /*nan_box=*/3.0);
    MinimizerOptions options;
    options.method = method;
    options.initial_trust_radius = 100.0;  // first proposals land in the NaN region
    const MinimizerResult r = minimize(objective, Eigen::Vector2d(2.0, -2.0), options);
    EXPECT_NEAR(r.x[0], -1.0, 1e-8) << method;
    EXPECT_NEAR(r.x[1], 0.5, 1e-8) << method;
  }
}

TEST(Minimizer, RosenbrockFiveFromTheSpecStarts) {
  // docs/minimizers.md "Tests": trust-exact and trust-ncg from (−1.2, 1, −0.5, 2, 0.3),
  // trust-krylov from (1.3, 0.7, 0.8, 1.9, 1.2).
  Eigen::VectorXd start_a(5), start_b(5);
  start_a << -1.2, 1, -0.5, 2, 0.3;
  start_b << 1.3, 0.7, 0.8, 1.9, 1.2;
  for (const auto& [method, start, tol] :
       {std::tuple{"trust-exact", start_a, 1e-6}, std::tuple{"trust-ncg", start_a, 1e-5},
        std::tuple{"trust-krylov", start_b, 1e-5}}) {
    WithDirectHessian<Rosenbrock> objective(5);
    MinimizerOptions options;
    options.method = method;
    const MinimizerResult r = minimize(objective, start, options);
    EXPECT_LT((r.x - Eigen::VectorXd::Ones(5)).cwiseAbs().maxCoeff(), tol) << method;
  }
}
