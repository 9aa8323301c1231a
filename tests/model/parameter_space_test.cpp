// ParameterSpace: ξ = T(x) and its derivatives (docs/likelihood.md "Effective parameters ξ = T(x)", "Frozen
// parameters"), name matching.
#include "rabbit/model/parameter_space.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "rabbit/core/error.hpp"
#include "support/finite_differences.hpp"

namespace rabbit {
namespace {

ParameterSpace make_space(bool squared, bool blinded) {
  ParameterSpace ps;
  ps.names = {"mu1", "mu2", "pou", "a", "noi"};
  ps.npoi = 2;
  ps.npou = 1;
  ps.nsyst = 2;
  ps.squared_pois = squared;
  ps.frozen.assign(5, false);
  ps.poi_blinding_scale = Eigen::Vector2d(std::exp(0.7), std::exp(-1.3));
  ps.syst_blinding_offset = Eigen::Vector2d(0.0, 2.5);
  ps.blinding_available = true;
  ps.blinding_enabled = blinded;
  return ps;
}

void check_derivatives(const ParameterSpace& ps, const Eigen::VectorXd& x) {
  Eigen::VectorXd xi, d1, d2;
  ps.transform(x, xi, d1, d2);
  const double h = 1e-6;
  for (int64_t i = 0; i < x.size(); ++i) {
    // (ξ_i, ∂ξ_i/∂x_i) at x ± h·e_i, differenced together
    const Eigen::Vector2d fd = test::central_partial(
        [&](const Eigen::VectorXd& y) {
          Eigen::VectorXd t, a, b;
          ps.transform(y, t, a, b);
          return Eigen::Vector2d(t[i], a[i]);
        },
        x, i, h);
    const bool frozen = ps.frozen[i];
    const double fd1 = fd[0];
    const double fd2 = fd[1];
    if (frozen) {
      EXPECT_EQ(d1[i], 0.0) << ps.names[i];
      EXPECT_EQ(d2[i], 0.0) << ps.names[i];
    } else {
      EXPECT_NEAR(d1[i], fd1, 1e-7 * (1 + std::abs(fd1))) << ps.names[i];
      EXPECT_NEAR(d2[i], fd2, 1e-7 * (1 + std::abs(fd2))) << ps.names[i];
    }
  }
}

TEST(ParameterSpace, SquaredPoisValuesAndDerivatives) {
  const auto ps = make_space(true, false);
  Eigen::VectorXd x(5);
  x << 1.1, -0.4, 0.3, 0.2, -0.7;
  Eigen::VectorXd xi, d1, d2;
  ps.transform(x, xi, d1, d2);
  EXPECT_DOUBLE_EQ(xi[0], 1.21);
  EXPECT_DOUBLE_EQ(xi[1], 0.16);
  EXPECT_DOUBLE_EQ(xi[2], 0.3);
  EXPECT_DOUBLE_EQ(xi[4], -0.7);  // offsets off
  EXPECT_DOUBLE_EQ(d2[0], 2.0);
  check_derivatives(ps, x);
}

TEST(ParameterSpace, LinearPoisAndBlindingOffsets) {
  auto ps = make_space(false, true);
  Eigen::VectorXd x(5);
  x << 1.1, -0.4, 0.3, 0.2, -0.7;
  Eigen::VectorXd xi, d1, d2;
  ps.transform(x, xi, d1, d2);
  EXPECT_DOUBLE_EQ(xi[0], std::exp(0.7) * 1.1);
  EXPECT_DOUBLE_EQ(xi[1], std::exp(-1.3) * -0.4);
  EXPECT_DOUBLE_EQ(xi[3], 0.2);
  EXPECT_DOUBLE_EQ(xi[4], -0.7 + 2.5);
  EXPECT_DOUBLE_EQ(d1[0], std::exp(0.7));
  EXPECT_EQ(d2[0], 0.0);
  check_derivatives(ps, x);
  ps.squared_pois = true;
  ps.transform(x, xi, d1, d2);
  EXPECT_DOUBLE_EQ(xi[0], std::exp(0.7) * 1.21);
  EXPECT_DOUBLE_EQ(d2[1], 2.0 * std::exp(-1.3));
  check_derivatives(ps, x);
}

TEST(ParameterSpace, FrozenParametersKeepValueLoseDerivatives) {
  auto ps = make_space(true, true);
  ps.freeze({"mu2", "n.*"});
  EXPECT_EQ(ps.frozen_indices(), (std::vector<int64_t>{1, 4}));
  EXPECT_EQ(ps.floating_indices(), (std::vector<int64_t>{0, 2, 3}));
  Eigen::VectorXd x(5);
  x << 1.1, -0.4, 0.3, 0.2, -0.7;
  Eigen::VectorXd xi, d1, d2;
  ps.transform(x, xi, d1, d2);
  EXPECT_DOUBLE_EQ(xi[1], std::exp(-1.3) * 0.16);
  EXPECT_DOUBLE_EQ(xi[4], 1.8);
  check_derivatives(ps, x);
  ps.unfreeze({"mu2"});
  EXPECT_EQ(ps.frozen_indices(), (std::vector<int64_t>{4}));
}

TEST(ParameterSpace, IndexAndEffective) {
  const auto ps = make_space(true, false);
  EXPECT_EQ(ps.index("pou"), 2);
  EXPECT_EQ(ps.index("nope"), -1);
  Eigen::VectorXd x(5);
  x << 2.0, 1.0, 0.0, 0.0, 0.0;
  EXPECT_DOUBLE_EQ(ps.effective(x)[0], 4.0);
  EXPECT_THROW(ps.effective(Eigen::VectorXd::Zero(3)), Error);
}

TEST(MatchNames, ExactOrFullMatchRegex) {
  const std::vector<std::string> names{"sig", "sig2", "alphaS", "alphaS_up", "x.y"};
  EXPECT_EQ(match_names({"sig"}, names, "--opt"), (std::vector<int64_t>{0}));  // full match, not prefix
  EXPECT_EQ(match_names({"^sig$"}, names, "--opt"), (std::vector<int64_t>{0}));
  EXPECT_EQ(match_names({"alpha.*", "sig"}, names, "--opt"), (std::vector<int64_t>{0, 2, 3}));
  EXPECT_EQ(match_names({".*"}, names, "--opt").size(), 5u);
  EXPECT_TRUE(match_names({"nothing"}, names, "--opt").empty());
  EXPECT_EQ(match_names({"x.y"}, names, "--opt"), (std::vector<int64_t>{4}));
  try {
    match_names({"sig["}, names, "--freezeParameters");
    FAIL() << "invalid regex accepted";
  } catch (const OptionError& e) {
    EXPECT_NE(std::string(e.what()).find("--freezeParameters: 'sig['"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace rabbit
