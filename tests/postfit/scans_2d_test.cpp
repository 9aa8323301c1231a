// --scan2D and --contourScan2D on analytic objectives (docs/output-format.md "Likelihood scans and
// contours"): the spiral visits every grid point once, each next to the one before; a Gaussian 2D scan is
// the profile ½δᵀC_pq⁻¹δ; each 2D contour point lies on its ray and its profiled 2ΔNLL is the level².
#include "rabbit/postfit/scans_2d.hpp"

#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <cmath>
#include <numbers>
#include <set>

#include "rabbit/minimize/minimizer.hpp"
#include "support/analytic_objectives.hpp"

using namespace rabbit;
using namespace rabbit::postfit;
using Eigen::MatrixXd;
using Eigen::VectorXd;

namespace {

// f = ½ xᵀAx + c Σ x_i⁴: not Gaussian, so the contour search has to iterate; minimum 0 at x = 0.
class QuarticBowl : public test::AnalyticObjective {
 public:
  QuarticBowl(MatrixXd A, double c) : A_(std::move(A)), c_(c) {}
  int64_t size() const override { return A_.rows(); }
  double f(const VectorXd& x) const override { return 0.5 * x.dot(A_ * x) + c_ * x.array().pow(4).sum(); }
  VectorXd gradient(const VectorXd& x) const override {
    return A_ * x + (4.0 * c_ * x.array().pow(3)).matrix();
  }
  MatrixXd hessian(const VectorXd& x) const override {
    MatrixXd h = A_;
    h.diagonal() += (12.0 * c_ * x.array().square()).matrix();
    return h;
  }

 private:
  MatrixXd A_;
  double c_;
};

MatrixXd correlated_matrix() {
  MatrixXd A(4, 4);
  A << 4.0, 1.2, 0.5, 0.3,  //
      1.2, 3.0, -0.7, 0.2,  //
      0.5, -0.7, 2.0, 0.4,  //
      0.3, 0.2, 0.4, 1.5;
  return A;
}

ProfileMinimizer native_minimizer() {
  return [](Objective& obj, const std::vector<int64_t>& floating, const VectorXd& x0) {
    RestrictedObjective sub(obj, floating, x0);
    MinimizerOptions mo;
    return sub.expand(minimize(sub, sub.restrict(x0), mo).x);
  };
}

}  // namespace

TEST(Scan2D, SpiralVisitsEveryPointOnceEachNextToThePrevious) {
  for (int64_t n : {1, 3, 5, 9}) {
    const auto order = spiral_order(n);
    const int64_t c = (n - 1) / 2;
    ASSERT_EQ(static_cast<int64_t>(order.size()), n * n - 1) << n;
    std::set<std::pair<int64_t, int64_t>> seen(order.begin(), order.end());
    EXPECT_EQ(static_cast<int64_t>(seen.size()), n * n - 1) << n;
    EXPECT_EQ(seen.count({c, c}), 0u) << n;
    std::pair<int64_t, int64_t> prev{c, c};
    for (const auto& [i, j] : order) {
      EXPECT_TRUE(i >= 0 && i < n && j >= 0 && j < n);
      EXPECT_LE(std::max(std::abs(i - prev.first), std::abs(j - prev.second)), 1)
          << n << " " << i << "," << j;
      prev = {i, j};
    }
  }
}

TEST(Scan2D, GaussianProfileOnTheGrid) {
  const MatrixXd A = correlated_matrix();
  test::Quadratic q(A, VectorXd::Zero(4));
  const VectorXd xhat = VectorXd::Zero(4);
  const MatrixXd C = A.inverse();
  const std::vector<int64_t> floating{0, 1, 2, 3};
  const double sp = 0.7 * std::sqrt(C(0, 0)), sq = std::sqrt(C(2, 2));  // σ_p deliberately not C(0,0)'s
  auto scan = scan_2d(q, native_minimizer(), floating, xhat, 0, 2, sp, sq, 2.0, 5);
  ASSERT_EQ(scan.x.size(), 5u);
  EXPECT_DOUBLE_EQ(scan.x[0], -2.0 * sp);
  EXPECT_DOUBLE_EQ(scan.y[4], 2.0 * sq);
  Eigen::Matrix2d c2;
  c2 << C(0, 0), C(0, 2), C(2, 0), C(2, 2);
  const Eigen::Matrix2d c2inv = c2.inverse();
  for (int i = 0; i < 5; ++i)
    for (int j = 0; j < 5; ++j) {
      const Eigen::Vector2d d(scan.x[i], scan.y[j]);
      EXPECT_NEAR(scan.dnll[i * 5 + j], 0.5 * d.dot(c2inv * d), 1e-9) << i << "," << j;
    }
}

TEST(Contour2D, EachPointOnItsRayAtTheRequestedLevel) {
  QuarticBowl f(correlated_matrix(), 0.3);
  const VectorXd xhat = VectorXd::Zero(4);
  const MatrixXd C = correlated_matrix().inverse();
  const std::vector<int64_t> floating{0, 1, 2, 3};
  const int64_t p = 1, q = 3;
  MatrixXd cov_pq(4, 2);
  cov_pq << C.col(p), C.col(q);
  const double sp = std::sqrt(C(p, p)), sq = std::sqrt(C(q, q));
  auto pm = native_minimizer();
  for (double level : {1.0, 2.0}) {
    auto contour = contour_2d(f, pm, floating, xhat, 0.0, p, q, cov_pq, level, 12);
    ASSERT_EQ(contour.xp.size(), 12u);
    for (int k = 0; k < 12; ++k) {
      ASSERT_TRUE(contour.success[k]) << level << " " << k;
      // On the ray of angle θ_k in σ units, on its positive side.
      const double theta = 2.0 * std::numbers::pi * k / 12.0;
      const double u = contour.xp[k] / sp, v = contour.xq[k] / sq;
      EXPECT_NEAR(u * std::sin(theta) - v * std::cos(theta), 0.0, 1e-12) << k;
      EXPECT_GT(u * std::cos(theta) + v * std::sin(theta), 0.0) << k;
      // The profiled 2ΔNLL there, by an independent profile fit from the minimum, is the level².
      VectorXd start = xhat;
      start(p) = contour.xp[k];
      start(q) = contour.xq[k];
      const VectorXd prof = pm(f, {0, 2}, start);
      EXPECT_NEAR(2.0 * f.f(prof), level * level, 1e-6) << level << " " << k;
      EXPECT_NEAR(contour.dnll2[k], level * level, 1e-6) << level << " " << k;
    }
  }
}
