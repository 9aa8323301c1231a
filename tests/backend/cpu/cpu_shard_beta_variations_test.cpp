// Beta variations (docs/likelihood.md "Beta variations"): masked-channel yields of the full (postfit)
// evaluations follow the observed BB parameters through hbetavariations; their Jacobian goes through β̂.
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

// hbetavariations [B_f, B, P] with rows in the 3 masked bins only; source bin 4 is BB-masked.
void add_beta_variations(FitInputData& in, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> uni(-1.0, 1.0);
  const int64_t B = in.nbins, Bf = in.nbinsfull, P = in.nproc;
  std::vector<double> bv(Bf * B * P, 0.0);
  for (int64_t b = B; b < Bf; ++b)
    for (int64_t j = 0; j < B; ++j)
      for (int64_t p = 0; p < P; ++p)
        if (j != 1 && !(p == 2 && b == B)) bv[(b * B + j) * P + p] = 0.4 * in.norm[b * P + p] * uni(rng);
  in.betavariations = bv;
}

struct Case {
  BBType type;
  DataLikelihood lik;
};
const Case kCases[] = {{BBType::gamma, DataLikelihood::poisson},
                       {BBType::gamma, DataLikelihood::chisq},
                       {BBType::normal_multiplicative, DataLikelihood::poisson},
                       {BBType::normal_multiplicative, DataLikelihood::chisq}};

ShardConfig config(const Case& k) {
  ShardConfig c;
  c.bb_mode = BBMode::full;
  c.bb_type = k.type;
  c.likelihood = k.lik;
  return c;
}

// ν_b = Σ_p N_bp (1 + Σ_j bv[b,j,p] √k_jp (β_jp − 1) / n⁰_bp) μ_bp, written from the definition.
VectorXd masked_yields_by_definition(const FitInputData& in, CpuShardEvaluator& shard, const VectorXd& xi,
                                     const VectorXd& beta_all, const VectorXd& mu_masked) {
  const int64_t B = in.nbins, Bf = in.nbinsfull, P = in.nproc;
  MatrixXd N;
  shard.expected_yields(xi, 0, Bf, Mode::none, nullptr, &N);
  VectorXd nu = VectorXd::Zero(Bf - B);
  for (int64_t b = B; b < Bf; ++b)
    for (int64_t p = 0; p < P; ++p) {
      double var = 0.0;
      for (int64_t j = 0; j < B; ++j) {
        const int64_t f = j * P + p;
        if (shard.bb_mask()[f]) continue;
        var +=
            (*in.betavariations)[(b * B + j) * P + p] * std::sqrt(shard.bb_kstat()[f]) * (beta_all[f] - 1.0);
      }
      const double n0 = in.norm[b * P + p];
      const double factor = n0 > 0.0 ? 1.0 + var / n0 : 1.0;
      nu[b - B] += N(b, p) * factor * mu_masked[b * P + p];
    }
  return nu;
}

TEST(BetaVariations, MaskedYieldsFollowTheObservedBeta) {
  for (const Case& k : kCases) {
    SCOPED_TRACE(::testing::Message() << int(k.type) << " " << int(k.lik));
    const ShardConfig c = config(k);
    auto in = make_test_input(c);
    auto plain = std::make_shared<FitInputData>(*in);
    add_beta_variations(*in, 7);
    auto model = make_test_model(in, c);
    CpuShardEvaluator shard(model, 0, in->nbins, 1);
    CpuShardEvaluator reference(make_test_model(plain, c), 0, in->nbins, 1);
    ASSERT_TRUE(shard.beta_variations_active());
    const VectorXd xi = test_point(*model);
    const int64_t B = in->nbins, Bf = in->nbinsfull, P = in->nproc;
    // the NLL is unchanged (no regulariser: non-full evaluation)
    EXPECT_EQ(shard.value(xi), reference.value(xi));
    // profiled: observed bins as without beta variations, masked bins by definition with β̂
    VectorXd nu, nu_ref;
    shard.expected_yields(xi, 0, Bf, Mode::profiled, &nu);
    reference.expected_yields(xi, 0, Bf, Mode::profiled, &nu_ref);
    EXPECT_LT((nu.head(B) - nu_ref.head(B)).cwiseAbs().maxCoeff(),
              1e-12 * nu_ref.head(B).cwiseAbs().maxCoeff());
    VectorXd beta_all = shard.beta_centres();
    beta_all.head(B * P) = shard.profiled_beta(xi);
    const VectorXd expected = masked_yields_by_definition(*in, shard, xi, beta_all, shard.beta_centres());
    EXPECT_GT((nu.tail(Bf - B) - nu_ref.tail(Bf - B)).cwiseAbs().maxCoeff(), 1e-3);  // they do change
    EXPECT_LT((nu.tail(Bf - B) - expected).cwiseAbs().maxCoeff(), 1e-11 * expected.cwiseAbs().maxCoeff());
    // stored β (Asimov/toys), including masked-channel centres ≠ 1
    std::mt19937 rng(3);
    std::uniform_real_distribution<double> uni(0.8, 1.2);
    VectorXd stored(shard.bb_entries());
    for (int64_t i = 0; i < stored.size(); ++i) stored[i] = uni(rng);
    shard.set_stored_beta(stored);
    shard.expected_yields(xi, 0, Bf, Mode::stored, &nu);
    VectorXd mu = stored;
    for (int64_t i = 0; i < mu.size(); ++i)
      if (shard.bb_mask()[i]) mu[i] = 1.0;
    const VectorXd expected_stored = masked_yields_by_definition(*in, shard, xi, stored, mu);
    EXPECT_LT((nu.tail(Bf - B) - expected_stored).cwiseAbs().maxCoeff(),
              1e-11 * expected_stored.cwiseAbs().maxCoeff());
    // per-process yields sum to the per-bin ones
    MatrixXd per_process;
    shard.expected_yields(xi, 0, Bf, Mode::stored, &nu, &per_process);
    EXPECT_LT((per_process.rowwise().sum() - nu).cwiseAbs().maxCoeff(), 1e-10);
  }
}

TEST(BetaVariations, JacobiansMatchFiniteDifferences) {
  for (const Case& k : kCases) {
    SCOPED_TRACE(::testing::Message() << int(k.type) << " " << int(k.lik));
    const ShardConfig c = config(k);
    auto in = make_test_input(c);
    add_beta_variations(*in, 11);
    auto model = make_test_model(in, c);
    CpuShardEvaluator shard(model, 0, in->nbins, 1);
    const VectorXd xi = test_point(*model);
    const int64_t B = in->nbins, Bf = in->nbinsfull, P = in->nproc, n = xi.size();
    for (Mode mode : {Mode::profiled, Mode::stored}) {
      const MatrixXd J = shard.yield_jacobian(xi, 0, Bf, mode);
      const MatrixXd Jp = shard.process_yield_jacobian(xi, B, Bf, mode);
      MatrixXd fd(Bf, n), fdp((Bf - B) * P, n);
      const auto yields = [&](const VectorXd& x) {
        VectorXd nu;
        shard.expected_yields(x, 0, Bf, mode, &nu);
        return nu;
      };
      const auto process_yields = [&](const VectorXd& x) {
        MatrixXd per;
        shard.expected_yields(x, B, Bf, mode, nullptr, &per);
        return per;
      };
      for (int64_t i = 0; i < n; ++i) {
        const double h = 1e-6;
        fd.col(i) = test::central_partial(yields, xi, i, h);
        if (mode == Mode::stored) {  // β fixed: the per-process Jacobian is the total one
          const MatrixXd dp = test::central_partial(process_yields, xi, i, h);
          for (int64_t b = 0; b < Bf - B; ++b)
            for (int64_t p = 0; p < P; ++p) fdp(b * P + p, i) = dp(b, p);
        }
      }
      const double scale = fd.cwiseAbs().maxCoeff();
      EXPECT_LT((J - fd).cwiseAbs().maxCoeff(), 2e-7 * scale) << "mode " << int(mode);
      if (mode == Mode::stored) {
        EXPECT_LT((Jp - fdp).cwiseAbs().maxCoeff(), 2e-7 * scale);
      }
    }
  }
}

TEST(BetaVariations, BetaPartialsMatchFiniteDifferences) {
  for (const Case& k : kCases) {
    SCOPED_TRACE(::testing::Message() << int(k.type) << " " << int(k.lik));
    const ShardConfig c = config(k);
    auto in = make_test_input(c);
    add_beta_variations(*in, 5);
    auto model = make_test_model(in, c);
    CpuShardEvaluator shard(model, 0, in->nbins, 1);
    const VectorXd xi = test_point(*model);
    const int64_t Bf = in->nbinsfull;
    VectorXd stored = shard.beta_centres();
    for (int64_t i = 0; i < stored.size(); ++i) stored[i] = 1.0 + 0.05 * std::sin(1.0 + i);
    shard.set_stored_beta(stored);
    const MatrixXd D = shard.beta_yield_partials(xi, 0, Bf, Mode::stored);
    ASSERT_EQ(D.cols(), shard.bb_entries());
    // yields as a function of the stored β
    const MatrixXd fd = test::central_jacobian(
        [&](const VectorXd& beta) {
          VectorXd nu;
          shard.set_stored_beta(beta);
          shard.expected_yields(xi, 0, Bf, Mode::stored, &nu);
          return nu;
        },
        stored, 1e-6);
    EXPECT_LT((D - fd).cwiseAbs().maxCoeff(), 1e-6 * fd.cwiseAbs().maxCoeff());
    EXPECT_GT(D.bottomLeftCorner(Bf - in->nbins, in->nbins * in->nproc).cwiseAbs().maxCoeff(), 0.1);
  }
}

TEST(BetaVariations, ObservedDestinationRowsAreRefused) {
  const ShardConfig c = config(kCases[0]);
  auto in = make_test_input(c);
  add_beta_variations(*in, 1);
  (*in->betavariations)[(2 * in->nbins + 0) * in->nproc + 1] = 0.5;  // observed bin 2 receives a variation
  try {
    CpuShardEvaluator shard(make_test_model(in, c), 0, in->nbins, 1);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_STREQ(
        e.what(),
        "in-memory: hbetavariations has a non-zero entry for observed bin 2 (only masked channels may "
        "receive beta variations)");
  }
  // lite mode and normal-additive ignore them (rabbit applies them only in full mode, gamma/normal-mult.)
  ShardConfig lite = c;
  lite.bb_mode = BBMode::lite;
  EXPECT_FALSE(CpuShardEvaluator(make_test_model(in, lite), 0, in->nbins, 1).beta_variations_active());
}

}  // namespace
}  // namespace rabbit::testing
