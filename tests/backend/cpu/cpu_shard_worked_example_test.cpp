// The worked example of docs/likelihood.md "Tests", reproduced to its printed precision.
#include <gtest/gtest.h>

#include <cmath>

#include "rabbit/backend/cpu/cpu_shard.hpp"
#include "support/shard_test_helpers.hpp"

namespace rabbit::testing {
namespace {

using Eigen::MatrixXd;
using Eigen::VectorXd;

std::shared_ptr<Model> worked_example(bool bb) {
  auto in = std::make_shared<FitInputData>();
  in->filename = "worked-example";
  in->nbins = in->nbinsfull = 3;
  in->nproc = 2;
  in->nsyst = 2;
  in->nsignals = 1;
  in->procs = {"sig", "bkg"};
  in->signals = {"sig"};
  in->systs = {"s0", "s1"};
  in->constraintweights = VectorXd::Zero(2);
  in->constraintweights[1] = 1.0;
  in->norm = {10, 50, 20, 40, 5, 30};
  in->logk.assign(3 * 2 * 2 * 2, 0.0);
  // [b, p, 2, S]
  auto at = [&](int b, int p, int ad, int s) -> double& { return in->logk[((b * 2 + p) * 2 + ad) * 2 + s]; };
  for (int b = 0; b < 3; ++b) {
    at(b, 0, 0, 0) = std::log(1.05);
    at(b, 1, 0, 1) = 0.5 * (std::log(1.10) - std::log(0.96));
    at(b, 1, 1, 1) = 0.5 * (std::log(1.10) + std::log(0.96));
  }
  in->data_obs = VectorXd(3);
  in->data_obs << 62, 55, 41;
  in->sumw = in->norm;
  in->sumw2 = {4, 30, 8, 20, 2, 15};
  ShardConfig c;
  c.bb = bb;
  c.bb_type = BBType::gamma;
  return make_test_model(in, c);
}

// f, g, H in x-space (squared POI, constraint on θ1), from the shard's ξ-space partials.
double total(CpuShardEvaluator& shard, const Model& m, const VectorXd& x, VectorXd& g, MatrixXd& H) {
  VectorXd xi = x, d1 = VectorXd::Ones(3), d2 = VectorXd::Zero(3);
  xi[0] = x[0] * x[0];
  d1[0] = 2 * x[0];
  d2[0] = 2;
  VectorXd gxi;
  MatrixXd hxi;
  double f = shard.value_grad_hess(xi, gxi, hxi, true);
  f += m.global_terms->xi_terms(xi, &gxi, nullptr, nullptr, &hxi);
  g = d1.cwiseProduct(gxi);
  H = d1.asDiagonal() * hxi * d1.asDiagonal();
  H.diagonal() += d2.cwiseProduct(gxi);
  return f;
}

void expect_close(const MatrixXd& a, const MatrixXd& b, double rel) {
  ASSERT_EQ(a.rows(), b.rows());
  ASSERT_EQ(a.cols(), b.cols());
  for (int i = 0; i < a.rows(); ++i)
    for (int j = 0; j < a.cols(); ++j)
      EXPECT_NEAR(a(i, j), b(i, j), rel * std::abs(b(i, j))) << i << "," << j;
}

TEST(WorkedExample, NoBB) {
  auto m = worked_example(false);
  CpuShardEvaluator shard(m, 0, 3, 1);
  VectorXd x(3), g;
  x << 1.1, 0.3, -0.2;
  MatrixXd H;
  const double f = total(shard, *m, x, g, H);
  EXPECT_NEAR(f, 1.0624222256365141, 1e-13);
  VectorXd ge(3);
  ge << 4.690781056586877, 0.125875187808555, -0.157389420584073;
  MatrixXd He(3, 3);
  He << 42.969515029761894, 1.2675013198374965, 1.840629030380061, 1.2675013198374963, 0.034012878613913784,
      0.049392525911996145, 1.8406290303800612, 0.04939252591199615, 1.2200096259992579;
  expect_close(g, ge, 1e-12);
  expect_close(H, He, 1e-12);
}

TEST(WorkedExample, LiteGamma) {
  auto m = worked_example(true);
  CpuShardEvaluator shard(m, 0, 3, 1);
  VectorXd x(3), g;
  x << 1.1, 0.3, -0.2;
  MatrixXd H;
  const double f = total(shard, *m, x, g, H);
  EXPECT_NEAR(f, 0.7196767506110793, 1e-13);
  VectorXd ge(3);
  ge << 3.130825903022236, 0.084014430386901, -0.171466244393822;
  MatrixXd He(3, 3);
  He << 27.513434640321975, 0.814688501028619, 1.185698172496495, 0.814688501028619, 0.021861832141674156,
      0.03181772467032476, 1.185698172496495, 0.03181772467032476, 1.1453601453921625;
  expect_close(g, ge, 1e-12);
  expect_close(H, He, 1e-12);
  VectorXd xi = x;
  xi[0] = x[0] * x[0];
  VectorXd beta_e(3);
  beta_e << 1.001289501527487, 0.952467146597634, 1.047798928216275;
  expect_close(shard.profiled_beta(xi), beta_e, 1e-13);
}

}  // namespace
}  // namespace rabbit::testing
