// SmoothABCD, SmoothExtendedABCD and the IsoMT variants (docs/model.md "Smooth ABCD", "The IsoMT
// variants"): layout (outer × smooth bins, rabbit's names), rates from the Chebyshev basis, exact
// derivatives of the bin-range API against finite differences, the IsoMT regions equal to the written-out
// ones, starting values from a params file, and one-line argument errors naming --paramModel.
#include <gtest/gtest.h>
#include <hdf5.h>

#include <cmath>
#include <filesystem>

#include "rabbit/core/error.hpp"
#include "rabbit/model/model.hpp"
#include "rabbit/model/model_options.hpp"
#include "rabbit/model/param_model.hpp"
#include "support/isomt_input.hpp"
#include "support/param_model_derivatives.hpp"

namespace rabbit {
namespace {

using Eigen::MatrixXd;
using Eigen::VectorXd;

std::shared_ptr<const ParamModel> model(const std::string& name, const std::vector<std::string>& args,
                                        bool with_mu = false) {
  std::vector<ParamModelSpec> specs;
  if (with_mu) specs.push_back(ParamModelSpec{"Mu", {}});
  specs.push_back(ParamModelSpec{name, args});
  return make_param_model(*test::isomt_input(), specs, {}, false);
}

/// Small coefficients, different per parameter.
VectorXd point(int64_t M) {
  VectorXd pi(M);
  for (int64_t i = 0; i < M; ++i) pi[i] = 0.2 * std::sin(1.3 * i + 0.4);
  return pi;
}

/// Global bin of isomt_input() at (mt, relIso, pt, eta).
int64_t bin(int64_t mt, int64_t iso, int64_t pt, int64_t eta) {
  return ((mt * 2 + iso) * 3 + pt) * 2 + eta;
}

TEST(SmoothAbcdParamModel, LayoutNamesAndRates) {
  auto m = model("SmoothABCD", test::smooth_abcd_arguments());
  EXPECT_FALSE(m->bin_independent());
  EXPECT_EQ(m->npoi(), 0);
  ASSERT_EQ(m->npou(), 3 * 2 * 2);  // regions × outer (eta) × (order 1 + 1)
  const auto names = m->names();
  EXPECT_EQ(names[0], "nonprompt_ch_A_eta0_poly0");
  EXPECT_EQ(names[3], "nonprompt_ch_A_eta1_poly1");
  EXPECT_EQ(names[4], "nonprompt_ch_B_eta0_poly0");
  EXPECT_EQ(names[11], "nonprompt_ch_C_eta1_poly1");
  EXPECT_EQ(m->default_values(), VectorXd::Zero(12));
  const VectorXd pi = point(12);
  MatrixXd r;
  m->bin_rates(pi, 0, 36, r);
  // pt centres 30, 40, 50 on [25, 55]: x̃ = −2/3, 0, 2/3
  const double x[] = {-2.0 / 3.0, 0.0, 2.0 / 3.0};
  for (int64_t eta = 0; eta < 2; ++eta)
    for (int64_t pt = 0; pt < 3; ++pt) {
      auto s = [&](int64_t k) { return std::exp(pi[(k * 2 + eta) * 2] + pi[(k * 2 + eta) * 2 + 1] * x[pt]); };
      EXPECT_NEAR(r(bin(1, 1, pt, eta), 1), s(0), 1e-14);
      EXPECT_NEAR(r(bin(1, 0, pt, eta), 1), s(1), 1e-14);
      EXPECT_NEAR(r(bin(2, 1, pt, eta), 1), s(2), 1e-14);
      EXPECT_NEAR(r(bin(2, 0, pt, eta), 1), s(0) * s(2) / s(1), 1e-13);
      EXPECT_EQ(r(bin(0, 0, pt, eta), 1), 1.0);  // mt 0 is no region of SmoothABCD
    }
  EXPECT_EQ(r.col(0), VectorXd::Ones(36));
  EXPECT_EQ(r.col(2), VectorXd::Ones(36));
}

TEST(SmoothAbcdParamModel, HigherOrdersFollowTheChebyshevRecursion) {
  auto args = test::smooth_abcd_arguments();
  args.insert(args.begin() + 1, "order:3");
  auto m = model("SmoothABCD", args);
  ASSERT_EQ(m->npou(), 3 * 2 * 4);
  VectorXd pi = VectorXd::Zero(24);
  pi[3] = 0.5;  // A, eta 0, T_3(x̃) = 4x̃³ − 3x̃
  MatrixXd r;
  m->bin_rates(pi, 0, 36, r);
  const double x = 2.0 / 3.0;
  EXPECT_NEAR(r(bin(1, 1, 2, 0), 1), std::exp(0.5 * (4 * x * x * x - 3 * x)), 1e-14);
  test::check_param_model_derivatives(*m, point(24), 0, 36);
}

TEST(SmoothAbcdParamModel, DerivativesAgreeWithFiniteDifferences) {
  auto m = model("SmoothABCD", test::smooth_abcd_arguments());
  test::check_param_model_derivatives(*m, point(12), 0, 36);
  test::check_param_model_derivatives(*m, point(12), 17, 31);  // a range that cuts regions
  auto yc = test::smooth_abcd_arguments();
  yc.insert(yc.begin() + 1, "yieldCorrection:1");
  test::check_param_model_derivatives(*model("SmoothABCD", yc), point(12), 0, 36);
  auto composite = model("SmoothABCD", test::smooth_abcd_arguments(), true);
  ASSERT_EQ(composite->nparams(), 13);
  VectorXd pi = point(13);
  pi[0] = 1.3;
  test::check_param_model_derivatives(*composite, pi, 0, 36);
}

TEST(SmoothAbcdParamModel, ExtendedRatesAndDerivatives) {
  auto m = model("SmoothExtendedABCD", test::smooth_extended_abcd_arguments());
  ASSERT_EQ(m->npou(), 5 * 2 * 2);
  EXPECT_EQ(m->names()[12], "nonprompt_ch_Ax_eta0_poly0");  // parameters A B C Ax Bx
  EXPECT_EQ(m->names()[16], "nonprompt_ch_Bx_eta0_poly0");
  const VectorXd pi = point(20);
  MatrixXd r;
  m->bin_rates(pi, 0, 36, r);
  auto s = [&](int64_t k, int64_t pt) {
    const double x = (pt - 1) * 2.0 / 3.0;
    return std::exp(pi[k * 4] + pi[k * 4 + 1] * x);  // eta 0
  };
  for (int64_t pt = 0; pt < 3; ++pt) {
    EXPECT_NEAR(r(bin(0, 1, pt, 0), 1), s(3, pt), 1e-14);  // Ax
    EXPECT_NEAR(r(bin(2, 0, pt, 0), 1),
                s(2, pt) * s(3, pt) * s(1, pt) * s(1, pt) / (s(4, pt) * s(0, pt) * s(0, pt)), 1e-13);
  }
  test::check_param_model_derivatives(*m, pi, 0, 36);
  auto yc = test::smooth_extended_abcd_arguments();
  yc.insert(yc.begin() + 1, "order:2");
  yc.insert(yc.begin() + 2, "yieldCorrection:1");
  test::check_param_model_derivatives(*model("SmoothExtendedABCD", yc), point(30), 0, 36);
}

TEST(SmoothAbcdParamModel, AnUnderflowingDenominatorIsReplacedAsInRabbit) {
  auto m = model("SmoothABCD", test::smooth_abcd_arguments());
  VectorXd pi = point(12);
  pi[4] = -800.0;  // b = exp(−800 + ...) = 0 at eta 0 → 1e-10
  MatrixXd r;
  m->bin_rates(pi, bin(2, 0, 0, 0), bin(2, 0, 0, 0) + 1, r);
  const double x = -2.0 / 3.0;
  EXPECT_NEAR(r(0, 1), std::exp(pi[0] + pi[1] * x) * std::exp(pi[8] + pi[9] * x) / 1e-10, 1e-3);
  const MatrixXd J = MatrixXd(m->rate_jacobian(pi, bin(2, 0, 0, 0), bin(2, 0, 0, 0) + 1));
  EXPECT_EQ(J(1, 4), 0.0);  // a constant denominator has no slope
  EXPECT_NEAR(J(1, 0), r(0, 1), 1e-3);
}

TEST(SmoothAbcdParamModel, IsoMtVariantsPlaceTheRegionsInTheMtRelIsoPlane) {
  const VectorXd pi = point(20);
  auto expect_same = [&](const std::shared_ptr<const ParamModel>& a,
                         const std::shared_ptr<const ParamModel>& b) {
    ASSERT_EQ(a->names(), b->names());
    MatrixXd ra, rb;
    a->bin_rates(pi.head(a->nparams()), 0, 36, ra);
    b->bin_rates(pi.head(b->nparams()), 0, 36, rb);
    EXPECT_EQ(ra, rb);
  };
  expect_same(model("SmoothABCDIsoMT", {"nonprompt", "ch"}),
              model("SmoothABCD", test::smooth_abcd_arguments()));
  expect_same(model("SmoothExtendedABCDIsoMT", {"yieldCorrection:1", "nonprompt", "ch"}), [] {
    auto args = test::smooth_extended_abcd_arguments();
    args.insert(args.begin() + 1, "yieldCorrection:1");
    return model("SmoothExtendedABCD", args);
  }());
  auto so = test::smooth_abcd_arguments();
  so.insert(so.begin() + 1, "order:2");
  expect_same(model("SmoothABCDIsoMT", {"order:2", "nonprompt", "ch"}), model("SmoothABCD", so));
  expect_same(model("ABCDIsoMT", {"nonprompt", "ch"}),
              model("ABCD", {"nonprompt", "ch", "relIso:1", "mt:1", "ch", "relIso:0", "mt:1", "ch",
                             "relIso:1", "mt:2", "ch", "relIso:0", "mt:2"}));
  expect_same(model("ExtendedABCDIsoMT", {"nonprompt", "ch"}),
              model("ExtendedABCD",
                    {"nonprompt", "ch", "relIso:1", "mt:0", "ch", "relIso:0", "mt:0", "ch", "relIso:1",
                     "mt:1", "ch", "relIso:0", "mt:1", "ch", "relIso:1", "mt:2", "ch", "relIso:0", "mt:2"}));
  EXPECT_EQ(model("ABCDIsoMT", {"nonprompt", "ch"})->names()[0], "nonprompt_ch_mt1_relIso1_pt0_eta0");
}

TEST(SmoothAbcdParamModel, StartingValuesFromAParamsFile) {
  const auto file = std::filesystem::temp_directory_path() / "rabbit_smooth_abcd_params.hdf5";
  std::vector<double> values(20);
  for (int i = 0; i < 20; ++i) values[i] = 0.1 * i + 0.01;
  {  // as h5py writes rabbit's --dumpSmoothingParams output: a 1-D "params" and a scalar "order"
    const hid_t f = H5Fcreate(file.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    const hsize_t n = values.size();
    const hid_t space = H5Screate_simple(1, &n, nullptr), scalar = H5Screate(H5S_SCALAR);
    const hid_t d = H5Dcreate2(f, "params", H5T_IEEE_F64LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data());
    const int64_t order = 1;
    const hid_t o = H5Dcreate2(f, "order", H5T_STD_I64LE, scalar, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Dwrite(o, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, &order);
    H5Dclose(o);
    H5Dclose(d);
    H5Sclose(scalar);
    H5Sclose(space);
    H5Fclose(f);
  }
  const std::string token = "params:" + file.string();
  auto m = model("SmoothExtendedABCDIsoMT", {token, "nonprompt", "ch"});
  ASSERT_EQ(m->default_values().size(), 20);
  for (int i = 0; i < 20; ++i)  // stored as float32, as rabbit does
    EXPECT_EQ(m->default_values()[i], static_cast<double>(static_cast<float>(values[i])));
  auto args = test::smooth_extended_abcd_arguments();
  args.insert(args.begin() + 1, token);
  EXPECT_EQ(model("SmoothExtendedABCD", args)->default_values(), m->default_values());
  std::filesystem::remove(file);
}

void expect_error(const std::string& name, const std::vector<std::string>& args, const std::string& message) {
  try {
    model(name, args);
    FAIL() << "no OptionError for " << message;
  } catch (const OptionError& e) {
    EXPECT_EQ(std::string(e.what()), message);
  }
}

TEST(SmoothAbcdParamModel, BadArgumentsGiveOneLineErrors) {
  expect_error("SmoothABCD", {"pt", "nonprompt", "ch"},
               "--paramModel SmoothABCD: expected AXIS [order:N] [yieldCorrection:0|1] PROCESS and 4 regions "
               "(CHANNEL [AXIS:INDEX ...] each), got 3 argument(s)");
  auto args = test::smooth_abcd_arguments();
  args[0] = "phi";
  expect_error(
      "SmoothABCD", args,
      "--paramModel SmoothABCD: smoothing axis 'phi' not found among the free axes of channel 'ch' for "
      "region A; free axes: [pt, eta]");
  args = test::smooth_abcd_arguments();
  args.insert(args.begin() + 1, "order:-1");
  expect_error("SmoothABCD", args,
               "--paramModel SmoothABCD: order:-1: the polynomial order must be 0 or more");
  args[1] = "order:x";
  expect_error("SmoothABCD", args, "--paramModel SmoothABCD: 'order:x': 'x' is not an integer");
  args = test::smooth_abcd_arguments();
  args[4] = "pt:0";  // A fixes the smoothing axis
  expect_error(
      "SmoothABCD", args,
      "--paramModel SmoothABCD: smoothing axis 'pt' not found among the free axes of channel 'ch' for "
      "region A; free axes: [mt, eta]");
  args = test::smooth_abcd_arguments();
  args.insert(args.begin() + 5, "eta:0");  // A has one outer bin, B two
  expect_error("SmoothABCD", args, "--paramModel SmoothABCD: region B has 2 outer bins, region A has 1");
  args = test::smooth_abcd_arguments();
  args.push_back("extra");
  expect_error("SmoothABCD", args, "--paramModel SmoothABCD: unexpected argument(s) after region D: 'extra'");
  args = test::smooth_extended_abcd_arguments();
  args.insert(args.begin() + 1, "params:/nonexistent/p.hdf5");
  try {
    model("SmoothExtendedABCD", args);
    FAIL();
  } catch (const OptionError& e) {
    EXPECT_EQ(
        std::string(e.what()).rfind("--paramModel SmoothExtendedABCD: 'params:/nonexistent/p.hdf5': ", 0), 0u)
        << e.what();
  }
  expect_error("ABCDIsoMT", {"nonprompt"},
               "--paramModel ABCDIsoMT: expected [yieldCorrection:0|1] PROCESS CHANNEL, got 1 argument(s)");
  expect_error("SmoothABCDIsoMT", {"nonprompt", "ch", "x"},
               "--paramModel SmoothABCDIsoMT: unexpected argument(s) after CHANNEL: 'x'");
  expect_error("ExtendedABCDIsoMT", {"nonprompt", "chan"},
               "--paramModel ExtendedABCDIsoMT: channel 'chan' not found; channels: [ch]");
  expect_error(
      "SmoothExtendedABCDIsoMT", {"fake", "ch"},
      "--paramModel SmoothExtendedABCDIsoMT: process 'fake' not found; processes: [signal, nonprompt, ewk]");
}

TEST(SmoothAbcdParamModel, IsoMtNeedsTheMtAndRelIsoAxes) {
  auto in = test::isomt_input();
  in->channels[0].axes[1].name = "iso";
  try {
    make_param_model(*in, {ParamModelSpec{"ABCDIsoMT", {"nonprompt", "ch"}}}, {}, false);
    FAIL();
  } catch (const OptionError& e) {
    EXPECT_EQ(std::string(e.what()),
              "--paramModel ABCDIsoMT: channel 'ch' has no axis named 'relIso'; axes: [mt, iso, pt, eta]");
  }
  in = test::isomt_input();
  in->channels[0].axes[0].size = 2;  // mt(2): enough for ABCD, not for the extended model
  in->channels[0].axes[1].size = 3;  // keep the channel's bin count
  EXPECT_NO_THROW(make_param_model(*in, {ParamModelSpec{"ABCDIsoMT", {"nonprompt", "ch"}}}, {}, false));
  try {
    make_param_model(*in, {ParamModelSpec{"ExtendedABCDIsoMT", {"nonprompt", "ch"}}}, {}, false);
    FAIL();
  } catch (const OptionError& e) {
    EXPECT_EQ(std::string(e.what()),
              "--paramModel ExtendedABCDIsoMT: channel 'ch': the mt axis has 2 bin(s), fewer than 3");
  }
}

TEST(SmoothAbcdParamModel, AllAreBinDependent) {
  for (const char* name : {"SmoothABCD", "SmoothExtendedABCD", "ABCDIsoMT", "ExtendedABCDIsoMT",
                           "SmoothABCDIsoMT", "SmoothExtendedABCDIsoMT"})
    EXPECT_TRUE(param_model_depends_on_bin(name)) << name;
}

}  // namespace
}  // namespace rabbit
