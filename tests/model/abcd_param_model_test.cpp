// The ABCD family of param models (docs/model.md "Bin-dependent param models"): rates per region, names as
// rabbit's, exact derivatives of the bin-range API against finite differences (alone, with the MC
// correction, and in a composite with Mu), and one-line argument errors naming --paramModel.
#include <gtest/gtest.h>

#include "rabbit/core/error.hpp"
#include "rabbit/model/model.hpp"
#include "rabbit/model/model_options.hpp"
#include "rabbit/model/param_model.hpp"
#include "support/abcd_input.hpp"
#include "support/param_model_derivatives.hpp"

namespace rabbit {
namespace {

using Eigen::MatrixXd;
using Eigen::VectorXd;

std::shared_ptr<const ParamModel> abcd(const std::vector<std::string>& args, const std::string& name = "ABCD",
                                       bool with_mu = false) {
  std::vector<ParamModelSpec> specs;
  if (with_mu) specs.push_back(ParamModelSpec{"Mu", {}});
  specs.push_back(ParamModelSpec{name, args});
  return make_param_model(*test::abcd_input(), specs, {}, false);
}

/// A point away from 1, different per parameter.
VectorXd point(int64_t M) {
  VectorXd pi(M);
  for (int64_t i = 0; i < M; ++i) pi[i] = 0.8 + 0.07 * i;
  return pi;
}

TEST(AbcdParamModel, RatesNamesAndDefaults) {
  auto m = abcd(test::abcd_arguments());
  EXPECT_FALSE(m->bin_independent());
  EXPECT_EQ(m->npoi(), 0);
  ASSERT_EQ(m->npou(), 6);
  EXPECT_EQ(m->names(), (std::vector<std::string>{"nonprompt_fakes_iso0_pt0", "nonprompt_fakes_iso0_pt1",
                                                  "nonprompt_fakes_iso1_pt0", "nonprompt_fakes_iso1_pt1",
                                                  "nonprompt_ch_C_pt0", "nonprompt_ch_C_pt1"}));
  EXPECT_EQ(m->default_values(), VectorXd::Ones(6));
  const VectorXd pi = point(6);  // a = π[0:2]², b = π[2:4]², c = π[4:6]²
  MatrixXd r;
  m->bin_rates(pi, 0, 10, r);
  for (int64_t i = 0; i < 2; ++i) {
    const double a = pi[i] * pi[i], b = pi[2 + i] * pi[2 + i], c = pi[4 + i] * pi[4 + i];
    EXPECT_DOUBLE_EQ(r(i, 1), a);
    EXPECT_DOUBLE_EQ(r(2 + i, 1), b);
    EXPECT_DOUBLE_EQ(r(4 + i, 1), c);
    EXPECT_DOUBLE_EQ(r(6 + i, 1), a * c / b);
    EXPECT_EQ(r(8 + i, 1), 1.0);  // the masked channel is no region
  }
  EXPECT_EQ(r.col(0), VectorXd::Ones(10));
  EXPECT_EQ(r.col(2), VectorXd::Ones(10));
}

TEST(AbcdParamModel, DerivativesAgreeWithFiniteDifferences) {
  auto m = abcd(test::abcd_arguments());
  test::check_param_model_derivatives(*m, point(6), 0, 10);
  test::check_param_model_derivatives(*m, point(6), 3, 7);  // a range that cuts regions
}

TEST(AbcdParamModel, YieldCorrectionMultipliesTheMonteCarloFactor) {
  auto args = test::abcd_arguments();
  args.insert(args.begin(), "yieldCorrection:1");
  auto m = abcd(args);
  MatrixXd r;
  m->bin_rates(VectorXd::Ones(6), 6, 8, r);
  // norm of nonprompt: A 40, 44; B 80, 86; C 30, 27; D 15, 14
  EXPECT_DOUBLE_EQ(r(0, 1), 40.0 * 30.0 / (80.0 * 15.0));
  EXPECT_DOUBLE_EQ(r(1, 1), 44.0 * 27.0 / (86.0 * 14.0));
  test::check_param_model_derivatives(*m, point(6), 0, 10);
}

TEST(AbcdParamModel, ExtendedAbcdRatesAndDerivatives) {
  // six one-bin regions (the command line gives Ax Bx A B C D): bins 0, 1, 2, 3, 4 and 7
  const std::vector<std::string> args = {"nonprompt", "fakes", "iso:0", "pt:0", "fakes", "iso:0",
                                         "pt:1",      "fakes", "iso:1", "pt:0", "fakes", "iso:1",
                                         "pt:1",      "ch_C",  "pt:0",  "ch_D", "pt:1"};
  auto m = abcd(args, "ExtendedABCD");
  ASSERT_EQ(m->npou(), 5);
  // parameter order A, B, C, Ax, Bx
  EXPECT_EQ(m->names(), (std::vector<std::string>{"nonprompt_fakes_iso1_pt0", "nonprompt_fakes_iso1_pt1",
                                                  "nonprompt_ch_C_pt0", "nonprompt_fakes_iso0_pt0",
                                                  "nonprompt_fakes_iso0_pt1"}));
  const VectorXd pi = point(5);
  MatrixXd r;
  m->bin_rates(pi, 0, 10, r);
  const VectorXd s = pi.cwiseProduct(pi);  // a, b, c, ax, bx
  EXPECT_DOUBLE_EQ(r(7, 1), s[2] * s[3] * s[1] * s[1] / (s[4] * s[0] * s[0]));
  test::check_param_model_derivatives(*m, pi, 0, 10);
  auto yc = args;
  yc.insert(yc.begin(), "yieldCorrection:1");
  test::check_param_model_derivatives(*abcd(yc, "ExtendedABCD"), pi, 0, 10);
}

TEST(AbcdParamModel, CompositeWithMuHasExactDerivatives) {
  auto m = abcd(test::abcd_arguments(), "ABCD", true);
  EXPECT_FALSE(m->bin_independent());
  ASSERT_EQ(m->npoi(), 1);
  ASSERT_EQ(m->nparams(), 7);
  EXPECT_EQ(m->names().front(), "signal");
  VectorXd pi = point(7);
  pi[0] = 1.3;
  test::check_param_model_derivatives(*m, pi, 0, 10);
  MatrixXd r;
  m->bin_rates(pi, 4, 5, r);
  EXPECT_DOUBLE_EQ(r(0, 0), 1.3);
  EXPECT_DOUBLE_EQ(r(0, 1), pi[5] * pi[5]);
}

TEST(AbcdParamModel, AZeroDenominatorIsReplacedAsInRabbit) {
  auto m = abcd(test::abcd_arguments());
  VectorXd pi = point(6);
  pi[2] = 0.0;  // b_0 = 0 → 1e-10
  MatrixXd r;
  m->bin_rates(pi, 6, 7, r);
  EXPECT_DOUBLE_EQ(r(0, 1), pi[0] * pi[0] * pi[4] * pi[4] / 1e-10);
  const MatrixXd J = MatrixXd(m->rate_jacobian(pi, 6, 7));
  EXPECT_EQ(J(1, 2), 0.0);  // a constant denominator has no slope
}

void expect_error(const std::vector<std::string>& args, const std::string& message,
                  const std::string& name = "ABCD") {
  try {
    abcd(args, name);
    FAIL() << "no OptionError for " << message;
  } catch (const OptionError& e) {
    EXPECT_EQ(std::string(e.what()), message);
  }
}

TEST(AbcdParamModel, BadArgumentsGiveOneLineErrors) {
  expect_error(
      {"nonprompt", "fakes"},
      "--paramModel ABCD: expected [yieldCorrection:0|1] PROCESS and 4 regions (CHANNEL [AXIS:INDEX ...] "
      "each), got 2 argument(s)");
  expect_error({"fake", "fakes", "iso:0", "fakes", "iso:1", "ch_C", "ch_D"},
               "--paramModel ABCD: process 'fake' not found; processes: [signal, nonprompt, ewk]");
  expect_error({"nonprompt", "fakes", "iso:0", "fakes", "iso:1", "ch_X", "ch_D"},
               "--paramModel ABCD: channel 'ch_X' not found; channels: [fakes, ch_C, ch_D, ch_D_masked]");
  expect_error({"nonprompt", "fakes", "eta:0", "fakes", "iso:1", "ch_C", "ch_D"},
               "--paramModel ABCD: axis 'eta' not found in channel 'fakes'; axes: [iso, pt]");
  expect_error({"nonprompt", "fakes", "iso:2", "fakes", "iso:1", "ch_C", "ch_D"},
               "--paramModel ABCD: 'iso:2': index outside the 2 bins of axis 'iso' of channel 'fakes'");
  expect_error({"nonprompt", "fakes", "iso:x", "fakes", "iso:1", "ch_C", "ch_D"},
               "--paramModel ABCD: 'iso:x': 'x' is not an integer");
  expect_error({"yieldCorrection:yes", "nonprompt", "fakes", "iso:0", "fakes", "iso:1", "ch_C", "ch_D"},
               "--paramModel ABCD: 'yieldCorrection:yes': 'yes' is not an integer");
  expect_error({"nonprompt", "fakes", "iso:0", "fakes", "iso:1", "ch_C", "pt:1"},
               "--paramModel ABCD: expected a channel name for region D, got '<end>'");
  expect_error({"nonprompt", "iso:0", "fakes", "iso:1", "ch_C", "ch_D"},
               "--paramModel ABCD: expected a channel name for region A, got 'iso:0'");
  expect_error({"nonprompt", "fakes", "iso:0", "fakes", "iso:1", "ch_C", "ch_D", "extra"},
               "--paramModel ABCD: unexpected argument(s) after region D: 'extra'");
  expect_error({"nonprompt", "fakes", "fakes", "iso:1", "ch_C", "ch_D"},
               "--paramModel ABCD: all regions must have the same number of bins; A has 4, B has 2");
  expect_error({"nonprompt", "fakes", "iso:0", "fakes", "iso:0", "ch_C", "ch_D"},
               "--paramModel ABCD: bin 0 of the input is in more than one region");
  expect_error({"nonprompt", "fakes", "iso:0", "fakes", "iso:1", "ch_C"},
               "--paramModel ExtendedABCD: expected [yieldCorrection:0|1] PROCESS and 6 regions (CHANNEL "
               "[AXIS:INDEX ...] each), got 6 argument(s)",
               "ExtendedABCD");
}

TEST(AbcdParamModel, BuildModelTakesTheAbcdParametersAsModelNuisances) {
  ModelOptions options;
  options.param_models = {ParamModelSpec{"Mu", {}}, ParamModelSpec{"ABCD", test::abcd_arguments()}};
  auto model = build_model(test::abcd_input(), options);
  EXPECT_EQ(model->parameters.npoi, 1);
  EXPECT_EQ(model->parameters.npou, 6);
  EXPECT_EQ(model->parameters.names[1], "nonprompt_fakes_iso0_pt0");
  EXPECT_TRUE(param_model_depends_on_bin("ABCD"));
  EXPECT_TRUE(param_model_depends_on_bin("ExtendedABCD"));
  EXPECT_FALSE(param_model_depends_on_bin("Mu"));
}

}  // namespace
}  // namespace rabbit
