// Profiled β stationarity, postfit yields and their Jacobians, full NLL constants.
#include <gtest/gtest.h>

#include <cmath>

#include "rabbit/backend/cpu/cpu_shard.hpp"
#include "support/finite_differences.hpp"
#include "support/shard_test_helpers.hpp"

namespace rabbit::testing {
namespace {

using Eigen::MatrixXd;
using Eigen::VectorXd;
using Mode = CpuShardEvaluator::BetaMode;

double data_first(double nu, double n, double v, DataLikelihood lik) {
  if (lik == DataLikelihood::chisq) return (nu - n) / v;
  return n == 0.0 ? 1.0 : 1.0 - n / nu;
}

// ∂/∂β of ℓ(ν(β)) + L_β(β) at the profiled β̂, computed from the yields at fixed β.
TEST(Profile, BetaIsStationary) {
  for (auto mode : {BBMode::lite, BBMode::full})
    for (auto type : {BBType::gamma, BBType::normal_multiplicative, BBType::normal_additive})
      for (auto lik : {DataLikelihood::poisson, DataLikelihood::chisq}) {
        ShardConfig c;
        c.bb_mode = mode;
        c.bb_type = type;
        c.likelihood = lik;
        c.zero_variance_process = mode == BBMode::full;  // lite zero-variance stays covered by FD tests
        SCOPED_TRACE(::testing::Message() << int(mode) << " " << int(type) << " " << int(lik));
        auto in = make_test_input(c);
        auto model = make_test_model(in, c);
        CpuShardEvaluator shard(model, 0, in->nbins, 1);
        const VectorXd xi = test_point(*model);
        const VectorXd beta = shard.profiled_beta(xi);
        shard.set_stored_beta([&] {
          VectorXd all = shard.beta_centres();
          all.head(beta.size()) = beta;
          return all;
        }());
        VectorXd nu;
        MatrixXd N;
        shard.expected_yields(xi, 0, in->nbins, Mode::stored, &nu, nullptr);
        shard.expected_yields(xi, 0, in->nbins, Mode::none, nullptr, &N);
        const int64_t P = in->nproc;
        for (int64_t b = 0; b < in->nbins; ++b) {
          if (lik == DataLikelihood::poisson && in->data_obs[b] == 0.0 && type != BBType::gamma) continue;
          const double gb = data_first(nu[b], in->data_obs[b], in->data_obs[b], lik);
          const int64_t w = mode == BBMode::full ? P : 1;
          for (int64_t j = 0; j < w; ++j) {
            const int64_t e = b * w + j;
            const double bt = beta[e], b0 = shard.beta_centres()[e], k = shard.bb_kstat()[e];
            double dnu, dc;
            if (type == BBType::normal_additive) {
              const double s2 = mode == BBMode::full ? in->sumw2[e] : [&] {
                double t = 0;
                for (int64_t p = 0; p < P; ++p) t += in->sumw2[b * P + p];
                return t;
              }();
              if (s2 == 0.0) continue;
              dnu = std::sqrt(s2);
              dc = bt - b0;
            } else {
              if (shard.bb_mask()[e]) continue;
              dnu = mode == BBMode::full ? N(b, j) : N(b, 0) + N(b, 1);  // active processes
              if (mode == BBMode::lite && !c.zero_variance_process) dnu += N(b, 2);
              dc = type == BBType::gamma ? k - k * b0 / bt : k * (bt - b0);
            }
            EXPECT_LT(std::abs(gb * dnu + dc), 1e-10 * std::max(1.0, k)) << "bin " << b << " entry " << j;
          }
        }
      }
}

TEST(Yields, JacobiansMatchFiniteDifferences) {
  for (auto mode : {BBMode::lite, BBMode::full})
    for (auto type : {BBType::gamma, BBType::normal_multiplicative, BBType::normal_additive})
      for (bool sparse : {false, true}) {
        ShardConfig c;
        c.bb_mode = mode;
        c.bb_type = type;
        c.sparse = sparse;
        SCOPED_TRACE(::testing::Message() << int(mode) << " " << int(type) << " " << sparse);
        auto in = make_test_input(c);
        auto model = make_test_model(in, c);
        CpuShardEvaluator shard(model, 0, in->nbins, 1);
        const VectorXd xi = test_point(*model);
        const int64_t Bf = in->nbinsfull, P = in->nproc, n = xi.size();
        VectorXd tot;
        MatrixXd per;
        for (Mode m : {Mode::none, Mode::stored, Mode::profiled}) {
          shard.expected_yields(xi, 0, Bf, m, &tot, &per);
          EXPECT_LT((per.rowwise().sum() - tot).cwiseAbs().maxCoeff(), 1e-10);
          const MatrixXd J = shard.yield_jacobian(xi, 0, Bf, m);
          const Mode pm_mode = m == Mode::profiled ? Mode::stored : m;
          const MatrixXd Jp = shard.process_yield_jacobian(xi, 0, Bf, pm_mode);
          const auto totals = [&](const VectorXd& x) {
            VectorXd t;
            shard.expected_yields(x, 0, Bf, m, &t, nullptr);
            return t;
          };
          const auto per_process = [&](const VectorXd& x) {
            MatrixXd pp;
            shard.expected_yields(x, 0, Bf, pm_mode, nullptr, &pp);
            return pp;
          };
          for (int64_t i = 0; i < n; ++i) {
            const double h = 1e-6;
            const VectorXd fd = test::central_partial(totals, xi, i, h);
            EXPECT_LT((J.col(i) - fd).cwiseAbs().maxCoeff(), 1e-6 * std::max(1.0, fd.cwiseAbs().maxCoeff()))
                << "mode " << int(m) << " param " << i;
            const MatrixXd fdp = test::central_partial(per_process, xi, i, h);
            for (int64_t b = 0; b < Bf; ++b)
              for (int64_t p = 0; p < P; ++p)
                EXPECT_NEAR(Jp(b * P + p, i), fdp(b, p), 1e-6 * std::max(1.0, std::abs(fdp(b, p))))
                    << "process jacobian mode " << int(m) << " bin " << b << " proc " << p << " param " << i;
          }
        }
        // Observed-bin yields with profiled β reproduce the NLL: Poisson data term from ν.
        shard.expected_yields(xi, 0, in->nbins, Mode::profiled, &tot, nullptr);
        EXPECT_TRUE(tot.allFinite());
      }
}

TEST(FullNll, PoissonConstants) {
  ShardConfig c;
  c.bb = false;
  auto in = make_test_input(c);
  auto model = make_test_model(in, c);
  CpuShardEvaluator shard(model, 0, in->nbins, 1);
  const VectorXd xi = test_point(*model);
  VectorXd nu;
  shard.expected_yields(xi, 0, in->nbins, Mode::none, &nu, nullptr);
  double full = 0.0;
  for (int64_t b = 0; b < in->nbins; ++b) {
    const double n = in->data_obs[b];
    full += (n > 0 ? -n * std::log(nu[b]) : 0.0) + nu[b] + std::lgamma(n + 1.0);
  }
  EXPECT_NEAR(shard.full_value(xi), full, 1e-10 * std::abs(full));
}

TEST(FullNll, GammaConstraintIsPoissonOfKBeta0) {
  ShardConfig c;
  c.masked_channel = false;
  c.zero_variance_process = false;
  auto in = make_test_input(c);
  auto model = make_test_model(in, c);
  CpuShardEvaluator shard(model, 0, in->nbins, 1);
  const VectorXd xi = test_point(*model);
  const VectorXd beta = shard.profiled_beta(xi);
  VectorXd all = shard.beta_centres();
  all.head(beta.size()) = beta;
  shard.set_stored_beta(all);
  VectorXd nu;
  shard.expected_yields(xi, 0, in->nbins, Mode::stored, &nu, nullptr);
  double full = 0.0;
  for (int64_t b = 0; b < in->nbins; ++b) {
    const double n = in->data_obs[b];
    full += (n > 0 ? -n * std::log(nu[b]) : 0.0) + nu[b] + std::lgamma(n + 1.0);
    if (shard.bb_mask()[b]) continue;
    const double k = shard.bb_kstat()[b];
    full += -k * std::log(k * beta[b]) + k * beta[b] + std::lgamma(k + 1.0);
  }
  EXPECT_NEAR(shard.full_value(xi), full, 1e-10 * std::abs(full));
}

// Empty data bin with Poisson full normal types: rabbit gets 0/0; we take the finite limit.
TEST(Profile, EmptyBinFullModeIsFinite) {
  for (auto type : {BBType::normal_multiplicative, BBType::normal_additive}) {
    ShardConfig c;
    c.bb_mode = BBMode::full;
    c.bb_type = type;
    auto in = make_test_input(c);
    // large MC weights in the empty bin 3: Σ sumw2 > Σ N, the case that is NaN in rabbit
    for (int64_t p = 0; p < in->nproc; ++p) in->sumw2[3 * in->nproc + p] = 3.0 * in->sumw[3 * in->nproc + p];
    auto model = make_test_model(in, c);
    CpuShardEvaluator shard(model, 0, in->nbins, 1);
    const VectorXd xi = test_point(*model);
    VectorXd g, gv;
    MatrixXd H, HV;
    EXPECT_TRUE(std::isfinite(shard.value_grad_hess(xi, g, H)));
    EXPECT_TRUE(g.allFinite());
    EXPECT_TRUE(H.allFinite());
    // the limit is the ν → 0 boundary: the bin's expected yield vanishes
    VectorXd nu;
    const VectorXd beta = shard.profiled_beta(xi);
    VectorXd all = shard.beta_centres();
    all.head(beta.size()) = beta;
    shard.set_stored_beta(all);
    shard.expected_yields(xi, 3, 4, Mode::stored, &nu, nullptr);
    EXPECT_NEAR(nu[0], 0.0, 1e-9);
    // and the value is continuous in n → 0
    VectorXd obs = in->data_obs;
    obs[3] = 1e-6;  // continuity up to O(n ln n)
    CpuShardEvaluator shard2(model, 0, in->nbins, 1);
    shard2.set_observed(obs, VectorXd());
    EXPECT_NEAR(shard2.value(xi), shard.value(xi), 1e-4);
  }
}

}  // namespace
}  // namespace rabbit::testing
