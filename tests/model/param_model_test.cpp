// Param models (docs/model.md "Param models"): rates, Jacobian and curvature vs finite differences; options.
#include "rabbit/model/param_model.hpp"

#include <gtest/gtest.h>

#include "rabbit/core/error.hpp"
#include "rabbit/model/model_options.hpp"
#include "support/finite_differences.hpp"
#include "support/small_input.hpp"

namespace rabbit {
namespace {

using Specs = std::vector<ParamModelSpec>;

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const OptionError& e) {
    return e.what();
  }
  return "<no OptionError>";
}

/// Jacobian and curvature against central finite differences of rates() at pi.
void check_against_fd(const ParamModel& m, const Eigen::VectorXd& pi, const Eigen::VectorXd& w) {
  Eigen::VectorXd r;
  Eigen::MatrixXd jac;
  m.rates(pi, r, &jac);
  ASSERT_EQ(jac.cols(), m.nparams());
  const double h = 1e-6;
  Eigen::MatrixXd curv_fd(m.nparams(), m.nparams());
  for (int64_t a = 0; a < m.nparams(); ++a) {
    const Eigen::VectorXd fd = test::central_partial(
        [&](const Eigen::VectorXd& p) {
          Eigen::VectorXd r;
          Eigen::MatrixXd j;
          m.rates(p, r, &j);
          return r;
        },
        pi, a, h);
    EXPECT_LT((fd - jac.col(a)).cwiseAbs().maxCoeff(), 1e-8) << "column " << a;
    const Eigen::MatrixXd jac_fd = test::central_partial(
        [&](const Eigen::VectorXd& p) {
          Eigen::VectorXd r;
          Eigen::MatrixXd j;
          m.rates(p, r, &j);
          return j;
        },
        pi, a, h);
    curv_fd.col(a) = jac_fd.transpose() * w;
  }
  const Eigen::MatrixXd curv = m.rate_curvature(pi, w);
  EXPECT_LT((curv - curv_fd).cwiseAbs().maxCoeff(), 1e-7) << "curvature\n" << curv << "\nvs\n" << curv_fd;
  EXPECT_LT((curv - curv.transpose()).cwiseAbs().maxCoeff(), 1e-14);
}

TEST(ParamModel, MuIsTheDefault) {
  auto in = test::small_input();
  auto m = make_param_model(*in, {}, {{"sig2", 0.25}}, false);
  EXPECT_EQ(m->npoi(), 2);
  EXPECT_EQ(m->npou(), 0);
  EXPECT_EQ(m->names(), (std::vector<std::string>{"sig", "sig2"}));
  EXPECT_EQ(m->default_values(), Eigen::Vector2d(1.0, 0.25));
  EXPECT_FALSE(m->is_linear());
  Eigen::VectorXd r;
  m->rates(Eigen::Vector2d(1.5, 0.5), r, nullptr);
  EXPECT_EQ(r, Eigen::Vector4d(1.5, 0.5, 1.0, 1.0));
  check_against_fd(*m, Eigen::Vector2d(1.5, 0.5), Eigen::Vector4d(1, 2, 3, 4));
  EXPECT_TRUE(make_param_model(*in, {}, {}, true)->is_linear());
}

TEST(ParamModel, OnesHasNoParameters) {
  auto in = test::small_input();
  auto m = make_param_model(*in, {ParamModelSpec{"Ones", {}}}, {{"whatever", 2.0}}, false);
  EXPECT_EQ(m->nparams(), 0);
  Eigen::VectorXd r;
  m->rates(Eigen::VectorXd(0), r, nullptr);
  EXPECT_EQ(r, Eigen::Vector4d::Ones());
}

TEST(ParamModel, MixtureUsesProcessListOrder) {
  auto in = test::small_input();
  // Typed order (bkg2, sig) / (bkg, sig2); rabbit pairs them in process-list order:
  // primaries [sig, bkg2], complementaries [sig2, bkg].
  auto m = make_param_model(*in, {ParamModelSpec{"Mixture", {"bkg2,sig", "bkg,sig2"}}},
                            {{"sig_sig2_mixing", 0.3}}, false);
  EXPECT_EQ(m->names(), (std::vector<std::string>{"bkg2_bkg_mixing", "sig_sig2_mixing"}));
  EXPECT_EQ(m->default_values(), Eigen::Vector2d(1.0, 0.3));
  Eigen::VectorXd r;
  m->rates(Eigen::Vector2d(0.2, 0.7), r, nullptr);
  EXPECT_DOUBLE_EQ(r[0], 0.2);        // sig   <- π_0
  EXPECT_DOUBLE_EQ(r[1], 1.0 - 0.2);  // sig2  <- 1 − π_0
  EXPECT_DOUBLE_EQ(r[2], 1.0 - 0.7);  // bkg   <- 1 − π_1
  EXPECT_DOUBLE_EQ(r[3], 0.7);        // bkg2  <- π_1
  check_against_fd(*m, Eigen::Vector2d(0.2, 0.7), Eigen::Vector4d(1, -2, 3, 0.5));
}

TEST(ParamModel, CompositeOfMuAndMixture) {
  auto in = test::small_input();
  auto m = make_param_model(
      *in, {ParamModelSpec{"Mu", {}}, ParamModelSpec{"Ones", {}}, ParamModelSpec{"Mixture", {"sig", "bkg"}}},
      {}, true);
  EXPECT_EQ(m->names(), (std::vector<std::string>{"sig", "sig2", "sig_bkg_mixing"}));
  EXPECT_EQ(m->npoi(), 3);
  EXPECT_TRUE(m->allow_negative_param());
  EXPECT_FALSE(m->is_linear());
  const Eigen::Vector3d pi(1.3, 0.8, 0.4);
  Eigen::VectorXd r;
  m->rates(pi, r, nullptr);
  EXPECT_DOUBLE_EQ(r[0], 1.3 * 0.4);
  EXPECT_DOUBLE_EQ(r[1], 0.8);
  EXPECT_DOUBLE_EQ(r[2], 1.0 - 0.4);
  EXPECT_DOUBLE_EQ(r[3], 1.0);
  const Eigen::Vector4d w(2.0, -1.0, 0.5, 3.0);
  check_against_fd(*m, pi, w);
  // The bilinear sig·mixing product has the only non-zero curvature: w_sig.
  const Eigen::MatrixXd c = m->rate_curvature(pi, w);
  EXPECT_DOUBLE_EQ(c(0, 2), 2.0);
  EXPECT_DOUBLE_EQ(c(2, 0), 2.0);
  EXPECT_EQ(c(0, 0), 0.0);
}

TEST(ParamModel, ExpectSignalValidatedByEverySubModel) {
  auto in = test::small_input();
  EXPECT_EQ(error_of([&] {
              make_param_model(*in, {}, {{"bkg", 2.0}}, false);
            }),
            "--expectSignal: 'bkg' is not a parameter of param model Mu (its parameters: [sig, sig2])");
  // In a composite the Mixture model rejects the Mu parameter (rabbit behaviour).
  EXPECT_EQ(
      error_of([&] {
        make_param_model(*in, {ParamModelSpec{"Mu", {}}, ParamModelSpec{"Mixture", {"sig", "bkg"}}},
                         {{"sig", 2.0}}, false);
      }),
      "--expectSignal: 'sig' is not a parameter of param model Mixture (its parameters: [sig_bkg_mixing])");
}

TEST(ParamModel, BadSpecsAreOptionErrors) {
  auto in = test::small_input();
  const std::string unknown = error_of([&] {
    make_param_model(*in, {ParamModelSpec{"NoSuchModel", {}}}, {}, false);
  });
  EXPECT_NE(
      unknown.find("unknown param model 'NoSuchModel'; supported: Ones, Mu, Mixture, ABCD, ExtendedABCD, "
                   "SmoothABCD, SmoothExtendedABCD, ABCDIsoMT, ExtendedABCDIsoMT, SmoothABCDIsoMT, "
                   "SmoothExtendedABCDIsoMT, AxisNormModel, AxisExpModel, AxisBernsteinModel"),
      std::string::npos)
      << unknown;
  EXPECT_NE(unknown.find("not implemented"), std::string::npos);
  EXPECT_NE(error_of([&] {
              make_param_model(*in, {ParamModelSpec{"Mixture", {"sig"}}}, {}, false);
            }).find("expected exactly 2 arguments"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              make_param_model(*in, {ParamModelSpec{"Mixture", {"sig,bkg", "sig2"}}}, {}, false);
            }).find("same length, got 2 and 1"),
            std::string::npos);
  EXPECT_EQ(error_of([&] {
              make_param_model(*in, {ParamModelSpec{"Mixture", {"sig", "nope"}}}, {}, false);
            }),
            "--paramModel Mixture: [nope] not found in processes [sig, sig2, bkg, bkg2]");
  EXPECT_EQ(error_of([&] {
              make_param_model(*in, {ParamModelSpec{"Mixture", {"sig,bkg", "bkg,sig2"}}}, {}, false);
            }),
            "--paramModel Mixture: process 'bkg' is listed more than once");
  EXPECT_NE(error_of([&] {
              make_param_model(*in, {ParamModelSpec{"Mu", {"x"}}}, {}, false);
            }).find("no arguments"),
            std::string::npos);
}

}  // namespace
}  // namespace rabbit
