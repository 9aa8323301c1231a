// The Axis-type param models (docs/model.md "Axis-type param models"): rabbit's names and layout, rates by
// hand, exact derivatives of the bin-range API against finite differences (also in a composite and over
// bin ranges that cut the channel), --expectSignal, and one-line argument errors naming --paramModel.
#include <gtest/gtest.h>

#include <cmath>

#include "rabbit/core/error.hpp"
#include "rabbit/model/model_options.hpp"
#include "rabbit/model/param_model.hpp"
#include "support/isomt_input.hpp"
#include "support/param_model_derivatives.hpp"

namespace rabbit {
namespace {

using Eigen::MatrixXd;
using Eigen::VectorXd;

/// isomt_input() with a 4-bin channel "pre" in front of "ch", so that "ch" starts at bin 4 (the
/// models only read the channel layout; the templates of "pre" are not needed here).
std::shared_ptr<FitInputData> two_channel_input() {
  auto in = test::isomt_input();
  ChannelInfo pre;
  pre.name = "pre";
  AxisInfo x;
  x.kind = "regular";
  x.name = "x";
  x.size = 4;
  x.edges = {0, 1, 2, 3, 4};
  pre.axes = {x};
  pre.start = 0;
  pre.stop = 4;
  for (auto& ch : in->channels) {
    ch.start += 4;
    ch.stop += 4;
  }
  in->channels.insert(in->channels.begin(), pre);
  in->nbins += 4;
  in->nbinsfull += 4;
  return in;
}

std::shared_ptr<const ParamModel> model(const FitInputData& in, const std::string& name,
                                        const std::vector<std::string>& args,
                                        const std::vector<std::pair<std::string, double>>& expect = {}) {
  return make_param_model(in, {ParamModelSpec{name, args}}, expect, false);
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const OptionError& e) {
    return e.what();
  }
  return "(no error)";
}

/// Channel bin of "ch" at (mt, relIso, pt, eta), 0-based within the channel.
int64_t bin(int64_t mt, int64_t iso, int64_t pt, int64_t eta) {
  return ((mt * 2 + iso) * 3 + pt) * 2 + eta;
}

VectorXd point(int64_t M) {
  VectorXd pi(M);
  for (int64_t i = 0; i < M; ++i) pi[i] = 0.8 + 0.3 * std::sin(1.3 * i + 0.4);
  return pi;
}

TEST(AxisNormModel, NamesLayoutAndRates) {
  auto in = two_channel_input();
  auto m = model(*in, "AxisNormModel", {"ch", "nonprompt,ewk", "pt,eta"});
  EXPECT_TRUE(param_model_depends_on_bin("AxisNormModel"));
  EXPECT_FALSE(m->bin_independent());
  EXPECT_TRUE(m->allow_negative_param());
  EXPECT_FALSE(m->is_linear());
  ASSERT_EQ(m->npoi(), 2 * 6);
  EXPECT_EQ(m->npou(), 0);
  const auto names = m->names();
  EXPECT_EQ(names[0], "norm_nonprompt_pt0_eta0");
  EXPECT_EQ(names[1], "norm_nonprompt_pt0_eta1");
  EXPECT_EQ(names[5], "norm_nonprompt_pt2_eta1");
  EXPECT_EQ(names[6], "norm_ewk_pt0_eta0");
  EXPECT_EQ(m->default_values(), VectorXd::Ones(12));
  const VectorXd pi = point(12);
  MatrixXd r;
  m->bin_rates(pi, 0, in->nbinsfull, r);
  for (int64_t b = 0; b < 4; ++b) EXPECT_EQ(r.row(b), Eigen::RowVector3d::Ones()) << "channel pre";
  for (int64_t mt = 0; mt < 3; ++mt)
    for (int64_t iso = 0; iso < 2; ++iso)
      for (int64_t pt = 0; pt < 3; ++pt)
        for (int64_t eta = 0; eta < 2; ++eta) {
          const int64_t row = 4 + bin(mt, iso, pt, eta), cell = pt * 2 + eta;
          EXPECT_EQ(r(row, 0), 1.0);
          EXPECT_DOUBLE_EQ(r(row, 1), pi[cell] * pi[cell]);
          EXPECT_DOUBLE_EQ(r(row, 2), pi[6 + cell] * pi[6 + cell]);
        }
}

TEST(AxisNormModel, AllProcessesAndAxesOutOfChannelOrderAsRabbit) {
  auto in = two_channel_input();
  // "all": every process in input order. The axes given as eta,pt: rabbit names the parameters in that
  // order but places them row-major in the channel's order (pt, eta).
  auto m = model(*in, "AxisNormModel", {"ch", "all", "eta,pt"});
  ASSERT_EQ(m->npoi(), 3 * 6);
  const auto names = m->names();
  EXPECT_EQ(names[0], "norm_signal_eta0_pt0");
  EXPECT_EQ(names[1], "norm_signal_eta0_pt1");
  EXPECT_EQ(names[17], "norm_ewk_eta1_pt2");
  const VectorXd pi = point(18);
  MatrixXd r;
  m->bin_rates(pi, 4 + bin(1, 0, 0, 1), 4 + bin(1, 0, 0, 1) + 1, r);
  EXPECT_DOUBLE_EQ(r(0, 1), pi[6 + 1] * pi[6 + 1]);  // (pt 0, eta 1) is the 2nd cell in channel order
}

TEST(AxisNormModel, DerivativesMatchFiniteDifferences) {
  auto in = two_channel_input();
  auto m = model(*in, "AxisNormModel", {"ch", "nonprompt,ewk", "mt,eta"});
  const VectorXd pi = point(m->nparams());
  test::check_param_model_derivatives(*m, pi, 0, in->nbinsfull);
  test::check_param_model_derivatives(*m, pi, 3, 17);  // cuts both channels
  // composed with Mu (both pass their parameters through with --allowNegativeParam)
  auto c = make_param_model(
      *in, {ParamModelSpec{"Mu", {}}, ParamModelSpec{"AxisNormModel", {"ch", "signal,nonprompt", "pt"}}}, {},
      true);
  ASSERT_EQ(c->npoi(), 1 + 6);
  EXPECT_EQ(c->names()[1], "norm_signal_pt0");
  test::check_param_model_derivatives(*c, point(c->nparams()), 2, in->nbinsfull);
}

TEST(AxisNormModel, ExpectSignalSetsTheNorm) {
  auto in = two_channel_input();
  auto m = model(*in, "AxisNormModel", {"ch", "nonprompt", "pt"}, {{"norm_nonprompt_pt1", 4.0}});
  EXPECT_EQ(m->default_values(), (VectorXd(3) << 1.0, 2.0, 1.0).finished());
  EXPECT_EQ(error_of([&] {
              model(*in, "AxisNormModel", {"ch", "nonprompt", "pt"}, {{"sig", 2.0}});
            }),
            "--expectSignal: 'sig' is not a parameter of param model AxisNormModel (its parameters: "
            "[norm_nonprompt_pt0, norm_nonprompt_pt1, norm_nonprompt_pt2])");
  EXPECT_EQ(error_of([&] {
              model(*in, "AxisNormModel", {"ch", "nonprompt", "pt"}, {{"norm_nonprompt_pt0", -1.0}});
            }),
            "--expectSignal norm_nonprompt_pt0 -1: an AxisNormModel norm cannot be negative");
}

TEST(AxisNormModel, BadArgumentsAreOneLineOptionErrors) {
  auto in = two_channel_input();
  auto err = [&](const std::vector<std::string>& args) {
    return error_of([&] { model(*in, "AxisNormModel", args); });
  };
  EXPECT_EQ(err({"ch", "all"}),
            "--paramModel AxisNormModel: expected exactly 3 arguments (CHANNEL PROCS AXES; PROCS 'all' or a "
            "comma list, AXES a comma list), got 2");
  EXPECT_EQ(err({"nope", "all", "pt"}),
            "--paramModel AxisNormModel: channel 'nope' not found; channels: [pre, ch]");
  EXPECT_EQ(err({"ch", "ewk,qcd", "pt"}),
            "--paramModel AxisNormModel: process 'qcd' not found; processes: [signal, nonprompt, ewk]");
  EXPECT_EQ(err({"ch", "ewk,ewk", "pt"}),
            "--paramModel AxisNormModel: process 'ewk' is listed more than once");
  EXPECT_EQ(err({"ch", "ewk", "pt,phi"}),
            "--paramModel AxisNormModel: axis 'phi' not found in channel 'ch'; axes: [mt, relIso, pt, eta]");
  EXPECT_EQ(err({"ch", "ewk", "pt,pt"}), "--paramModel AxisNormModel: axis 'pt' is listed more than once");
  // Mu squares its POI without --allowNegativeParam, the Axis models never do: the composite refuses.
  EXPECT_NE(error_of([&] {
              make_param_model(
                  *in, {ParamModelSpec{"Mu", {}}, ParamModelSpec{"AxisNormModel", {"ch", "ewk", "pt"}}}, {},
                  false);
            }).find("disagree on --allowNegativeParam"),
            std::string::npos);
  in->channels[1].flow = true;
  EXPECT_EQ(err({"ch", "ewk", "pt"}),
            "--paramModel AxisNormModel: channel 'ch' has flow bins, which the Axis models do not address");
}

TEST(AxisExpModel, NamesLayoutAndRates) {
  auto in = two_channel_input();
  // shape axis pt (centres 30, 40, 50: x = 0, 1/2, 1), amplitudes per (mt, eta), slopes per eta
  auto m = model(*in, "AxisExpModel", {"ch", "nonprompt,ewk", "pt", "mt,eta", "eta"});
  EXPECT_TRUE(param_model_depends_on_bin("AxisExpModel"));
  EXPECT_FALSE(m->bin_independent());
  EXPECT_TRUE(m->allow_negative_param());
  ASSERT_EQ(m->npoi(), 2 * (6 + 2));
  const auto names = m->names();
  EXPECT_EQ(names[0], "lnAmpl_nonprompt_mt0_eta0");
  EXPECT_EQ(names[5], "lnAmpl_nonprompt_mt2_eta1");
  EXPECT_EQ(names[6], "slope_nonprompt_eta0");
  EXPECT_EQ(names[7], "slope_nonprompt_eta1");
  EXPECT_EQ(names[8], "lnAmpl_ewk_mt0_eta0");
  EXPECT_EQ(names[15], "slope_ewk_eta1");
  EXPECT_EQ(m->default_values(), VectorXd::Zero(16));
  const VectorXd pi = point(16) - VectorXd::Constant(16, 0.8);
  MatrixXd r;
  m->bin_rates(pi, 0, in->nbinsfull, r);
  for (int64_t b = 0; b < 4; ++b) EXPECT_EQ(r.row(b), Eigen::RowVector3d::Ones()) << "channel pre";
  const double x[] = {0.0, 0.5, 1.0};
  for (int64_t mt = 0; mt < 3; ++mt)
    for (int64_t iso = 0; iso < 2; ++iso)
      for (int64_t pt = 0; pt < 3; ++pt)
        for (int64_t eta = 0; eta < 2; ++eta) {
          const int64_t row = 4 + bin(mt, iso, pt, eta), cell = mt * 2 + eta;
          EXPECT_EQ(r(row, 0), 1.0);
          EXPECT_DOUBLE_EQ(r(row, 1), std::exp(pi[cell] + pi[6 + eta] * x[pt]));
          EXPECT_DOUBLE_EQ(r(row, 2), std::exp(pi[8 + cell] + pi[14 + eta] * x[pt]));
        }
}

TEST(AxisExpModel, CentresInFloat32AndDerivatives) {
  auto in = two_channel_input();
  // pt edges 25, 35.1, 45.3, 55: rabbit's float32 centres and division, not the double ones
  in->channels[1].axes[2].edges = {25.0, 35.1, 45.3, 55.0};
  auto m = model(*in, "AxisExpModel", {"ch", "all", "pt", "relIso,mt"});  // slopes per cell
  ASSERT_EQ(m->npoi(), 3 * (6 + 6));
  EXPECT_EQ(m->names()[6], "slope_signal_relIso0_mt0");
  VectorXd pi = VectorXd::Zero(36);
  pi[6] = 1.0;  // slope of the signal's cell (mt 0, relIso 0)
  MatrixXd r;
  m->bin_rates(pi, 4 + bin(0, 0, 1, 0), 4 + bin(0, 0, 1, 0) + 1, r);
  const float c0 = static_cast<float>(0.5 * (25.0 + 35.1)), c1 = static_cast<float>(0.5 * (35.1 + 45.3)),
              c2 = static_cast<float>(0.5 * (45.3 + 55.0));
  const float x1 = (c1 - c0) / (c2 - c0);
  EXPECT_EQ(r(0, 0), std::exp(static_cast<double>(x1)));
  EXPECT_NE(static_cast<double>(x1),
            (0.5 * (35.1 + 45.3) - 0.5 * (25.0 + 35.1)) / (0.5 * (45.3 + 55.0) - 0.5 * (25.0 + 35.1)));
  test::check_param_model_derivatives(*m, 0.5 * point(36), 0, in->nbinsfull);
  test::check_param_model_derivatives(*m, 0.5 * point(36), 9, 23);
}

TEST(AxisExpModel, BadArgumentsAreOneLineOptionErrors) {
  auto in = two_channel_input();
  auto err = [&](const std::vector<std::string>& args) {
    return error_of([&] { model(*in, "AxisExpModel", args); });
  };
  EXPECT_EQ(err({"ch", "all", "pt"}),
            "--paramModel AxisExpModel: expected 4 or 5 arguments (CHANNEL PROCS SHAPE_AXIS CELL_AXES "
            "[SLOPE_AXES]; PROCS 'all' or a comma list, the axes comma lists), got 3");
  EXPECT_EQ(
      err({"ch", "ewk", "phi", "eta"}),
      "--paramModel AxisExpModel: shape axis 'phi' not found in channel 'ch'; axes: [mt, relIso, pt, eta]");
  EXPECT_EQ(err({"ch", "ewk", "pt,eta", "mt"}),
            "--paramModel AxisExpModel: the shape axis is one axis, got 'pt,eta'");
  EXPECT_EQ(err({"ch", "ewk", "pt", "eta,pt"}),
            "--paramModel AxisExpModel: axis 'pt' is both the shape axis and a cell axis");
  EXPECT_EQ(
      err({"ch", "ewk", "pt", "eta", "mt"}),
      "--paramModel AxisExpModel: slope axis 'mt' is not a cell axis (eta); slope axes are a subset of the "
      "cell axes");
  EXPECT_EQ(err({"ch", "qcd", "pt", "eta"}),
            "--paramModel AxisExpModel: process 'qcd' not found; processes: [signal, nonprompt, ewk]");
  in->channels[1].axes[2].edges.clear();
  in->channels[1].axes[2].kind = "category_int";
  EXPECT_EQ(
      err({"ch", "ewk", "pt", "eta"}),
      "--paramModel AxisExpModel: shape axis 'pt' of channel 'ch' has no bin edges (a category_int axis)");
}

double softplus(double u) {
  return std::log1p(std::exp(u));
}

TEST(AxisBernsteinModel, NamesLayoutRatesAndDerivatives) {
  auto in = two_channel_input();
  auto m = model(*in, "AxisBernsteinModel", {"ch", "ewk,nonprompt", "pt", "eta"});
  EXPECT_TRUE(param_model_depends_on_bin("AxisBernsteinModel"));
  EXPECT_TRUE(m->allow_negative_param());
  EXPECT_FALSE(m->is_linear());
  ASSERT_EQ(m->npoi(), 2 * 2 * 2);
  const auto names = m->names();
  EXPECT_EQ(names[0], "c0_ewk_eta0");
  EXPECT_EQ(names[1], "c0_ewk_eta1");
  EXPECT_EQ(names[2], "c1_ewk_eta0");
  EXPECT_EQ(names[7], "c1_nonprompt_eta1");
  const double u1 = std::log(std::exp(1.0) - 1.0);
  EXPECT_EQ(m->default_values(), VectorXd::Constant(8, u1));
  MatrixXd r;
  m->bin_rates(m->default_values(), 0, in->nbinsfull, r);
  EXPECT_LT((r - MatrixXd::Ones(r.rows(), 3)).cwiseAbs().maxCoeff(), 1e-15);  // flat unit rate at the start
  const VectorXd pi = point(8) - VectorXd::Constant(8, 1.0);
  m->bin_rates(pi, 0, in->nbinsfull, r);
  const double x[] = {0.0, 0.5, 1.0};
  for (int64_t mt = 0; mt < 3; ++mt)
    for (int64_t iso = 0; iso < 2; ++iso)
      for (int64_t pt = 0; pt < 3; ++pt)
        for (int64_t eta = 0; eta < 2; ++eta) {
          const int64_t row = 4 + bin(mt, iso, pt, eta);
          EXPECT_EQ(r(row, 0), 1.0);
          EXPECT_NEAR(r(row, 2), softplus(pi[eta]) * (1 - x[pt]) + softplus(pi[2 + eta]) * x[pt], 1e-15);
          EXPECT_NEAR(r(row, 1), softplus(pi[4 + eta]) * (1 - x[pt]) + softplus(pi[6 + eta]) * x[pt], 1e-15);
        }
  test::check_param_model_derivatives(*m, pi, 0, in->nbinsfull);
  test::check_param_model_derivatives(*m, 3.0 * pi, 5, 20);
  // a large parameter: softplus(u) = u + log1p(e^−u) without overflow
  VectorXd big = pi;
  big[0] = 800.0;
  m->bin_rates(big, 4, 5, r);
  EXPECT_DOUBLE_EQ(r(0, 2), 800.0);
}

TEST(AxisBernsteinModel, BadArgumentsAreOneLineOptionErrors) {
  auto in = two_channel_input();
  auto err = [&](const std::vector<std::string>& args) {
    return error_of([&] { model(*in, "AxisBernsteinModel", args); });
  };
  EXPECT_EQ(
      err({"ch", "ewk", "pt", "eta", "mt"}),
      "--paramModel AxisBernsteinModel: expected exactly 4 arguments (CHANNEL PROCS SHAPE_AXIS CELL_AXES; "
      "PROCS 'all' or a comma list, CELL_AXES a comma list), got 5");
  EXPECT_EQ(err({"ch", "ewk", "pt", "pt"}),
            "--paramModel AxisBernsteinModel: axis 'pt' is both the shape axis and a cell axis");
  EXPECT_EQ(err({"ch", "ewk", "pt", "eta,phi"}),
            "--paramModel AxisBernsteinModel: cell axis 'phi' not found in channel 'ch'; axes: [mt, relIso, "
            "pt, eta]");
  EXPECT_EQ(error_of([&] {
              model(*in, "AxisBernsteinModel", {"ch", "ewk", "pt", "eta"}, {{"c0_ewk_eta0", 2.0}});
            }),
            "--expectSignal c0_ewk_eta0: param model AxisBernsteinModel does not take --expectSignal (rabbit "
            "refuses it too)");
}

}  // namespace
}  // namespace rabbit
