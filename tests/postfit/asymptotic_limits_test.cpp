// The numbers behind rabbit_limit's Gaussian limits (src/postfit/asymptotic_limits.cpp;
// docs/output-format.md "Asymptotic limits") against values known in closed form.
#include "rabbit/postfit/asymptotic_limits.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace rabbit::testing {
namespace {

TEST(AsymptoticLimits, NormalQuantileInvertsTheCdf) {
  EXPECT_NEAR(postfit::normal_quantile(0.975), 1.959963984540054, 1e-14);
  EXPECT_NEAR(postfit::normal_quantile(0.5), 0.0, 1e-15);
  EXPECT_NEAR(postfit::normal_quantile(0.16), -0.994457883209753, 1e-13);
  EXPECT_TRUE(std::isnan(postfit::normal_quantile(0.0)));
}

// Median expected limit at CLs = 0.05: q_A = (Φ⁻¹(0.5) − Φ⁻¹(0.025))² = 1.959964².
TEST(AsymptoticLimits, AsimovLevelOfTheMedian) {
  EXPECT_NEAR(postfit::asimov_q_level(0.05, 0.5), 1.959963984540054 * 1.959963984540054, 1e-12);
}

// With equal uncertainties and xobs = 0 the observed limit is the median expected one: the root r/σ of
// Φ(−r/σ) = CLs·Φ(0), i.e. r = σ·Φ⁻¹(1 − CLs/2).
TEST(AsymptoticLimits, ObservedAtZeroIsTheMedianExpected) {
  const double sigma = 0.3;
  EXPECT_NEAR(postfit::gaussian_observed_limit(0.0, sigma, sigma, 0.05), sigma * 1.959963984540054, 1e-12);
}

// The root solves Φ(−q_μ) = CLs·Φ(q_A − q_μ) for positive and (modified statistic) negative xobs.
TEST(AsymptoticLimits, ObservedLimitSolvesTheCLsEquation) {
  for (double xobs : {1.1, 0.2, -0.3}) {
    const double e = 0.04, ea = 0.05, cls = 0.1;
    const double r = postfit::gaussian_observed_limit(xobs, e, ea, cls);
    ASSERT_TRUE(std::isfinite(r)) << xobs;
    double qmu = (r - xobs) / e;
    if (xobs < 0) qmu = std::sqrt(qmu * qmu - (xobs / e) * (xobs / e));
    EXPECT_NEAR(postfit::normal_cdf(-qmu), cls * postfit::normal_cdf(r / ea - qmu), 1e-12) << xobs;
    EXPECT_GT(r, std::max(xobs, 0.0));
  }
  EXPECT_TRUE(std::isnan(postfit::gaussian_observed_limit(1.0, 0.0, 0.1, 0.05)));
}

}  // namespace
}  // namespace rabbit::testing
