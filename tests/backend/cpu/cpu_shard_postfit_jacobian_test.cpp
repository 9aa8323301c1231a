// Postfit yield Jacobians through the profiled β̂ in the corner cases of docs/likelihood.md "BB derivative
// corner cases" (covariance fits, lite bins with A ≤ 0, gamma full with masked β⁰ ≠ 1), and ∂ν/∂β per
// BetaMode.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "rabbit/core/error.hpp"
#include "support/finite_differences.hpp"
#include "support/shard_test_helpers.hpp"

namespace rabbit::testing {
namespace {

using Eigen::MatrixXd;
using Eigen::VectorXd;
using Mode = CpuShardEvaluator::BetaMode;

// yield_jacobian(profiled) of all B_f bins against central differences of expected_yields(profiled).
void expect_profiled_jacobian_matches_fd(CpuShardEvaluator& shard, const VectorXd& xi, int64_t Bf,
                                         double tol = 1e-7) {
  const int64_t n = xi.size();
  const MatrixXd J = shard.yield_jacobian(xi, 0, Bf, Mode::profiled);
  ASSERT_EQ(J.rows(), Bf);
  ASSERT_EQ(J.cols(), n);
  const MatrixXd fd = test::central_jacobian(
      [&](const VectorXd& x) {
        VectorXd nu;
        shard.expected_yields(x, 0, Bf, Mode::profiled, &nu);
        return nu;
      },
      xi, 1e-5, test::FdStep::relative);
  for (int64_t b = 0; b < Bf; ++b) {
    const double scale = std::max(1.0, fd.row(b).cwiseAbs().maxCoeff());
    EXPECT_LT((J.row(b) - fd.row(b)).cwiseAbs().maxCoeff(), tol * scale)
        << "bin " << b << "\n J  " << J.row(b) << "\n fd " << fd.row(b);
  }
}

// Covariance fit, normal-additive lite, signal strength −0.3: in bin 2 the only active process is
// the signal (bkg1 absent, bkg2 without MC statistics), so A_2 < 0 and ν_2 = ν⁰_2 + s β̂ A_2.
TEST(PostfitJacobian, CovarianceAdditiveLiteWithNegativeActiveSum) {
  ShardConfig c;
  c.likelihood = DataLikelihood::covariance;
  c.bb_type = BBType::normal_additive;
  c.zero_variance_process = true;
  auto in = make_test_input(c);
  auto model = make_test_model(in, c);
  CpuShardEvaluator shard(model, 0, in->nbins, 1);
  VectorXd xi = test_point(*model);
  xi[0] = -0.3;
  MatrixXd N;
  shard.expected_yields(xi, 0, in->nbins, Mode::none, nullptr, &N);
  ASSERT_LT(N(2, 0) + N(2, 1), 0.0);  // the active sum of bin 2
  // the A-dependence is real: ν_2 − ν⁰_2 = s β̂ A_2 ≠ 0
  VectorXd nu, nu0;
  shard.expected_yields(xi, 0, in->nbins, Mode::profiled, &nu);
  shard.expected_yields(xi, 0, in->nbins, Mode::none, &nu0);
  const VectorXd beta = shard.profiled_beta(xi);
  const double s2 = std::sqrt(in->sumw2[2 * 3 + 0] + in->sumw2[2 * 3 + 1]);
  EXPECT_NEAR(nu[2] - nu0[2], s2 * beta[2] * (N(2, 0) + N(2, 1)), 1e-10 * std::abs(nu[2]));
  EXPECT_GT(std::abs(beta[2]), 1e-3);
  expect_profiled_jacobian_matches_fd(shard, xi, in->nbinsfull);
}

// Uncoupled lite bins with A_2 < 0 (A' = 1, docs/likelihood.md "BB derivative corner cases" item 1):
// hyper-duals of the closed forms.
TEST(PostfitJacobian, LiteWithNegativeActiveSum) {
  for (auto type : {BBType::gamma, BBType::normal_multiplicative, BBType::normal_additive})
    for (auto lik : {DataLikelihood::poisson, DataLikelihood::chisq}) {
      SCOPED_TRACE(::testing::Message() << int(type) << " " << int(lik));
      ShardConfig c;
      c.bb_type = type;
      c.likelihood = lik;
      auto in = make_test_input(c);
      auto model = make_test_model(in, c);
      CpuShardEvaluator shard(model, 0, in->nbins, 1);
      VectorXd xi = test_point(*model);
      xi[0] = -0.3;
      MatrixXd N;
      shard.expected_yields(xi, 0, in->nbins, Mode::none, nullptr, &N);
      ASSERT_LT(N(2, 0) + N(2, 1), 0.0);
      expect_profiled_jacobian_matches_fd(shard, xi, in->nbinsfull);
    }
}

// Legacy per-bin sumw/sumw2 input, normal-additive lite, a bin with a negative total yield: every
// process is active, rabbit adds s·β to the bin (no A' substitution) and distributes it over the
// processes in proportion to N/ν⁰.
TEST(PostfitJacobian, LegacyAdditiveLiteWithNegativeBinYield) {
  for (auto lik : {DataLikelihood::chisq, DataLikelihood::covariance}) {
    SCOPED_TRACE(::testing::Message() << int(lik));
    ShardConfig c;
    c.bb_type = BBType::normal_additive;
    c.likelihood = lik;
    c.legacy_kstat = true;
    auto in = make_test_input(c);
    auto model = make_test_model(in, c);
    CpuShardEvaluator shard(model, 0, in->nbins, 1);
    VectorXd xi = test_point(*model);
    MatrixXd N;
    shard.expected_yields(xi, 0, in->nbins, Mode::none, nullptr, &N);
    xi[0] *= -1.5 * N.row(2).tail(2).sum() / N(2, 0);  // the signal outweighs the backgrounds of bin 2
    VectorXd nu, nu0;
    shard.expected_yields(xi, 0, in->nbins, Mode::none, &nu0, &N);
    ASSERT_LT(nu0[2], 0.0);
    MatrixXd per;
    shard.expected_yields(xi, 0, in->nbins, Mode::profiled, &nu, &per);
    const VectorXd beta = shard.profiled_beta(xi);
    EXPECT_NEAR(nu[2] - nu0[2], std::sqrt(in->sumw2[2]) * beta[2], 1e-10 * std::abs(nu[2]));
    EXPECT_LT((per.rowwise().sum() - nu).cwiseAbs().maxCoeff(), 1e-10);
    expect_profiled_jacobian_matches_fd(shard, xi, in->nbinsfull);
    // stored β: per-process Jacobian against differences of the per-process yields
    const int64_t Bf = in->nbinsfull, P = in->nproc;
    shard.set_stored_beta(VectorXd::Constant(shard.bb_entries(), 0.7));
    const MatrixXd Jp = shard.process_yield_jacobian(xi, 0, Bf, Mode::stored);
    for (int64_t i = 0; i < xi.size(); ++i) {
      const MatrixXd dp = test::central_partial(
          [&](const VectorXd& x) {
            MatrixXd per;
            shard.expected_yields(x, 0, Bf, Mode::stored, nullptr, &per);
            return per;
          },
          xi, i, 1e-5);
      for (int64_t b = 0; b < Bf; ++b)
        for (int64_t p = 0; p < P; ++p) {
          const double fd = dp(b, p);
          EXPECT_NEAR(Jp(b * P + p, i), fd, 1e-7 * std::max(1.0, std::abs(fd))) << b << " " << p << " " << i;
        }
    }
  }
}

// The regular point of the same configurations (all A > 0), lite and full normal-additive.
TEST(PostfitJacobian, CovarianceAdditive) {
  for (auto mode : {BBMode::lite, BBMode::full}) {
    SCOPED_TRACE(::testing::Message() << "mode " << int(mode));
    ShardConfig c;
    c.likelihood = DataLikelihood::covariance;
    c.bb_type = BBType::normal_additive;
    c.bb_mode = mode;
    auto in = make_test_input(c);
    auto model = make_test_model(in, c);
    CpuShardEvaluator shard(model, 0, in->nbins, 1);
    expect_profiled_jacobian_matches_fd(shard, test_point(*model), in->nbinsfull);
  }
}

// Covariance fit, normal-multiplicative: rabbit's closed forms differentiated literally (lite: the
// BB-masked bin 4 solved as free and then unscaled; A_2 < 0 at signal strength −0.3; full: masked
// entries with β⁰ ≠ 1 as after a toy).
TEST(PostfitJacobian, CovarianceMultiplicative) {
  for (auto mode : {BBMode::lite, BBMode::full})
    for (bool corner : {false, true}) {
      SCOPED_TRACE(::testing::Message() << "mode " << int(mode) << " corner " << corner);
      ShardConfig c;
      c.likelihood = DataLikelihood::covariance;
      c.bb_type = BBType::normal_multiplicative;
      c.bb_mode = mode;
      auto in = make_test_input(c);
      auto model = make_test_model(in, c);
      CpuShardEvaluator shard(model, 0, in->nbins, 1);
      VectorXd xi = test_point(*model);
      if (corner && mode == BBMode::lite) {
        xi[0] = -0.3;
        MatrixXd N;
        shard.expected_yields(xi, 0, in->nbins, Mode::none, nullptr, &N);
        ASSERT_LT(N(2, 0) + N(2, 1), 0.0);
      }
      if (corner && mode == BBMode::full) {
        VectorXd b0 = shard.beta_centres();
        for (int64_t i = 0; i < b0.size(); ++i) b0[i] = 1.0 + 0.15 * std::sin(0.7 * i + 0.3);
        shard.set_beta_centres(b0);
      }
      expect_profiled_jacobian_matches_fd(shard, xi, in->nbinsfull);
    }
}

// BetaMode::none: yields are ν⁰, β is no variable of them, so ∂ν/∂β = 0 (stored β gives the factors).
TEST(PostfitJacobian, BetaPartialsOfModeNoneAreZero) {
  for (auto mode : {BBMode::lite, BBMode::full})
    for (auto type : {BBType::gamma, BBType::normal_multiplicative, BBType::normal_additive}) {
      SCOPED_TRACE(::testing::Message() << int(mode) << " " << int(type));
      ShardConfig c;
      c.bb_mode = mode;
      c.bb_type = type;
      auto in = make_test_input(c);
      auto model = make_test_model(in, c);
      CpuShardEvaluator shard(model, 0, in->nbins, 1);
      const VectorXd xi = test_point(*model);
      const int64_t Bf = in->nbinsfull;
      const MatrixXd none = shard.beta_yield_partials(xi, 0, Bf, Mode::none);
      ASSERT_EQ(none.rows(), Bf);
      ASSERT_EQ(none.cols(), shard.bb_entries());
      EXPECT_EQ(none.cwiseAbs().maxCoeff(), 0.0);
      // and the yields of mode none indeed do not move with the stored β
      VectorXd a, b;
      shard.expected_yields(xi, 0, Bf, Mode::none, &a);
      shard.set_stored_beta(VectorXd::Constant(shard.bb_entries(), 1.3));
      shard.expected_yields(xi, 0, Bf, Mode::none, &b);
      EXPECT_EQ((a - b).cwiseAbs().maxCoeff(), 0.0);
      EXPECT_GT(shard.beta_yield_partials(xi, 0, Bf, Mode::stored).cwiseAbs().maxCoeff(), 1.0);
    }
}

// hbetavariations rows into the masked channel (as in cpu_shard_beta_variations_test).
void add_beta_variations(FitInputData& in, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> uni(-1.0, 1.0);
  const int64_t B = in.nbins, Bf = in.nbinsfull, P = in.nproc;
  std::vector<double> bv(Bf * B * P, 0.0);
  for (int64_t b = B; b < Bf; ++b)
    for (int64_t j = 0; j < B; ++j)
      for (int64_t p = 0; p < P; ++p)
        if (j != 1) bv[(b * B + j) * P + p] = 0.4 * in.norm[b * P + p] * uni(rng);
  in.betavariations = bv;
}

// gamma + full with masked β⁰ ≠ 1 (toys): rabbit's postfit yields are ν(β(X(u*)), N) with u* one
// differentiable Newton step from the converged u0 (held fixed). Its first derivative is
// −∂_N f'/f'' + f'(u0)·∂_N f''/f''², i.e. the implicit-function derivative of the minimiser up to
// O(f'(u0)) (≤ 1e-10 after the converged loop). The shard's implicit-function Jacobian must therefore
// be the derivative of its own profiled yields, with and without beta variations.
TEST(PostfitJacobian, GammaFullWithMaskedCentresOffOne) {
  for (auto lik : {DataLikelihood::poisson, DataLikelihood::chisq})
    for (int variant : {0, 1, 2}) {  // dense, dense + beta variations, sparse
      const bool betavar = variant == 1;
      SCOPED_TRACE(::testing::Message() << int(lik) << " variant " << variant);
      ShardConfig c;
      c.sparse = variant == 2;
      c.bb_mode = BBMode::full;
      c.bb_type = BBType::gamma;
      c.likelihood = lik;
      auto in = make_test_input(c);
      if (betavar) add_beta_variations(*in, 13);
      auto model = make_test_model(in, c);
      CpuShardEvaluator shard(model, 0, in->nbins, 1);
      ASSERT_EQ(shard.beta_variations_active(), betavar);
      VectorXd b0 = shard.beta_centres();
      int masked_changed = 0;
      for (int64_t i = 0; i < b0.size(); ++i) {
        b0[i] = 1.0 + 0.15 * std::sin(0.7 * i + 0.3);
        masked_changed += shard.bb_mask()[i] && i < in->nbins * in->nproc;
      }
      ASSERT_GT(masked_changed, 2);
      shard.set_beta_centres(b0);
      expect_profiled_jacobian_matches_fd(shard, test_point(*model), in->nbinsfull);
    }
}

// Covariance fit, normal-multiplicative full, with beta variations: the masked channel follows the
// observed β̂ of the coupled solve; its rows go through dβ̂/dξ of that solve (masked β⁰ ≠ 1 too).
TEST(PostfitJacobian, CovarianceMultiplicativeFullWithBetaVariations) {
  for (bool centres : {false, true}) {
    SCOPED_TRACE(::testing::Message() << "centres " << centres);
    ShardConfig c;
    c.likelihood = DataLikelihood::covariance;
    c.bb_type = BBType::normal_multiplicative;
    c.bb_mode = BBMode::full;
    auto in = make_test_input(c);
    add_beta_variations(*in, 17);
    auto model = make_test_model(in, c);
    CpuShardEvaluator shard(model, 0, in->nbins, 1);
    ASSERT_TRUE(shard.beta_variations_active());
    if (centres) {
      VectorXd b0 = shard.beta_centres();
      for (int64_t i = 0; i < b0.size(); ++i) b0[i] = 1.0 + 0.15 * std::sin(0.7 * i + 0.3);
      shard.set_beta_centres(b0);
    }
    const VectorXd xi = test_point(*model);
    const int64_t B = in->nbins, Bf = in->nbinsfull;
    // the masked rows do depend on β̂ (compare with the stored β = β⁰)
    VectorXd prof, fixed;
    shard.expected_yields(xi, B, Bf, Mode::profiled, &prof);
    shard.expected_yields(xi, B, Bf, Mode::stored, &fixed);
    EXPECT_GT((prof - fixed).cwiseAbs().maxCoeff(), 1e-3);
    expect_profiled_jacobian_matches_fd(shard, xi, Bf);
  }
}

}  // namespace
}  // namespace rabbit::testing
