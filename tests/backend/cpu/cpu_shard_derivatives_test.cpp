// Gradient, HVP and Hessian of the CPU shard against finite differences in many configurations
// (docs/likelihood.md "Tests"), plus dense/sparse and thread-count agreement.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "rabbit/backend/cpu/cpu_shard.hpp"
#include "rabbit/core/error.hpp"
#include "rabbit/model/model_options.hpp"
#include "rabbit/model/regularizer.hpp"
#include "rabbit/postfit/regularizer_mapping.hpp"
#include "support/finite_differences.hpp"
#include "support/shard_test_helpers.hpp"

namespace rabbit::testing {
namespace {

using Eigen::MatrixXd;
using Eigen::VectorXd;

std::string describe(const ShardConfig& c) {
  const char* lik[] = {"poisson", "chisq", "covariance"};
  const char* type[] = {"auto", "gamma", "nadd", "nmult"};
  return fmt::format("{}_{}_{}_{}_{}_{}_{}{}{}", c.sparse ? "sparse" : "dense", c.symmetric ? "sym" : "asym",
                     c.lognormal ? "lognormal" : "normal", lik[static_cast<int>(c.likelihood)],
                     c.bb ? type[static_cast<int>(c.bb_type)] : "noBB",
                     c.bb_mode == BBMode::full ? "full" : "lite",
                     c.legacy_kstat ? "legacy" : (c.zero_variance_process ? "zv" : "nozv"),
                     c.mixture ? "_mixture" : "", c.square_poi ? "_sq" : "");
}

VectorXd point_for(const Model& m, const ShardConfig& c) {
  VectorXd xi = test_point(m);
  if (c.mixture) xi[0] = 0.6;
  return xi;
}

double rel_err(double a, double b, double scale) {
  return std::abs(a - b) / std::max({std::abs(b), scale, 1e-3});
}

void check_model(std::shared_ptr<Model> model, const VectorXd& xi);

void check_derivatives(const ShardConfig& c) {
  SCOPED_TRACE(describe(c));
  auto in = make_test_input(c);
  auto model = make_test_model(in, c);
  check_model(model, point_for(*model, c));
}

void check_model(std::shared_ptr<Model> model, const VectorXd& xi) {
  const auto& in = model->input;
  auto shard = make_cpu_shard(model, 0, in->nbins, 2);
  const int64_t n = xi.size();

  VectorXd g;
  const double f = shard->value_grad(xi, g);
  ASSERT_TRUE(std::isfinite(f));
  EXPECT_NEAR(shard->value(xi), f, 1e-12 * std::abs(f));
  ASSERT_EQ(g.size(), n);

  // gradient vs central differences of the value
  const double gscale = g.cwiseAbs().maxCoeff();
  const auto value = [&](const VectorXd& x) { return shard->value(x); };
  const auto grad = [&](const VectorXd& x) {
    VectorXd gx;
    shard->value_grad(x, gx);
    return gx;
  };
  for (int64_t i = 0; i < n; ++i) {
    const double fd = test::central_partial(value, xi, i, 1e-5, test::FdStep::relative);
    EXPECT_LT(rel_err(g[i], fd, 1e-3 * gscale), 2e-6) << "grad " << i << " analytic " << g[i] << " fd " << fd;
  }

  // Hessian: symmetric, equal to HVP columns, equal to differences of the gradient
  VectorXd gh;
  MatrixXd H;
  const double fh = shard->value_grad_hess(xi, gh, H, true);
  EXPECT_NEAR(fh, f, 1e-12 * std::abs(f));
  EXPECT_LT((gh - g).cwiseAbs().maxCoeff(), 1e-12 * std::max(1.0, gscale));
  ASSERT_EQ(H.rows(), n);
  const double hscale = H.cwiseAbs().maxCoeff();
  EXPECT_LT((H - H.transpose()).cwiseAbs().maxCoeff(), 1e-12 * hscale);
  VectorXd gv;
  MatrixXd HV;
  shard->value_grad_hvp(xi, MatrixXd::Identity(n, n), gv, HV);
  EXPECT_LT((HV - H).cwiseAbs().maxCoeff(), 1e-11 * hscale);
  MatrixXd Vr = MatrixXd::Random(n, 3);
  shard->value_grad_hvp(xi, Vr, gv, HV);
  EXPECT_LT((HV - H * Vr).cwiseAbs().maxCoeff(), 1e-11 * hscale * 3);
  for (int64_t i = 0; i < n; ++i) {
    const VectorXd fd = test::central_partial(grad, xi, i, 1e-5, test::FdStep::relative);
    for (int64_t j = 0; j < n; ++j)
      EXPECT_LT(rel_err(H(j, i), fd[j], 1e-3 * hscale), 2e-6)
          << "hess " << j << "," << i << " analytic " << H(j, i) << " fd " << fd[j];
  }

  // profile = false: β held at β̂ — the Hessian of the NLL with β fixed. Check symmetric and that its
  // gradient equals the profiled one (envelope) in regular configurations.
  VectorXd g0;
  MatrixXd H0;
  shard->value_grad_hess(xi, g0, H0, false);
  EXPECT_LT((H0 - H0.transpose()).cwiseAbs().maxCoeff(), 1e-12 * std::max(1.0, H0.cwiseAbs().maxCoeff()));

  // thread count does not change results beyond rounding; same thread count is bit-reproducible
  auto shard1 = make_cpu_shard(model, 0, in->nbins, 1);
  VectorXd g1;
  const double f1 = shard1->value_grad(xi, g1);
  EXPECT_NEAR(f1, f, 1e-12 * std::abs(f));
  EXPECT_LT((g1 - g).cwiseAbs().maxCoeff(), 1e-12 * std::max(1.0, gscale));
  VectorXd g2;
  EXPECT_EQ(shard->value_grad(xi, g2), f);
  EXPECT_EQ(g2, g);
}

std::vector<ShardConfig> all_configs() {
  std::vector<ShardConfig> out;
  // no BB × {asym, sym} × {log_normal, normal} × {Poisson, χ², covariance}
  for (bool sym : {false, true})
    for (bool ln : {true, false})
      for (auto lik : {DataLikelihood::poisson, DataLikelihood::chisq, DataLikelihood::covariance}) {
        ShardConfig c;
        c.symmetric = sym;
        c.lognormal = ln;
        c.likelihood = lik;
        c.bb = false;
        out.push_back(c);
      }
  // BB {lite, full} × {gamma, nmult, nadd} × {Poisson, χ²}, with and without zero-variance processes
  for (auto mode : {BBMode::lite, BBMode::full})
    for (auto type : {BBType::gamma, BBType::normal_multiplicative, BBType::normal_additive})
      for (auto lik : {DataLikelihood::poisson, DataLikelihood::chisq})
        for (bool zv : {true, false}) {
          ShardConfig c;
          c.bb_mode = mode;
          c.bb_type = type;
          c.likelihood = lik;
          c.zero_variance_process = zv;
          out.push_back(c);
        }
  // covariance with the normal types (normal-multiplicative lite: the closed form is a true profile only
  // without BB-masked bins, docs/likelihood.md "BB derivative corner cases")
  for (auto mode : {BBMode::lite, BBMode::full}) {
    ShardConfig c;
    c.likelihood = DataLikelihood::covariance;
    c.bb_type = BBType::normal_additive;
    c.bb_mode = mode;
    c.zero_variance_process = false;
    out.push_back(c);
    c.bb_type = BBType::normal_multiplicative;
    c.bb_masked_bin = mode == BBMode::full;
    out.push_back(c);
    c.zero_variance_process = true;
    out.push_back(c);
    c.sparse = true;
    out.push_back(c);
    // lite with a BB-masked bin: rabbit's solve treats it as free (docs/likelihood.md "BB derivative corner
    // cases" item 2), differentiated literally
    c.bb_masked_bin = true;
    out.push_back(c);
    c.sparse = false;
    c.zero_variance_process = false;
    out.push_back(c);
  }
  // sparse, symmetric, normal type with BB; Mixture; non-linear param model; --minBBKstat
  for (auto type : {BBType::gamma, BBType::normal_multiplicative, BBType::normal_additive})
    for (auto mode : {BBMode::lite, BBMode::full}) {
      ShardConfig c;
      c.sparse = true;
      c.bb_type = type;
      c.bb_mode = mode;
      out.push_back(c);
      c.sparse = false;
      c.lognormal = false;
      out.push_back(c);
      c.symmetric = true;
      out.push_back(c);
    }
  {
    ShardConfig c;
    c.mixture = true;
    out.push_back(c);
    c.bb_mode = BBMode::full;
    c.bb_type = BBType::normal_multiplicative;
    out.push_back(c);
  }
  {
    ShardConfig c;
    c.square_poi = true;
    out.push_back(c);
    c.lognormal = false;
    out.push_back(c);
  }
  for (auto type : {BBType::gamma, BBType::normal_multiplicative, BBType::normal_additive})
    for (auto lik : {DataLikelihood::poisson, DataLikelihood::chisq}) {
      ShardConfig c;
      c.legacy_kstat = true;
      c.bb_type = type;
      c.likelihood = lik;
      out.push_back(c);
    }
  {
    ShardConfig c;
    c.min_bb_kstat = 60.0;
    out.push_back(c);
    c.bb_mode = BBMode::full;
    out.push_back(c);
  }
  return out;
}

class ShardDerivatives : public ::testing::TestWithParam<ShardConfig> {};

TEST_P(ShardDerivatives, MatchFiniteDifferences) {
  check_derivatives(GetParam());
}

INSTANTIATE_TEST_SUITE_P(AllConfigurations, ShardDerivatives, ::testing::ValuesIn(all_configs()),
                         [](const ::testing::TestParamInfo<ShardConfig>& info) {
                           return fmt::format("{}_{}", info.index, describe(info.param));
                         });

// SVD regulariser (docs/model.md "The regularisation term") on the masked channel (with BB) and on the
// observed channel (no BB).
TEST(CpuShard, SvdRegularizerDerivatives) {
  // also a covariance fit with BB (normal-multiplicative), whose β̂ is coupled over the observed bins
  for (auto lik : {DataLikelihood::poisson, DataLikelihood::covariance})
    for (bool bb : {true, false}) {
      for (auto mode : {BBMode::lite, BBMode::full}) {
        SCOPED_TRACE(::testing::Message()
                     << "likelihood " << int(lik) << " bb " << bb << " mode " << int(mode));
        ShardConfig c;
        c.likelihood = lik;
        if (lik == DataLikelihood::covariance) c.bb_type = BBType::normal_multiplicative;
        c.bb = bb;
        c.bb_mode = mode;
        auto in = make_test_input(c);
        set_obs_and_masked_channels(*in);
        auto model = make_test_model(in, c);
        model->options.regularization_strength = 0.4;
        RegularizationSpec spec;
        spec.name = "SVD";
        spec.mapping = {"Select", bb ? "masked" : "obs"};
        model->regularizers = make_regularizers(*in, {spec}, postfit::regularizer_mapping);
        // arm at the start point with β = β⁰ (the prediction the fit driver passes)
        CpuShardEvaluator probe(model, 0, in->nbins, 1);
        const VectorXd x0 = test_point(*model) * 0.5;
        VectorXd nu0;
        probe.expected_yields(x0, 0, in->nbinsfull, CpuShardEvaluator::BetaMode::stored, &nu0, nullptr);
        model->regularizers[0]->set_expectations(x0, &nu0);
        const VectorXd xi = test_point(*model);
        // the penalty is really there
        ShardConfig plain = c;
        auto unreg = make_test_model(in, plain);
        CpuShardEvaluator a(model, 0, in->nbins, 1), b(unreg, 0, in->nbins, 1);
        EXPECT_GT(a.value(xi) - b.value(xi), 1e-6);
        check_model(model, xi);
      }
    }
}

TEST(CpuShard, SvdRegularizerOnObservedChannelWithBBIsRefused) {
  ShardConfig c;
  auto in = make_test_input(c);
  set_obs_and_masked_channels(*in);
  auto model = make_test_model(in, c);
  RegularizationSpec spec;
  spec.name = "SVD";
  spec.mapping = {"Select", "obs"};
  model->regularizers = make_regularizers(*in, {spec}, postfit::regularizer_mapping);
  EXPECT_THROW(CpuShardEvaluator(model, 0, in->nbins, 1), OptionError);
}

// A covariance fit's β̂ is coupled over the observed bins and solved by the evaluation that adds the
// penalty, so masked yields that follow β̂ through beta variations cannot enter it (src/backend/cpu/
// observable_regularizer.cpp).
TEST(CpuShard, SvdRegularizerInCovarianceFitWithBetaVariationsIsRefused) {
  ShardConfig c;
  c.likelihood = DataLikelihood::covariance;
  c.bb_type = BBType::normal_multiplicative;
  c.bb_mode = BBMode::full;
  auto in = make_test_input(c);
  set_obs_and_masked_channels(*in);
  // the last masked bin becomes its own channel and receives the beta variation; the regularised
  // channel does not (that case has its own refusal)
  ASSERT_GE(in->nbinsfull - in->nbins, 2);
  ChannelInfo last = in->channels[1];
  last.name = "masked_last";
  last.start = in->nbinsfull - 1;
  last.axes[0].size = 1;
  in->channels[1].stop = last.start;
  in->channels[1].axes[0].size = last.start - in->nbins;
  in->channels.push_back(last);
  std::vector<double> bv(in->nbinsfull * in->nbins * in->nproc, 0.0);
  const int64_t b = in->nbinsfull - 1;
  bv[(b * in->nbins + 0) * in->nproc + 0] = 0.1 * in->norm[b * in->nproc];  // last bin ← bin 0
  in->betavariations = bv;
  auto model = make_test_model(in, c);
  RegularizationSpec spec;
  spec.name = "SVD";
  spec.mapping = {"Select", "masked"};
  model->regularizers = make_regularizers(*in, {spec}, postfit::regularizer_mapping);
  try {
    CpuShardEvaluator shard(model, 0, in->nbins, 1);
    ADD_FAILURE() << "no error";
  } catch (const OptionError& e) {
    EXPECT_NE(std::string(e.what()).find("--covarianceFit, bin-by-bin statistics and beta variations"),
              std::string::npos)
        << e.what();
  }
  // without the beta variations the same fit is accepted
  in->betavariations.reset();
  auto plain = make_test_model(in, c);
  plain->regularizers = make_regularizers(*in, {spec}, postfit::regularizer_mapping);
  EXPECT_NO_THROW(CpuShardEvaluator(plain, 0, in->nbins, 1));
}

TEST(CpuShard, DenseAndSparseAgree) {
  for (auto mode : {BBMode::lite, BBMode::full})
    for (auto type : {BBType::gamma, BBType::normal_multiplicative, BBType::normal_additive}) {
      ShardConfig c;
      c.sparse = true;
      c.bb_mode = mode;
      c.bb_type = type;
      auto sp = make_test_input(c);
      auto de = densify(*sp);
      auto msp = make_test_model(sp, c);
      auto mde = make_test_model(de, c);
      auto ssp = make_cpu_shard(msp, 0, sp->nbins, 2);
      auto sde = make_cpu_shard(mde, 0, de->nbins, 2);
      const VectorXd xi = test_point(*msp);
      VectorXd g1, g2;
      MatrixXd H1, H2;
      const double f1 = ssp->value_grad_hess(xi, g1, H1, true);
      const double f2 = sde->value_grad_hess(xi, g2, H2, true);
      EXPECT_NEAR(f1, f2, 1e-12 * std::abs(f2));
      EXPECT_LT((g1 - g2).cwiseAbs().maxCoeff(), 1e-12 * std::max(1.0, g2.cwiseAbs().maxCoeff()));
      EXPECT_LT((H1 - H2).cwiseAbs().maxCoeff(), 1e-12 * H2.cwiseAbs().maxCoeff());
      EXPECT_LT((ssp->profiled_beta(xi) - sde->profiled_beta(xi)).cwiseAbs().maxCoeff(), 1e-12);
    }
}

TEST(CpuShard, ShardsTileTheBins) {
  ShardConfig c;
  auto in = make_test_input(c);
  auto model = make_test_model(in, c);
  auto whole = make_cpu_shard(model, 0, in->nbins, 1);
  auto a = make_cpu_shard(model, 0, 2, 1);
  auto b = make_cpu_shard(model, 2, in->nbins, 1);
  const VectorXd xi = test_point(*model);
  VectorXd gw, ga, gb;
  const double fw = whole->value_grad(xi, gw);
  const double fa = a->value_grad(xi, ga);
  const double fb = b->value_grad(xi, gb);
  EXPECT_NEAR(fa + fb, fw, 1e-12 * std::abs(fw));
  EXPECT_LT((ga + gb - gw).cwiseAbs().maxCoeff(), 1e-12 * gw.cwiseAbs().maxCoeff());
  VectorXd beta(in->nbins);
  beta << a->profiled_beta(xi), b->profiled_beta(xi);
  EXPECT_LT((beta - whole->profiled_beta(xi)).cwiseAbs().maxCoeff(), 1e-15);
}

TEST(CpuShard, CovarianceFitCannotBeSharded) {
  ShardConfig c;
  c.likelihood = DataLikelihood::covariance;
  c.bb = false;
  auto in = make_test_input(c);
  auto model = make_test_model(in, c);
  try {
    make_cpu_shard(model, 0, 3, 1);
    FAIL() << "expected OptionError";
  } catch (const OptionError& e) {
    EXPECT_STREQ(e.what(), "--covarianceFit cannot be sharded; run with one device");
  }
}

}  // namespace
}  // namespace rabbit::testing

namespace rabbit::testing {
namespace {
// Covariance fit, lite, at a negative signal strength: bin 2 has only the signal as active process
// (bkg1 absent, bkg2 without MC statistics), so A_2 < 0 and rabbit uses A' = 1 (docs/likelihood.md "BB
// derivative corner cases" items 1, 2): normal-multiplicative and normal-additive (ν_2 = ν⁰_2 + s β̂ A_2); the
// derivatives are those of the literal closed forms.
TEST(CpuShard, CovarianceLiteWithNegativeActiveSum) {
  for (BBType type : {BBType::normal_multiplicative, BBType::normal_additive}) {
    SCOPED_TRACE(::testing::Message() << "bb type " << int(type));
    ShardConfig c;
    c.likelihood = DataLikelihood::covariance;
    c.bb_type = type;
    c.zero_variance_process = true;
    auto in = make_test_input(c);
    auto model = make_test_model(in, c);
    VectorXd xi = test_point(*model);
    xi[0] = -0.3;
    check_model(model, xi);
  }
}

// Poisson, empty data bin (bin 3) with unit MC weights (make_unit_weight_empty_bin_input): at the
// nominal yields σ² = ν⁰ (normal-additive, β⁰ = 0) and k = A (normal-multiplicative, β⁰ = 1), the
// double root of rabbit's lite quadratic, where √(b² − 4ac) gave a NaN value (additive: b² − 4ac < 0
// by rounding) or a NaN gradient (multiplicative: the derivative of √ at 0). The lite n = 0 closed
// forms (bin_profile.hpp, factored roots) are finite there and rabbit's root on either side; gamma and
// full mode are checked on the same bin.
std::shared_ptr<Model> unit_weight_empty_bin_model(BBType type, BBMode mode) {
  ShardConfig c;
  c.bb_type = type;
  c.bb_mode = mode;
  c.zero_variance_process = false;
  return make_test_model(make_unit_weight_empty_bin_input(c), c);
}

TEST(CpuShard, EmptyDataBinAtTheLiteDoubleRoot) {
  for (BBMode mode : {BBMode::lite, BBMode::full})
    for (BBType type : {BBType::normal_additive, BBType::normal_multiplicative, BBType::gamma}) {
      SCOPED_TRACE(::testing::Message() << "mode " << int(mode) << " type " << int(type));
      auto model = unit_weight_empty_bin_model(type, mode);
      const int64_t nb = model->input->nbins;
      CpuShardEvaluator shard(model, 0, nb, 1);
      const VectorXd x0 = model->parameters.x_default;  // μ = 1, θ = 0: the nominal yields
      VectorXd nu0;
      shard.expected_yields(x0, 0, nb, CpuShardEvaluator::BetaMode::none, &nu0);
      ASSERT_EQ(nu0[3], 42.0);  // = σ² = k: the double root
      VectorXd g;
      MatrixXd H;
      const double f = shard.value_grad_hess(x0, g, H);
      ASSERT_TRUE(std::isfinite(f));
      ASSERT_TRUE(g.allFinite()) << g.transpose();
      ASSERT_TRUE(H.allFinite()) << H;
      EXPECT_LT((H - H.transpose()).cwiseAbs().maxCoeff(), 1e-12 * H.cwiseAbs().maxCoeff());
      // The profile is C¹ across the double root (its second derivative jumps): the gradient is the
      // difference quotient of the value.
      const double gscale = g.cwiseAbs().maxCoeff();
      const auto value = [&](const VectorXd& x) { return shard.value(x); };
      for (int64_t i = 0; i < x0.size(); ++i) {
        const double fd = test::central_partial(value, x0, i, 1e-6);
        EXPECT_LT(rel_err(g[i], fd, 1e-3 * gscale), 1e-5)
            << "grad " << i << " analytic " << g[i] << " fd " << fd;
      }
      // Either side of the double root (ν⁰ < σ² and ν⁰ > σ² in bin 3): derivatives vs differences,
      // and in lite mode β̂ of bin 3 is rabbit's "+" root.
      for (double mu : {0.8, 1.25}) {
        SCOPED_TRACE(::testing::Message() << "mu " << mu);
        VectorXd xi = x0;
        xi[0] = mu;
        const double th[] = {0.02, -0.03, 0.01, -0.02};
        for (int64_t s = 0; s < 4; ++s) xi[1 + s] = th[s];
        shard.expected_yields(xi, 0, nb, CpuShardEvaluator::BetaMode::none, &nu0);
        ASSERT_EQ(nu0[3] < 42.0, mu < 1.0) << nu0[3];
        check_model(model, xi);
        if (mode == BBMode::full) continue;
        const double n0 = nu0[3], k = shard.bb_kstat()[3], b0 = shard.beta_centres()[3], s = std::sqrt(42.0);
        double rabbit =
            0.0;  // rabbit's literal closed form (bbstat.py, lite, Poisson, nobs = 0, n_zero_var = 0)
        if (type == BBType::normal_additive)
          rabbit = cpu::plus_root(s, 42.0 + n0 - s * b0, s * n0 - n0 * b0);
        else if (type == BBType::normal_multiplicative)
          rabbit = cpu::plus_root(k * n0, n0 * n0 - k * b0 * n0, 0.0);
        else
          rabbit = cpu::plus_root(n0 * (n0 + k), n0 * (-b0 * k), 0.0);
        ASSERT_TRUE(std::isfinite(rabbit));
        EXPECT_NEAR(shard.profiled_beta(xi)[3], rabbit, 1e-10 * std::max(1.0, std::abs(rabbit)));
      }
    }
}

// gamma lite with β⁰ = 0 in the empty data bin (toys: kβ⁰ drawn 0): the quadratic's roots 0 and −Z/A
// meet (Z = 0), rabbit's √ at 0 again; β̂ = 0 with finite derivatives.
TEST(CpuShard, GammaLiteEmptyDataBinWithZeroCentre) {
  ShardConfig c;
  c.zero_variance_process = false;
  auto in = make_test_input(c);
  ASSERT_EQ(in->data_obs[3], 0.0);
  auto model = make_test_model(in, c);
  CpuShardEvaluator shard(model, 0, in->nbins, 1);
  VectorXd b0 = shard.beta_centres();
  b0[3] = 0.0;
  shard.set_beta_centres(b0);
  const VectorXd xi = test_point(*model);
  VectorXd g;
  MatrixXd H;
  const double f = shard.value_grad_hess(xi, g, H);
  ASSERT_TRUE(std::isfinite(f));
  ASSERT_TRUE(g.allFinite()) << g.transpose();
  ASSERT_TRUE(H.allFinite()) << H;
  EXPECT_EQ(shard.profiled_beta(xi)[3], 0.0);
  const double gscale = g.cwiseAbs().maxCoeff(), hscale = H.cwiseAbs().maxCoeff();
  const auto value = [&](const VectorXd& x) { return shard.value(x); };
  const auto grad = [&](const VectorXd& x) {
    VectorXd gx;
    shard.value_grad(x, gx);
    return gx;
  };
  for (int64_t i = 0; i < xi.size(); ++i) {
    const double h = 1e-5;
    const double fd = test::central_partial(value, xi, i, h);
    EXPECT_LT(rel_err(g[i], fd, 1e-3 * gscale), 2e-6) << "grad " << i << " analytic " << g[i] << " fd " << fd;
    const VectorXd fdh = test::central_partial(grad, xi, i, h);
    for (int64_t j = 0; j < xi.size(); ++j)
      EXPECT_LT(rel_err(H(j, i), fdh[j], 1e-3 * hscale), 2e-6) << "hess " << j << "," << i;
  }
}
}  // namespace
}  // namespace rabbit::testing
