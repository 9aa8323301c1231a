// Postfit linear algebra (docs/output-format.md "EDM and covariance" to "Gaussian global impacts",
// docs/output-format.md "Hessian-free mode") and the plain result file (docs/output-format.md "The plain
// layout").
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <cmath>
#include <filesystem>

#include "rabbit/core/error.hpp"
#include "rabbit/minimize/conjugate_gradient.hpp"
#include "rabbit/postfit/result_file.hpp"
#include "rabbit/postfit/uncertainties.hpp"
#include "support/test_paths.hpp"

using namespace rabbit::postfit;
using rabbit::conjugate_gradient;
namespace fs = std::filesystem;

namespace {
Eigen::MatrixXd spd(int n, int seed) {
  Eigen::MatrixXd a(n, n);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) a(i, j) = std::sin(1.0 + seed + 3.0 * i + 7.0 * j);
  return a * a.transpose() + n * Eigen::MatrixXd::Identity(n, n);
}
}  // namespace

TEST(Covariance, FloatingBlockAndFrozenPrefit) {
  Eigen::MatrixXd H = spd(4, 1);
  Eigen::VectorXd g(4);
  g << 0.1, -0.2, 0.3, 0.05;
  Eigen::MatrixXd prefit = Eigen::VectorXd::Constant(4, 2.5).asDiagonal();
  auto all = covariance_from_hessian(H, g, {0, 1, 2, 3}, prefit);
  EXPECT_TRUE(all.cov.isApprox(H.inverse(), 1e-12));
  EXPECT_NEAR(all.edm, 0.5 * g.dot(H.inverse() * g), 1e-14);

  auto frozen = covariance_from_hessian(H, g, {0, 2, 3}, prefit);
  Eigen::MatrixXd hf(3, 3);
  const int idx[3] = {0, 2, 3};
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) hf(i, j) = H(idx[i], idx[j]);
  Eigen::MatrixXd cf = hf.inverse();
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) EXPECT_NEAR(frozen.cov(idx[i], idx[j]), cf(i, j), 1e-12);
  EXPECT_EQ(frozen.cov(1, 1), 2.5);
  EXPECT_EQ(frozen.cov(1, 0), 0.0);
  EXPECT_EQ(frozen.cov(3, 1), 0.0);
}

// The inverse goes through the fitter's DenseLinalg (cuSOLVER for GPU fits): a linalg that scales
// the inverse it returns shows up in the covariance and the EDM.
TEST(Covariance, InverseRunsThroughTheGivenDenseLinalg) {
  struct Scaled : rabbit::EigenLinalg {
    mutable int calls = 0;
    bool spd_inverse(const Eigen::MatrixXd& A, Eigen::MatrixXd& inverse,
                     Eigen::VectorXd* whiten) const override {
      ++calls;
      const bool ok = rabbit::DenseLinalg::spd_inverse(A, inverse, whiten);
      inverse *= 2.0;
      if (whiten) *whiten *= 3.0;
      return ok;
    }
  } scaled;
  const Eigen::MatrixXd H = spd(5, 4);
  Eigen::VectorXd g(5);
  g << 0.3, -0.1, 0.2, 0.0, 0.4;
  const Eigen::MatrixXd prefit = Eigen::MatrixXd::Identity(5, 5);
  const auto plain = covariance_from_hessian(H, g, {0, 1, 3, 4}, prefit);
  const auto through = covariance_from_hessian(H, g, {0, 1, 3, 4}, prefit, scaled);
  EXPECT_EQ(scaled.calls, 1);
  EXPECT_EQ(through.edm, 9.0 * plain.edm);
  for (int i : {0, 1, 3, 4}) EXPECT_EQ(through.cov(i, 1), 2.0 * plain.cov(i, 1));
  EXPECT_EQ(through.cov(2, 2), 1.0);  // frozen: the prefit value
}

TEST(Covariance, NotPositiveDefiniteIsANumericalError) {
  Eigen::MatrixXd H = Eigen::MatrixXd::Identity(2, 2);
  H(1, 1) = -1.0;
  try {
    covariance_from_hessian(H, Eigen::VectorXd::Zero(2), {0, 1}, Eigen::MatrixXd::Identity(2, 2));
    FAIL();
  } catch (const rabbit::NumericalError& e) {
    EXPECT_STREQ(e.what(), "Cholesky decomposition failed, Hessian is not positive-definite");
  }
}

TEST(Covariance, ConjugateGradientSolves) {
  Eigen::MatrixXd A = spd(6, 2);
  Eigen::VectorXd b = Eigen::VectorXd::LinSpaced(6, -1, 2);
  auto x = conjugate_gradient([&](const Eigen::VectorXd& v) { return Eigen::VectorXd(A * v); }, b, 1e-12, 100,
                              "test");
  EXPECT_LT((A * x - b).norm(), 1e-10 * b.norm());
  EXPECT_THROW(
      conjugate_gradient([&](const Eigen::VectorXd& v) { return Eigen::VectorXd(-v); }, b, 1e-12, 100, "neg"),
      rabbit::NumericalError);
}

TEST(Impacts, TraditionalAndGroupedOnAKnownMatrix) {
  // Parameters: [poi, unconstrained u, nuisance a, nuisance b]; groups {a}, {a, b}.
  Eigen::MatrixXd H = spd(4, 3);
  Eigen::MatrixXd C = H.inverse();
  ImpactLayout layout;
  layout.reported = {0};
  layout.group_names = {"ga", "gab"};
  layout.groups = {{2}, {2, 3}};
  layout.nstat = 2;
  layout.floating = {0, 1, 2, 3};
  auto per = traditional_impacts(C, layout.reported);
  for (int j = 0; j < 4; ++j) EXPECT_NEAR(per(0, j), C(0, j) / std::sqrt(C(j, j)), 1e-14);
  EXPECT_NEAR(per(0, 0), std::sqrt(C(0, 0)), 1e-14);
  auto grouped = traditional_grouped_impacts(C, H, nullptr, layout);
  ASSERT_EQ(grouped.cols(), 3);
  EXPECT_NEAR(grouped(0, 0), std::abs(C(0, 2)) / std::sqrt(C(2, 2)), 1e-12);
  // Group of all nuisances: group² + stat² = total² (conditional-variance identity).
  EXPECT_NEAR(grouped(0, 1) * grouped(0, 1) + grouped(0, 2) * grouped(0, 2), C(0, 0), 1e-12);
  // stat = sqrt((H_SS⁻¹)_00).
  EXPECT_NEAR(grouped(0, 2), std::sqrt(H.topLeftCorner(2, 2).inverse()(0, 0)), 1e-12);
  // With a β-fixed Hessian the difference goes to binByBinStat.
  Eigen::MatrixXd Hfixed = H;
  Hfixed.topLeftCorner(2, 2) += Eigen::MatrixXd::Identity(2, 2);
  auto gb = traditional_grouped_impacts(C, H, &Hfixed, layout);
  ASSERT_EQ(gb.cols(), 4);
  EXPECT_NEAR(gb(0, 2), std::sqrt(Hfixed.topLeftCorner(2, 2).inverse()(0, 0)), 1e-12);
  EXPECT_NEAR(gb(0, 2) * gb(0, 2) + gb(0, 3) * gb(0, 3), H.topLeftCorner(2, 2).inverse()(0, 0), 1e-12);
}

TEST(Impacts, GlobalPerSourceAndRemainder) {
  Eigen::MatrixXd H = spd(3, 4);
  Eigen::MatrixXd C = H.inverse();
  Eigen::VectorXd cw(3);
  cw << 0.0, 1.0, 4.0;
  auto per = global_impacts(C, cw, {false, false, true}, {0});
  EXPECT_EQ(per(0, 0), 0.0);               // unconstrained source
  EXPECT_NEAR(per(0, 1), C(1, 0), 1e-15);  // sqrt(cw) C
  EXPECT_EQ(per(0, 2), 0.0);               // frozen source
  ImpactLayout layout;
  layout.reported = {0};
  layout.groups = {{1, 2}};
  layout.group_names = {"g"};
  Eigen::VectorXd bb(1);
  bb << 1e-4;
  auto grouped = global_grouped_impacts(C, per, layout, &bb, nullptr, nullptr);
  ASSERT_EQ(grouped.cols(), 3);
  EXPECT_NEAR(grouped(0, 0) * grouped(0, 0) + grouped(0, 1) * grouped(0, 1) + grouped(0, 2) * grouped(0, 2),
              C(0, 0), 1e-14);
  // A negative remainder is clamped to 0 (upstream gives NaN).
  Eigen::VectorXd huge(1);
  huge << 10.0 * C(0, 0);
  EXPECT_EQ(global_grouped_impacts(C, per, layout, &huge, nullptr, nullptr)(0, 1), 0.0);
}

TEST(Chi2, SurvivalFunction) {
  EXPECT_NEAR(chi2_survival(3.841458820694124, 1), 0.05, 1e-12);
  EXPECT_NEAR(chi2_survival(18.307038053275146, 10), 0.05, 1e-12);
  EXPECT_NEAR(chi2_survival(2.0, 2), std::exp(-1.0), 1e-14);
  EXPECT_EQ(chi2_survival(0.0, 5), 1.0);
}

TEST(ResultFile, EscapingRoundTripAndAtomicity) {
  using namespace rabbit::result;
  EXPECT_EQ(escape_key("a/b%c"), "a%2Fb%25c");
  EXPECT_EQ(escape_key("."), "%2E");
  auto dir = rabbit::test::scratch_dir("result_file");
  const std::string path = (dir / "sub" / "r.hdf5").string();
  {
    ResultWriter w(path);
    EXPECT_TRUE(fs::exists(w.temporary_path()));
    EXPECT_FALSE(fs::exists(path));
    // destroyed without commit: nothing remains
  }
  EXPECT_TRUE(fs::is_empty(dir / "sub"));
  {
    ResultWriter w(path);
    w.shared_axis("parms", Axis::strcat("parms", {"a", "b/c"}));
    auto g = create_group(w.root(), "results", "result");
    Axis shared = Axis::strcat("parms", {"a", "b/c"}, "parms");
    double v[2] = {1.5, -2.0}, var[2] = {0.25, 4.0};
    write_hist(g, "nll_scan_b/c", {shared}, v, var, "label");
    write_scalar(g, "nllvalreduced", 3.25);
    write_scalar(g, "ndfsat", int64_t{7});
    std::vector<double> big(5000);
    for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<double>(i);
    write_hist(g, "big", {Axis::integer("x", 0, 50), Axis::integer("y", 0, 100)}, big.data(), nullptr);
    w.commit();
  }
  ResultReader r(path);
  EXPECT_EQ(r.result_groups(), std::vector<std::string>({"results"}));
  auto h = r.hist("results/nll_scan_b%2Fc");
  EXPECT_EQ(h.axis_labels[0], std::vector<std::string>({"a", "b/c"}));
  EXPECT_EQ(h.values, std::vector<double>({1.5, -2.0}));
  EXPECT_EQ(h.variances, std::vector<double>({0.25, 4.0}));
  EXPECT_EQ(h.label, "label");
  EXPECT_EQ(r.scalar("results/nllvalreduced"), 3.25);
  EXPECT_EQ(r.scalar("results/ndfsat"), 7.0);
  auto b = r.hist("results/big");
  EXPECT_EQ(b.shape, std::vector<int64_t>({50, 100}));
  EXPECT_EQ(b.values[4999], 4999.0);
  EXPECT_EQ(r.pick_result(std::nullopt), "results");
  EXPECT_THROW(r.pick_result(std::string("asimov")), rabbit::InputError);
}
