// dβ̂/dξ of the host yield model (CpuShardEvaluator::profiled_beta_jacobian) against central
// differences of profiled_beta, for every BB mode and type on dense and sparse tensors, with masked
// bins, zero-variance processes and a masked channel (docs/likelihood.md "Profiled β").
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "support/finite_differences.hpp"
#include "support/shard_test_helpers.hpp"

namespace rabbit::testing {
namespace {

using Eigen::MatrixXd;
using Eigen::VectorXd;

void expect_beta_jacobian_matches_fd(const ShardConfig& c) {
  auto in = make_test_input(c);
  auto model = make_test_model(in, c);
  CpuShardEvaluator shard(model, 0, in->nbins, 1);
  const VectorXd xi = test_point(*model);
  const MatrixXd J = shard.profiled_beta_jacobian(xi, 0, in->nbins);
  const MatrixXd fd = test::central_jacobian([&](const VectorXd& x) { return shard.profiled_beta(x); }, xi,
                                             1e-5, test::FdStep::relative);
  ASSERT_EQ(J.rows(), fd.rows());
  ASSERT_EQ(J.cols(), fd.cols());
  EXPECT_GT(J.cwiseAbs().maxCoeff(), 1e-3);  // β̂ does move with ξ
  for (int64_t e = 0; e < J.rows(); ++e) {
    const double scale = std::max(1.0, fd.row(e).cwiseAbs().maxCoeff());
    EXPECT_LT((J.row(e) - fd.row(e)).cwiseAbs().maxCoeff(), 1e-7 * scale)
        << "entry " << e << "\n J  " << J.row(e) << "\n fd " << fd.row(e);
  }
  // a sub-range gives the rows of its bins
  const int64_t w = shard.bb_full() ? in->nproc : 1;
  const MatrixXd Jsub = shard.profiled_beta_jacobian(xi, 2, 5);
  EXPECT_EQ(Jsub, J.middleRows(2 * w, 3 * w));
}

TEST(ProfiledBetaJacobian, MatchesCentralDifferences) {
  for (BBMode mode : {BBMode::lite, BBMode::full})
    for (BBType type : {BBType::gamma, BBType::normal_multiplicative, BBType::normal_additive})
      for (bool sparse : {false, true}) {
        SCOPED_TRACE(std::string(mode == BBMode::lite ? "lite " : "full ") +
                     std::to_string(static_cast<int>(type)) + (sparse ? " sparse" : " dense"));
        ShardConfig c;
        c.bb_mode = mode;
        c.bb_type = type;
        c.sparse = sparse;
        expect_beta_jacobian_matches_fd(c);
      }
}

TEST(ProfiledBetaJacobian, ChisqAndNormalSystematics) {
  for (BBMode mode : {BBMode::lite, BBMode::full}) {
    SCOPED_TRACE(mode == BBMode::lite ? "lite" : "full");
    ShardConfig c;
    c.bb_mode = mode;
    c.likelihood = DataLikelihood::chisq;
    c.lognormal = false;
    expect_beta_jacobian_matches_fd(c);
  }
}

TEST(ProfiledBetaJacobian, CovarianceFitIsNotOffered) {
  ShardConfig c;
  c.likelihood = DataLikelihood::covariance;
  c.bb_type = BBType::normal_additive;
  auto in = make_test_input(c);
  CpuShardEvaluator shard(make_test_model(in, c), 0, in->nbins, 1);
  EXPECT_EQ(shard.profiled_beta_jacobian(test_point(*make_test_model(in, c)), 0, in->nbins).size(), 0);
}

TEST(ProfiledBeta, RepeatedAtOnePointUntilTheDataOrTheCentresChange) {
  // The shard keeps its last β̂ (cpu_shard.cpp profiled_beta): the same ξ gives it again, new observations
  // or BB centres give what a fresh shard computes.
  ShardConfig c;
  auto in = make_test_input(c);
  auto model = make_test_model(in, c);
  CpuShardEvaluator shard(model, 0, in->nbins, 1);
  const VectorXd xi = test_point(*model);
  const VectorXd first = shard.profiled_beta(xi);
  EXPECT_EQ(shard.profiled_beta(xi), first);
  const VectorXd nobs = 1.1 * in->data_obs;
  shard.set_observed(nobs, VectorXd());
  CpuShardEvaluator fresh(model, 0, in->nbins, 1);
  fresh.set_observed(nobs, VectorXd());
  const VectorXd moved = shard.profiled_beta(xi);
  EXPECT_NE(moved, first);
  EXPECT_EQ(moved, fresh.profiled_beta(xi));
  VectorXd centres = shard.default_beta_centres();
  centres *= 1.05;
  shard.set_beta_centres(centres);
  fresh.set_beta_centres(centres);
  const VectorXd recentred = shard.profiled_beta(xi);
  EXPECT_NE(recentred, moved);
  EXPECT_EQ(recentred, fresh.profiled_beta(xi));
}

}  // namespace
}  // namespace rabbit::testing
