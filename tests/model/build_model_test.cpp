// build_model on an in-memory FitInputData: names, defaults, constraints, freezing, BB type,
// blinding, option errors (docs/likelihood.md "Parameters and their layout", "Barlow–Beeston types and
// modes", docs/model.md "Entry point").
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "rabbit/core/error.hpp"
#include "rabbit/model/blinding.hpp"
#include "rabbit/model/model.hpp"
#include "rabbit/model/param_model.hpp"
#include "support/small_input.hpp"

namespace rabbit {
namespace {

std::string option_error(const std::shared_ptr<const FitInputData>& in, const ModelOptions& options) {
  try {
    build_model(in, options);
  } catch (const OptionError& e) {
    return e.what();
  }
  return "<no OptionError>";
}

TEST(BuildModel, NamesDefaultsAndConstraints) {
  ModelOptions options;
  options.expect_signal = {{"sig", 4.0}, {"sig2", 0.0}};
  options.set_constraint_minimum = {{"b", -0.5}};
  options.prefit_unconstrained_nuisance_uncertainty = 3.0;
  auto model = build_model(test::small_input(), options);
  const auto& ps = model->parameters;
  EXPECT_EQ(ps.names, (std::vector<std::string>{"sig", "sig2", "a", "noi", "b"}));
  EXPECT_EQ(ps.npoi, 2);
  EXPECT_EQ(ps.npou, 0);
  EXPECT_EQ(ps.nsyst, 3);
  EXPECT_TRUE(ps.squared_pois);
  Eigen::VectorXd expected(5);
  expected << 2.0, 0.0, 0.0, 0.0, -0.5;  // √μ⁰ for the POIs, θ⁰ for the systematics
  EXPECT_EQ(ps.x_default, expected);
  EXPECT_EQ(ps.x_param_default, Eigen::Vector2d(2.0, 0.0));
  EXPECT_EQ(ps.constraint_centres, expected);
  EXPECT_EQ(ps.constraint_centres_default, expected);
  Eigen::VectorXd cw(5);
  cw << 0.0, 0.0, 1.0, 0.0, 1.0;
  EXPECT_EQ(ps.constraint_weights, cw);
  Eigen::VectorXd var(5);
  var << 9.0, 9.0, 1.0, 9.0, 1.0;
  EXPECT_EQ(ps.prefit_variance, var);
  EXPECT_EQ(prefit_values(*model), expected);
  EXPECT_EQ(prefit_uncertainties(*model), var.cwiseSqrt());
  EXPECT_EQ(prefit_covariance(*model), Eigen::MatrixXd(var.asDiagonal()));
  EXPECT_EQ(ps.constraint_centre_variance(), cw);
  EXPECT_EQ(ps.frozen, std::vector<bool>(5, false));
  EXPECT_FALSE(ps.blinding_available);
  EXPECT_EQ(model->bb_type, BBType::gamma);
  // Effective defaults: ξ = T(x_default) gives back μ⁰.
  EXPECT_DOUBLE_EQ(ps.effective(ps.x_default)[0], 4.0);
}

TEST(BuildModel, AllowNegativeParamStoresMuDirectly) {
  ModelOptions options;
  options.allow_negative_param = true;
  options.expect_signal = {{"sig", -2.0}};
  auto model = build_model(test::small_input(), options);
  EXPECT_FALSE(model->parameters.squared_pois);
  EXPECT_EQ(model->parameters.x_default[0], -2.0);
  options.allow_negative_param = false;
  EXPECT_EQ(option_error(test::small_input(), options),
            "--expectSignal sig -2: a negative value needs --allowNegativeParam");
}

TEST(BuildModel, ExpectSignalAndConstraintMinimumErrors) {
  auto in = test::small_input();
  ModelOptions options;
  options.expect_signal = {{"bkg", 1.0}};
  EXPECT_EQ(option_error(in, options),
            "--expectSignal: 'bkg' is not a parameter of param model Mu (its parameters: [sig, sig2])");
  options = {};
  options.set_constraint_minimum = {{"c", 1.0}};
  EXPECT_EQ(option_error(in, options),
            "--setConstraintMinimum c: expected exactly one nuisance parameter of that name, found 0");
  options.set_constraint_minimum = {{"sig", 1.0}};
  EXPECT_EQ(option_error(in, options),
            "--setConstraintMinimum sig: expected exactly one nuisance parameter of that name, found 0 "
            "(param-model parameters cannot be set this way; use --expectSignal)");
  auto dup = test::small_input();
  dup->systs = {"a", "noi", "a"};
  options.set_constraint_minimum = {{"a", 1.0}};
  EXPECT_EQ(option_error(dup, options),
            "--setConstraintMinimum a: expected exactly one nuisance parameter of that name, found 2");
}

TEST(BuildModel, FreezeByNameAndRegex) {
  ModelOptions options;
  options.freeze_parameters = {"sig2", "[ab]"};
  auto model = build_model(test::small_input(), options);
  EXPECT_EQ(model->parameters.frozen, (std::vector<bool>{false, true, true, false, true}));
  Eigen::VectorXd xi, d1, d2;
  model->parameters.transform(model->parameters.x_default, xi, d1, d2);
  EXPECT_EQ(d1[1], 0.0);
  EXPECT_EQ(d1[2], 0.0);
  EXPECT_EQ(d1[3], 1.0);
  // An expression that matches nothing is not an error (rabbit freezes nothing for it).
  options.freeze_parameters = {"nothing.*"};
  EXPECT_EQ(build_model(test::small_input(), options)->parameters.frozen_indices().size(), 0u);
  options.freeze_parameters = {"(unclosed"};
  EXPECT_NE(option_error(test::small_input(), options).find("--freezeParameters: '(unclosed'"),
            std::string::npos);
}

TEST(BuildModel, BinByBinTypeResolution) {
  auto in = test::small_input();
  ModelOptions options;
  EXPECT_EQ(build_model(in, options)->bb_type, BBType::gamma);
  options.bb_mode = BBMode::full;
  EXPECT_EQ(build_model(in, options)->bb_type, BBType::normal_multiplicative);
  options.bb_type = BBType::normal_additive;
  EXPECT_EQ(build_model(in, options)->bb_type, BBType::normal_additive);
  in->data_cov_inv = Eigen::MatrixXd::Identity(3, 3);
  options = {};
  options.likelihood = DataLikelihood::covariance;
  EXPECT_EQ(build_model(in, options)->bb_type, BBType::normal_additive);
  options.bb_type = BBType::gamma;
  EXPECT_EQ(option_error(in, options),
            "--covarianceFit with --binByBinStatType gamma: only normal-additive or normal-multiplicative "
            "are allowed "
            "(or --noBinByBinStat)");
  options.bin_by_bin_stat = false;
  EXPECT_NO_THROW(build_model(in, options));
  EXPECT_EQ(to_string(BBType::normal_multiplicative), "normal-multiplicative");
}

TEST(BuildModel, CovarianceFitFallsBackToInverseVariances) {
  auto in = test::small_input(false);
  in->data_var = Eigen::Vector3d(2.0, 4.0, 0.5);
  ModelOptions options;
  options.likelihood = DataLikelihood::covariance;
  auto model = build_model(in, options);
  ASSERT_TRUE(model->input->data_cov_inv.has_value());
  EXPECT_EQ(model->input->data_cov_inv->diagonal(), Eigen::Vector3d(0.5, 0.25, 2.0));
  EXPECT_FALSE(in->data_cov_inv.has_value());  // the caller's input is untouched
  in->data_var.reset();
  in->data_obs = Eigen::Vector3d(1.0, 0.0, 2.0);
  EXPECT_NE(option_error(in, options).find("--covarianceFit: small.hdf5 has no hdata_cov_inv"),
            std::string::npos);
}

TEST(BuildModel, ChisqNeedsPositiveCounts) {
  ModelOptions options;
  options.likelihood = DataLikelihood::chisq;
  auto model = build_model(test::small_input(), options);
  try {
    check_observed(*model, model->input->data_obs, "data_obs");
    FAIL();
  } catch (const OptionError& e) {
    EXPECT_EQ(std::string(e.what()),
              "--chisqFit requires all observed counts to be > 0, but data_obs has 0 in bin 1");
  }
  EXPECT_NO_THROW(check_observed(*model, Eigen::Vector3d(1, 2, 3), "toy 1"));
  EXPECT_THROW(check_observed(*model, Eigen::Vector2d(1, 2), "toy 1"), Error);
  options.likelihood = DataLikelihood::poisson;
  EXPECT_NO_THROW(check_observed(*build_model(test::small_input(), options), Eigen::Vector3d(0, 0, 0), "x"));
}

TEST(BuildModel, BlindingOffsets) {
  ModelOptions options;
  options.blinding_active = true;
  auto model = build_model(test::small_input(true), options);
  const auto& ps = model->parameters;
  EXPECT_TRUE(ps.blinding_available);
  EXPECT_FALSE(ps.blinding_enabled);
  // Integer data: seeds get "_data". POIs sig, sig2 multiplicative, NOI "noi" additive.
  EXPECT_EQ(ps.poi_blinding_scale[0], std::exp(0.48322711247430955));
  EXPECT_EQ(ps.poi_blinding_scale[1], std::exp(blinding_value("sig2_data")));
  EXPECT_EQ(ps.syst_blinding_offset, Eigen::Vector3d(0.0, blinding_value("noi_data"), 0.0));
  // Non-integer data: plain names.
  auto plain = build_model(test::small_input(false), options);
  EXPECT_EQ(plain->parameters.poi_blinding_scale[0], std::exp(3.131282636264015));
  // Offsets enter ξ only while enabled.
  Eigen::VectorXd x = ps.x_default;
  x[3] = 0.25;
  EXPECT_EQ(ps.effective(x)[0], 1.0);
  model->parameters.blinding_enabled = true;
  EXPECT_EQ(model->parameters.effective(x)[0], std::exp(0.48322711247430955));
  EXPECT_EQ(model->parameters.effective(x)[3], 0.25 + blinding_value("noi_data"));
  model->parameters.reset_state();
  EXPECT_FALSE(model->parameters.blinding_enabled);
}

TEST(BuildModel, UnblindAndBlindingGroups) {
  ModelOptions options;
  options.blinding_active = true;
  options.unblind = {"^sig$"};
  auto model = build_model(test::small_input(), options);
  EXPECT_EQ(model->parameters.poi_blinding_scale[0], 1.0);
  EXPECT_NE(model->parameters.poi_blinding_scale[1], 1.0);
  options.unblind = {".*"};  // bare --unblind
  model = build_model(test::small_input(), options);
  EXPECT_EQ(model->parameters.poi_blinding_scale, Eigen::Vector2d::Ones());
  EXPECT_EQ(model->parameters.syst_blinding_offset, Eigen::Vector3d::Zero());
  // A group shares the offset seeded by the expression string; the first matching group wins.
  options.unblind = {};
  options.blinding_groups = {"sig.*", "sig2"};
  model = build_model(test::small_input(), options);
  const double shared = std::exp(blinding_value("sig.*_data"));
  EXPECT_EQ(model->parameters.poi_blinding_scale, Eigen::Vector2d(shared, shared));
  options.unblind = {"sig2"};
  EXPECT_EQ(
      option_error(test::small_input(), options),
      "--unblind and --blindingGroup both match: sig2 (group 'sig.*'); refusing an ambiguous (un)blinding, "
      "tighten the expressions");
  auto bad = test::small_input();
  bad->noiidxs = {5};
  options.unblind = {};
  EXPECT_THROW(build_model(bad, options), InputError);
  // Without blinding_active nothing is computed, whatever --unblind says.
  options.blinding_active = false;
  model = build_model(test::small_input(), options);
  EXPECT_EQ(model->parameters.poi_blinding_scale, Eigen::Vector2d::Ones());
}

TEST(BuildModel, CompositeLayoutAndMixtureDefaults) {
  ModelOptions options;
  options.param_models = {ParamModelSpec{"Mixture", {"sig", "bkg"}}, ParamModelSpec{"Ones", {}}};
  options.expect_signal = {{"sig_bkg_mixing", 0.25}};
  auto model = build_model(test::small_input(), options);
  EXPECT_EQ(model->parameters.names, (std::vector<std::string>{"sig_bkg_mixing", "a", "noi", "b"}));
  EXPECT_EQ(model->parameters.x_default[0], 0.5);
  EXPECT_EQ(model->param_model->npoi(), 1);
}

}  // namespace
}  // namespace rabbit

namespace rabbit {
namespace {

/// A param model with a POI and a POU that declares Gaussian priors (none of the built-ins does).
class PriorModel final : public ParamModel {
 public:
  PriorModel(Eigen::Vector2d sigmas, Eigen::Vector2d means, bool allow_negative)
      : sigmas_(sigmas), means_(means), allow_negative_(allow_negative) {}
  int64_t npoi() const override { return 1; }
  int64_t npou() const override { return 1; }
  std::vector<std::string> names() const override { return {"p", "q"}; }
  Eigen::VectorXd default_values() const override { return Eigen::Vector2d(4.0, 1.5); }
  void rates(const Eigen::VectorXd& pi, Eigen::VectorXd& r, Eigen::MatrixXd* jac) const override {
    r = Eigen::Vector4d(pi[0], pi[1], 1.0, 1.0);
    if (jac) {
      jac->setZero(4, 2);
      (*jac)(0, 0) = (*jac)(1, 1) = 1.0;
    }
  }
  Eigen::MatrixXd rate_curvature(const Eigen::VectorXd&, const Eigen::VectorXd&) const override {
    return Eigen::MatrixXd::Zero(2, 2);
  }
  bool allow_negative_param() const override { return allow_negative_; }
  Eigen::VectorXd prior_sigmas() const override { return sigmas_; }
  Eigen::VectorXd prior_means() const override { return means_; }

 private:
  Eigen::Vector2d sigmas_, means_;
  bool allow_negative_;
};

TEST(BuildModel, ParamModelPriorsBecomeConstraints) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  ModelOptions options;
  options.prefit_unconstrained_nuisance_uncertainty = 2.0;
  auto model =
      build_model(test::small_input(), options,
                  std::make_shared<PriorModel>(Eigen::Vector2d(nan, 0.5), Eigen::Vector2d(nan, 2.0), false));
  const auto& ps = model->parameters;
  EXPECT_EQ(ps.names, (std::vector<std::string>{"p", "q", "a", "noi", "b"}));
  EXPECT_EQ(ps.npoi, 1);
  EXPECT_EQ(ps.npou, 1);
  Eigen::VectorXd cw(5), x0(5), var(5);
  cw << 0.0, 4.0, 1.0, 0.0, 1.0;
  x0 << 2.0, 2.0, 0.0, 0.0, 0.0;  // √4 for the squared POI; the prior mean for q
  var << 4.0, 0.25, 1.0, 4.0, 1.0;
  EXPECT_EQ(ps.constraint_weights, cw);
  EXPECT_EQ(ps.constraint_centres_default, x0);
  EXPECT_EQ(ps.x_default, x0);                               // start at the prior mean
  EXPECT_EQ(ps.x_param_default, Eigen::Vector2d(2.0, 1.5));  // but ρ uses the stored defaults
  EXPECT_EQ(ps.prefit_variance, var);
  // The prior enters the constraint term: ½·4·(ξ_q − 2)².
  Eigen::VectorXd xi = x0;
  xi[1] = 3.0;
  EXPECT_DOUBLE_EQ(model->global_terms->xi_terms(xi, nullptr, nullptr, nullptr, nullptr), 2.0);

  // A prior on a squared POI is refused; with --allowNegativeParam it is accepted.
  auto poi_prior = std::make_shared<PriorModel>(Eigen::Vector2d(0.1, nan), Eigen::Vector2d(nan, nan), false);
  try {
    build_model(test::small_input(), options, poi_prior);
    FAIL();
  } catch (const OptionError& e) {
    EXPECT_EQ(std::string(e.what()),
              "Gaussian prior on POI p requires --allowNegativeParam (the stored parameter is sqrt(mu))");
  }
  auto linear =
      build_model(test::small_input(), options,
                  std::make_shared<PriorModel>(Eigen::Vector2d(0.1, nan), Eigen::Vector2d(nan, nan), true));
  EXPECT_DOUBLE_EQ(linear->parameters.constraint_weights[0], 100.0);
  EXPECT_EQ(linear->parameters.constraint_centres_default[0], 4.0);  // mean defaults to the stored default
}

}  // namespace
}  // namespace rabbit

namespace rabbit {
namespace {
TEST(BuildModel, BetaVariationsAreAcceptedInEveryBBMode) {
  // hbetavariations act in the backends' full evaluations (BB full, gamma / normal-multiplicative)
  auto in = test::small_input();
  in->filename = "bv.hdf5";
  in->betavariations = std::vector<double>(static_cast<size_t>(in->nbinsfull * in->nbins * in->nproc), 0.1);
  ModelOptions options;
  EXPECT_NO_THROW(build_model(in, options));
  options.bb_mode = BBMode::full;
  for (BBType t : {BBType::gamma, BBType::normal_multiplicative, BBType::normal_additive}) {
    options.bb_type = t;
    EXPECT_EQ(build_model(in, options)->bb_type, t);
  }
}
}  // namespace
}  // namespace rabbit
