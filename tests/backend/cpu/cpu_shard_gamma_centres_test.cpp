// gamma + BB full with masked entries whose centre β⁰ ≠ 1 (frequentist toys randomise all β⁰):
// rabbit's Newton objective carries β⁰N for those entries while the bin's yield uses N, so its β̂ is
// not the profile; rabbit's derivatives are those of its composite (one differentiable Newton step
// from the converged point, docs/likelihood.md "BB derivative corner cases" item 3). The shard's gradient is
// checked against finite differences of its value; the composite's exact derivatives (what the Hessian is
// made of) against finite differences of the composite at a fixed Newton point.
#include <gtest/gtest.h>

#include <cmath>

#include "support/finite_differences.hpp"
#include "support/shard_test_helpers.hpp"

namespace rabbit::testing {
namespace {

using Eigen::MatrixXd;
using Eigen::VectorXd;

double rel(double a, double b, double scale) {
  return std::abs(a - b) / std::max({std::abs(b), scale, 1e-3});
}

TEST(GammaFullMaskedCentres, DerivativesOfRabbitsCompositeMatchFiniteDifferences) {
  for (auto lik : {DataLikelihood::poisson, DataLikelihood::chisq})
    for (bool sparse : {false, true}) {
      ShardConfig c;
      c.bb_mode = BBMode::full;
      c.bb_type = BBType::gamma;
      c.likelihood = lik;
      c.sparse = sparse;
      SCOPED_TRACE(::testing::Message() << int(lik) << " sparse " << sparse);
      auto in = make_test_input(c);
      auto model = make_test_model(in, c);
      CpuShardEvaluator shard(model, 0, in->nbins, 2);
      VectorXd b0 = shard.beta_centres();
      int masked_changed = 0;
      for (int64_t i = 0; i < b0.size(); ++i) {
        b0[i] = 1.0 + 0.15 * std::sin(0.7 * i + 0.3);
        masked_changed += shard.bb_mask()[i] && i < in->nbins * in->nproc;
      }
      ASSERT_GT(masked_changed, 2);
      shard.set_beta_centres(b0);
      const VectorXd xi = test_point(*model);
      const int64_t n = xi.size();
      VectorXd g;
      const double f = shard.value_grad(xi, g);
      ASSERT_TRUE(std::isfinite(f));
      const double gscale = g.cwiseAbs().maxCoeff();
      const auto value = [&](const VectorXd& x) { return shard.value(x); };
      for (int64_t i = 0; i < n; ++i) {
        const double fd = test::central_partial(value, xi, i, 1e-5);
        EXPECT_LT(rel(g[i], fd, 1e-3 * gscale), 2e-6) << "grad " << i << " " << g[i] << " fd " << fd;
      }
      VectorXd gh;
      MatrixXd H;
      shard.value_grad_hess(xi, gh, H);
      const double hscale = H.cwiseAbs().maxCoeff();
      EXPECT_LT((H - H.transpose()).cwiseAbs().maxCoeff(), 1e-12 * hscale);
      VectorXd gv;
      MatrixXd HV;
      shard.value_grad_hvp(xi, MatrixXd::Identity(n, n), gv, HV);
      EXPECT_LT((HV - H).cwiseAbs().maxCoeff(), 1e-11 * hscale);
      // (rabbit's Hessian holds the converged Newton point fixed, so it is not the difference
      // quotient of the gradient here; the composite's own derivatives are checked below)
      // profile = false (β held at β̂) stays available and symmetric
      MatrixXd H0;
      shard.value_grad_hess(xi, gh, H0, false);
      EXPECT_LT((H0 - H0.transpose()).cwiseAbs().maxCoeff(), 1e-12 * std::max(1.0, H0.cwiseAbs().maxCoeff()));
    }
}

TEST(GammaFullMaskedCentres, CompositeDerivativesAtFixedNewtonPoint) {
  using cpu::DynHyperDual;
  const std::vector<cpu::GammaFullEntry> entries = {{40.0, 1.1, std::log(1.1), false},
                                                    {1.0, 0.8, std::log(0.8), true},
                                                    {15.0, 0.95, std::log(0.95), false},
                                                    {1.0, 1.3, std::log(1.3), true}};
  const std::vector<double> N0 = {30.0, 12.0, 22.0, 7.0};
  const int K = 4;
  for (auto lik : {DataLikelihood::poisson, DataLikelihood::chisq})
    for (double u0 : {-0.4, 0.2, 1.5}) {
      SCOPED_TRACE(::testing::Message() << int(lik) << " u0 " << u0);
      cpu::BinObservation obs;
      obs.n = 80.0;
      obs.v = 75.0;
      obs.log_n = std::log(obs.n);
      std::vector<DynHyperDual> N(K);
      for (int a = 0; a < K; ++a) N[a] = DynHyperDual::variable(N0[a], a, K);
      const DynHyperDual F = cpu::gamma_full_bin_composite(N.data(), entries.data(), K, obs, lik, u0);
      const double F0 = cpu::gamma_full_bin_composite(N0.data(), entries.data(), K, obs, lik, u0);
      EXPECT_NEAR(F.v, F0, 1e-12 * std::abs(F0));
      const VectorXd n0 = Eigen::Map<const VectorXd>(N0.data(), K);
      auto value_at = [&](const VectorXd& n) {
        return cpu::gamma_full_bin_composite(n.data(), entries.data(), K, obs, lik, u0);
      };
      // Hessian rows against differences of the (value-checked) gradient
      auto grad_at = [&](const VectorXd& n) {
        std::vector<DynHyperDual> M(K);
        for (int i = 0; i < K; ++i) M[i] = DynHyperDual::variable(n[i], i, K);
        return cpu::gamma_full_bin_composite(M.data(), entries.data(), K, obs, lik, u0).g;
      };
      for (int a = 0; a < K; ++a) {
        const double h = 1e-5 * N0[a];
        const double fd_g = test::central_partial(value_at, n0, a, h);
        EXPECT_NEAR(F.g[a], fd_g, 1e-7 * std::max(1.0, std::abs(F.g[a])));
        const Eigen::VectorXd fd = test::central_partial(grad_at, n0, a, h);
        for (int c = 0; c < K; ++c) {
          EXPECT_NEAR(F.h(c, a), fd[c], 1e-7 * std::max(1.0, std::abs(F.h(c, a)))) << c << "," << a;
          EXPECT_NEAR(F.h(a, c), F.h(c, a), 1e-12 * std::max(1.0, std::abs(F.h(a, c))));
        }
      }
    }
}

}  // namespace
}  // namespace rabbit::testing
