// The recursive SPD inverse (minimize/spd_inverse.hpp) against a reference inverse through Eigen's
// LLT, at orders below, at and across the recursion's leaf order (odd splits included), and its
// refusal of matrices that are not positive definite.
#include "rabbit/minimize/spd_inverse.hpp"

#include <gtest/gtest.h>

#include <Eigen/Cholesky>
#include <cmath>
#include <limits>

using Eigen::MatrixXd;
using Eigen::VectorXd;
using rabbit::spd_inverse;

namespace {

MatrixXd random_spd(int n, unsigned seed) {
  std::srand(seed);
  const MatrixXd G = MatrixXd::Random(n, n);
  MatrixXd A = G * G.transpose() / n;
  A.diagonal().array() += 0.1;
  return A;
}

}  // namespace

TEST(SpdInverse, MatchesTheCholeskySolveAtOrdersAroundTheLeaf) {
  for (int n : {1, 2, 7, 64, 65, 129, 301}) {
    const MatrixXd A = random_spd(n, 17 + n);
    const VectorXd g = VectorXd::LinSpaced(n, -1.0, 2.0);
    MatrixXd inv;
    VectorXd w = g;
    ASSERT_TRUE(spd_inverse(A, inv, &w)) << n;
    const Eigen::LLT<MatrixXd> llt(A);
    const MatrixXd ref = llt.solve(MatrixXd::Identity(n, n));
    const double scale = ref.cwiseAbs().maxCoeff();
    EXPECT_LT((inv - ref).cwiseAbs().maxCoeff(), 1e-11 * scale) << n;
    EXPECT_EQ(inv, inv.transpose()) << n;  // symmetric bit for bit
    EXPECT_NEAR(w.squaredNorm(), g.dot(ref * g), 1e-10 * std::abs(g.dot(ref * g))) << n;
  }
}

TEST(SpdInverse, RefusesIndefiniteAndNonFiniteMatrices) {
  MatrixXd A = random_spd(100, 5);
  MatrixXd inv;
  A(80, 80) = -1.0;
  EXPECT_FALSE(spd_inverse(A, inv));
  A = random_spd(100, 5);
  A(3, 3) = std::numeric_limits<double>::quiet_NaN();
  EXPECT_FALSE(spd_inverse(A, inv));
}
