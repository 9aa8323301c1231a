// The bin-range API of ParamModel (include/rabbit/model/param_model.hpp; docs/model.md "Param models"):
// the defaults agree with the per-process rates and their derivatives agree with finite differences;
// the registry lists the supported models (the bin-dependent ABCD family: abcd_param_model_test.cpp).
#include <gtest/gtest.h>

#include "rabbit/core/error.hpp"
#include "rabbit/model/model.hpp"
#include "rabbit/model/model_options.hpp"
#include "rabbit/model/param_model.hpp"
#include "support/finite_differences.hpp"
#include "support/small_input.hpp"

namespace rabbit {
namespace {

using Eigen::MatrixXd;
using Eigen::VectorXd;

constexpr int64_t kB0 = 1, kB1 = 4;  // a range that does not start at bin 0

/// max |a − b|, 0 for empty arguments (Eigen's maxCoeff needs a coefficient).
double max_abs_diff(const MatrixXd& a, const MatrixXd& b) {
  return a.size() ? (a - b).cwiseAbs().maxCoeff() : 0.0;
}

/// Σ_bp w_bp r_bp(π) over [kB0, kB1): its gradient is rates_vjp.
double weighted_sum(const ParamModel& m, const VectorXd& pi, const MatrixXd& w) {
  MatrixXd r;
  m.bin_rates(pi, kB0, kB1, r);
  return (r.array() * w.array()).sum();
}

void check_bin_range(const ParamModel& m, const VectorXd& pi) {
  const int64_t nb = kB1 - kB0, P = 4, M = m.nparams();
  ASSERT_EQ(pi.size(), M);
  EXPECT_TRUE(m.bin_independent());
  VectorXd row;
  MatrixXd jac;
  m.rates(pi, row, &jac);

  // rates over the range: the per-process row in every bin
  MatrixXd r;
  m.bin_rates(pi, kB0, kB1, r);
  ASSERT_EQ(r.rows(), nb);
  ASSERT_EQ(r.cols(), P);
  for (int64_t b = 0; b < nb; ++b) EXPECT_EQ(VectorXd(r.row(b).transpose()), row) << "bin " << b;

  // weights that differ per bin and process
  MatrixXd w(nb, P);
  for (int64_t b = 0; b < nb; ++b)
    for (int64_t p = 0; p < P; ++p) w(b, p) = 0.5 + 0.7 * b - 0.3 * p + 0.1 * b * p;

  // vector-Jacobian product: Jᵀ Σ_b w_b, and the gradient of the weighted sum
  VectorXd g;
  m.rates_vjp(pi, kB0, kB1, w, g);
  ASSERT_EQ(g.size(), M);
  const VectorXd g_per_process = jac.transpose() * w.colwise().sum().transpose();
  EXPECT_LT(max_abs_diff(g, g_per_process), 1e-12);
  const double h = 1e-6;
  const VectorXd g_fd =
      test::central_gradient([&](const VectorXd& p) { return weighted_sum(m, p, w); }, pi, h);
  EXPECT_LT(max_abs_diff(g, g_fd), 1e-7) << g.transpose() << " vs " << g_fd.transpose();

  // Jacobian-vector products for two directions
  MatrixXd v(M, 2);
  for (int64_t i = 0; i < M; ++i) {
    v(i, 0) = 1.0 + i;
    v(i, 1) = 0.5 - 0.25 * i;
  }
  MatrixXd dr;
  m.rates_jvp(pi, kB0, kB1, v, dr);
  ASSERT_EQ(dr.rows(), nb * P);
  ASSERT_EQ(dr.cols(), 2);
  for (int64_t j = 0; j < 2; ++j) {
    // d/dt R(π + t v_j) at t = 0, flattened as rows b·P + p
    const VectorXd t0 = VectorXd::Zero(1);
    const MatrixXd fd = test::central_partial(
        [&](const VectorXd& t) {
          MatrixXd rr;
          m.bin_rates(pi + t[0] * v.col(j), kB0, kB1, rr);
          MatrixXd flat(nb * P, 1);
          for (int64_t b = 0; b < nb; ++b)
            for (int64_t p = 0; p < P; ++p) flat(b * P + p, 0) = rr(b, p);
          return flat;
        },
        t0, 0, h);
    EXPECT_LT(max_abs_diff(dr.col(j), fd.col(0)), 1e-7) << "direction " << j;
  }

  // curvature product: the derivative of the vjp along each direction
  const MatrixXd cv = m.curvature_product(pi, kB0, kB1, w, v);
  ASSERT_EQ(cv.rows(), M);
  ASSERT_EQ(cv.cols(), 2);
  for (int64_t j = 0; j < 2; ++j) {
    const VectorXd t0 = VectorXd::Zero(1);
    const VectorXd fd = test::central_partial(
        [&](const VectorXd& t) {
          VectorXd gg;
          m.rates_vjp(pi + t[0] * v.col(j), kB0, kB1, w, gg);
          return gg;
        },
        t0, 0, h);
    EXPECT_LT(max_abs_diff(cv.col(j), fd), 1e-7) << "direction " << j;
  }
}

TEST(ParamModelBinRange, MuDefaultsAgreeWithPerProcessRates) {
  auto in = test::small_input();
  check_bin_range(*make_param_model(*in, {}, {}, false), Eigen::Vector2d(1.5, 0.5));
}

TEST(ParamModelBinRange, OnesHasEmptyDerivatives) {
  auto in = test::small_input();
  check_bin_range(*make_param_model(*in, {ParamModelSpec{"Ones", {}}}, {}, false), VectorXd(0));
}

TEST(ParamModelBinRange, MixtureDefaultsAgreeWithPerProcessRates) {
  auto in = test::small_input();
  check_bin_range(*make_param_model(*in, {ParamModelSpec{"Mixture", {"bkg2,sig", "bkg,sig2"}}}, {}, false),
                  Eigen::Vector2d(0.2, 0.7));
}

TEST(ParamModelBinRange, CompositeCurvatureProduct) {
  auto in = test::small_input();
  // sig·mixing is bilinear: the only model here with a non-zero curvature product.
  auto m =
      make_param_model(*in, {ParamModelSpec{"Mu", {}}, ParamModelSpec{"Mixture", {"sig", "bkg"}}}, {}, true);
  check_bin_range(*m, Eigen::Vector3d(1.3, 0.8, 0.4));
  const MatrixXd w = MatrixXd::Ones(kB1 - kB0, 4);
  const MatrixXd cv =
      m->curvature_product(Eigen::Vector3d(1.3, 0.8, 0.4), kB0, kB1, w, Eigen::Vector3d(1, 0, 0));
  EXPECT_DOUBLE_EQ(cv(2, 0), 3.0);  // Σ_b w_b,sig over the three bins
}

TEST(ParamModelBinRange, SupportedModelsComeFromTheRegistry) {
  EXPECT_EQ(supported_param_models(),
            (std::vector<std::string>{"Ones", "Mu", "Mixture", "ABCD", "ExtendedABCD", "SmoothABCD",
                                      "SmoothExtendedABCD", "ABCDIsoMT", "ExtendedABCDIsoMT",
                                      "SmoothABCDIsoMT", "SmoothExtendedABCDIsoMT", "AxisNormModel",
                                      "AxisExpModel", "AxisBernsteinModel"}));
}

}  // namespace
}  // namespace rabbit
