// cuSOLVER DenseLinalg vs the Eigen one: factor of a positive-definite matrix, the failure index
// and the leading block of an indefinite one, the shifted factorisation, NaN input, and
// factor-and-solve (potrf + potrs) for a covariance. Needs a GPU (skips with a message otherwise);
// the error path for a device that is not there runs in every CUDA build.
#include <gtest/gtest.h>

#include <Eigen/Cholesky>
#include <Eigen/QR>
#include <limits>
#include <random>

#include "rabbit/core/error.hpp"
#include "rabbit/fit/devices.hpp"
#include "rabbit/minimize/dense_linalg.hpp"
#include "rabbit/minimize/subproblem.hpp"
#include "support/model_fixtures.hpp"

#ifdef RABBIT_HAVE_CUDA
#include "rabbit/backend/cuda/cusolver_linalg.hpp"
#endif

namespace rabbit {
namespace {

#ifdef RABBIT_HAVE_CUDA

// Symmetric with eigenvalues `eigenvalues` (random orthogonal basis, fixed seed).
Eigen::MatrixXd symmetric_with(const Eigen::VectorXd& eigenvalues, unsigned seed) {
  const int64_t n = eigenvalues.size();
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> g;
  Eigen::MatrixXd R(n, n);
  for (int64_t i = 0; i < R.size(); ++i) R.data()[i] = g(rng);
  Eigen::HouseholderQR<Eigen::MatrixXd> qr(R);
  const Eigen::MatrixXd Q = qr.householderQ();
  Eigen::MatrixXd A = Q * eigenvalues.asDiagonal() * Q.transpose();
  return (0.5 * (A + A.transpose())).eval();
}

double rel(const Eigen::MatrixXd& a, const Eigen::MatrixXd& b) {
  return (a - b).norm() / std::max(b.norm(), 1e-300);
}

int first_gpu() {
  return visible_gpus(nullptr).front().ordinal;
}

TEST(CusolverLinalg, FactorMatchesEigen) {
  RABBIT_REQUIRE_GPU();
  CusolverLinalg gpu(first_gpu());
  const EigenLinalg host;
  for (int64_t n : {1, 7, 64, 300, 1100}) {
    Eigen::VectorXd w = Eigen::VectorXd::LinSpaced(n, 0.5, 50.0);
    const Eigen::MatrixXd A = symmetric_with(w, 11 + n);
    Eigen::MatrixXd Lg, Lh;
    ASSERT_EQ(gpu.cholesky(A, Lg), 0) << n;
    ASSERT_EQ(host.cholesky(A, Lh), 0) << n;
    EXPECT_LT(rel(Lg, Lh), 1e-12) << n;
    EXPECT_TRUE(Lg.triangularView<Eigen::StrictlyUpper>().toDenseMatrix().isZero(0.0)) << n;
  }
}

TEST(CusolverLinalg, FailureIndexAndLeadingBlockMatchEigen) {
  RABBIT_REQUIRE_GPU();
  CusolverLinalg gpu(first_gpu());
  const EigenLinalg host;
  const LapackLinalg lapack;
  for (int64_t n : {5, 300}) {
    // Positive definite, then a pivot at column f made negative.
    Eigen::MatrixXd A = symmetric_with(Eigen::VectorXd::LinSpaced(n, 1.0, 10.0), 3 + n);
    const int64_t f = n / 2;
    A(f, f) = -50.0;
    Eigen::MatrixXd Lg, Lh, Ll;
    const int64_t kg = gpu.cholesky(A, Lg), kh = host.cholesky(A, Lh), kl = lapack.cholesky(A, Ll);
    EXPECT_EQ(kg, kl) << n;
    EXPECT_EQ(kg, kh) << n;
    ASSERT_GT(kg, 1) << n;
    const int64_t m = kg - 1;
    EXPECT_LT(rel(Lg.topLeftCorner(m, m), Lh.topLeftCorner(m, m)), 1e-12) << n;
  }
  // Indefinite from the first pivot.
  Eigen::MatrixXd B = -Eigen::MatrixXd::Identity(4, 4), L;
  EXPECT_EQ(gpu.cholesky(B, L), 1);
}

TEST(CusolverLinalg, ShiftedFactorMatchesEigen) {
  RABBIT_REQUIRE_GPU();
  CusolverLinalg gpu(first_gpu());
  const EigenLinalg host;
  Eigen::VectorXd w = Eigen::VectorXd::LinSpaced(200, -3.0, 4.0);
  const Eigen::MatrixXd A = symmetric_with(w, 5);
  Eigen::MatrixXd Lg, Lh;
  // Indefinite by itself; shift 3.5 makes it positive definite.
  EXPECT_GT(gpu.cholesky(A, Lg), 0);
  ASSERT_EQ(gpu.cholesky_shifted(A, 3.5, Lg), 0);
  ASSERT_EQ(host.cholesky_shifted(A, 3.5, Lh), 0);
  EXPECT_LT(rel(Lg, Lh), 1e-12);
  // The device copy of A is not altered by the shift of a previous call.
  ASSERT_GT(gpu.cholesky_shifted(A, 2.0, Lg), 0);
  EXPECT_EQ(gpu.cholesky_shifted(A, 2.0, Lg), host.cholesky_shifted(A, 2.0, Lh));
}

TEST(CusolverLinalg, NanInputFailsAtTheFirstMinor) {
  RABBIT_REQUIRE_GPU();
  CusolverLinalg gpu(first_gpu());
  Eigen::MatrixXd A = Eigen::MatrixXd::Identity(6, 6), L;
  A(0, 0) = std::nan("");
  EXPECT_GE(gpu.cholesky(A, L), 1);
  Eigen::MatrixXd empty(0, 0);
  EXPECT_EQ(gpu.cholesky(empty, L), 0);
}

TEST(CusolverLinalg, SolveGivesTheCovarianceOfEigen) {
  RABBIT_REQUIRE_GPU();
  CusolverLinalg gpu(first_gpu());
  const int64_t n = 400;
  const Eigen::MatrixXd A = symmetric_with(Eigen::VectorXd::LinSpaced(n, 0.1, 20.0), 9);
  Eigen::MatrixXd cov = Eigen::MatrixXd::Identity(n, n);
  ASSERT_EQ(gpu.cholesky_solve(A, cov), 0);
  const Eigen::MatrixXd ref = Eigen::LLT<Eigen::MatrixXd>(A).solve(Eigen::MatrixXd::Identity(n, n));
  EXPECT_LT(rel(cov, ref), 1e-11);
  Eigen::MatrixXd bad = -A, x = Eigen::MatrixXd::Ones(n, 2);
  EXPECT_EQ(gpu.cholesky_solve(bad, x), 1);
}

// The postfit covariance on the device (potrf, trsv, potri) against the host's blocked inverse.
TEST(CusolverLinalg, InverseAndWhitenedGradientMatchTheHost) {
  RABBIT_REQUIRE_GPU();
  CusolverLinalg gpu(first_gpu());
  const EigenLinalg host;
  for (int64_t n : {1, 7, 300, 1100}) {
    const Eigen::MatrixXd A = symmetric_with(Eigen::VectorXd::LinSpaced(n, 0.1, 20.0), 5 + n);
    Eigen::VectorXd wg = Eigen::VectorXd::LinSpaced(n, -1.0, 2.0), wh = wg;
    Eigen::MatrixXd inv_g, inv_h;
    ASSERT_TRUE(gpu.spd_inverse(A, inv_g, &wg)) << n;
    ASSERT_TRUE(host.spd_inverse(A, inv_h, &wh)) << n;
    EXPECT_LT(rel(inv_g, inv_h), 1e-11) << n;
    EXPECT_LT((wg - wh).norm() / wh.norm(), 1e-12) << n;
    EXPECT_TRUE(inv_g.isApprox(inv_g.transpose(), 0.0)) << n;
  }
  Eigen::MatrixXd inv;
  const Eigen::MatrixXd A = symmetric_with(Eigen::VectorXd::LinSpaced(50, 0.1, 20.0), 3);
  EXPECT_FALSE(gpu.spd_inverse(-A, inv));
  Eigen::MatrixXd nan = A;
  nan(3, 3) = std::numeric_limits<double>::quiet_NaN();
  EXPECT_FALSE(gpu.spd_inverse(nan, inv));
}

// The trust-exact subproblem (More-Sorensen: shifted factorisations, failure indices, hard case)
// takes the same steps with the cuSOLVER factorisations as with Eigen's.
TEST(CusolverLinalg, TrustExactStepsMatchEigen) {
  RABBIT_REQUIRE_GPU();
  CusolverLinalg gpu(first_gpu());
  const EigenLinalg host;
  const int64_t n = 120;
  for (double lowest : {2.0, -1.5}) {  // convex, then indefinite (boundary steps)
    const Eigen::MatrixXd H = symmetric_with(Eigen::VectorXd::LinSpaced(n, lowest, 30.0), 21);
    Eigen::VectorXd g(n);
    for (int64_t i = 0; i < n; ++i) g[i] = std::sin(0.7 * i + 0.2);
    for (double radius : {0.05, 1.0, 100.0}) {
      ExactSubproblem a(1.0, g, H, gpu), b(1.0, g, H, host);
      const SubproblemStep sa = a.solve(radius), sb = b.solve(radius);
      EXPECT_EQ(sa.hits_boundary, sb.hits_boundary) << lowest << " " << radius;
      EXPECT_LT((sa.p - sb.p).norm(), 1e-9 * std::max(1.0, sb.p.norm())) << lowest << " " << radius;
      EXPECT_NEAR(sa.model_value, sb.model_value, 1e-9 * std::max(1.0, std::abs(sb.model_value)));
      EXPECT_EQ(a.stats().factorizations, b.stats().factorizations) << lowest << " " << radius;
    }
  }
}

TEST(CusolverLinalg, MissingDeviceIsOneLineResourceError) {
  if (!built_with_cuda()) GTEST_SKIP() << "built without CUDA";
  try {
    CusolverLinalg gpu(4096);
    FAIL() << "expected ResourceError";
  } catch (const ResourceError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("cuda:4096"), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
}

#else

TEST(CusolverLinalg, FactorMatchesEigen) {
  GTEST_SKIP() << "built without CUDA (configure with -DRABBIT_CUDA=ON)";
}

#endif

}  // namespace
}  // namespace rabbit
