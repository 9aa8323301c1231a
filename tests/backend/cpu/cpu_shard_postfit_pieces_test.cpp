// The postfit YieldModel calls of the CPU shard cut into bin pieces for its threads
// (src/backend/cpu/postfit_bin_pieces.cpp): yields, the yield Jacobians and dβ̂/dξ are the same bits
// with 3 threads as with one, for ranges long enough to be cut (≥ 512 bins), starting inside the
// observed bins and reaching into the masked channel; a covariance fit keeps one thread.
#include <gtest/gtest.h>

#include <algorithm>

#include "rabbit/core/error.hpp"
#include "support/shard_test_helpers.hpp"

namespace rabbit::testing {
namespace {

using Eigen::MatrixXd;
using Eigen::VectorXd;
using Mode = CpuShardEvaluator::BetaMode;

void expect_same_bits(const MatrixXd& a, const MatrixXd& b, const char* what) {
  ASSERT_EQ(a.rows(), b.rows()) << what;
  ASSERT_EQ(a.cols(), b.cols()) << what;
  EXPECT_TRUE(a.cwiseEqual(b).all()) << what << ": max difference " << (a - b).cwiseAbs().maxCoeff();
}

void expect_pieces_match_one_thread(const ShardConfig& c) {
  auto in = make_test_input(c);
  auto model = make_test_model(in, c);
  CpuShardEvaluator one(model, 0, in->nbins, 1), three(model, 0, in->nbins, 3);
  const VectorXd xi = test_point(*model);
  const int64_t Bf = in->nbinsfull, B = in->nbins;
  for (auto [first, last] : {std::pair<int64_t, int64_t>{0, Bf}, {37, Bf - 1}, {0, B}, {37, B}}) {
    SCOPED_TRACE(::testing::Message() << "bins [" << first << ", " << last << ")");
    for (Mode mode : {Mode::none, Mode::stored, Mode::profiled}) {
      SCOPED_TRACE(::testing::Message() << "mode " << static_cast<int>(mode));
      VectorXd nu1, nu3;
      MatrixXd N1, N3;
      one.expected_yields(xi, first, last, mode, &nu1, &N1);
      three.expected_yields(xi, first, last, mode, &nu3, &N3);
      expect_same_bits(nu1, nu3, "expected yields");
      expect_same_bits(N1, N3, "per-process yields");
      expect_same_bits(one.yield_jacobian(xi, first, last, mode), three.yield_jacobian(xi, first, last, mode),
                       "yield Jacobian");
      expect_same_bits(one.process_yield_jacobian(xi, first, last, mode),
                       three.process_yield_jacobian(xi, first, last, mode), "per-process yield Jacobian");
    }
    if (last <= B)
      expect_same_bits(one.profiled_beta_jacobian(xi, first, last),
                       three.profiled_beta_jacobian(xi, first, last), "dβ̂/dξ");
  }
}

TEST(PostfitBinPieces, SameBitsAsOneThread) {
  for (bool sparse : {false, true})
    for (BBMode bb_mode : {BBMode::lite, BBMode::full})
      for (BBType bb_type : {BBType::gamma, BBType::normal_multiplicative, BBType::normal_additive}) {
        SCOPED_TRACE(::testing::Message() << "sparse " << sparse << " full " << (bb_mode == BBMode::full)
                                          << " type " << static_cast<int>(bb_type));
        ShardConfig c;
        c.nbins = 700;
        c.sparse = sparse;
        c.bb_mode = bb_mode;
        c.bb_type = bb_type;
        expect_pieces_match_one_thread(c);
      }
}

// Normal systematics without BB (no dβ̂/dξ), and a covariance fit (one coupled profile: not cut).
TEST(PostfitBinPieces, SameBitsWithoutBBAndForACovarianceFit) {
  ShardConfig plain;
  plain.nbins = 700;
  plain.symmetric = true;
  plain.lognormal = false;
  plain.bb = false;
  expect_pieces_match_one_thread(plain);
  ShardConfig coupled;
  coupled.nbins = 600;
  coupled.likelihood = DataLikelihood::covariance;
  coupled.bb_type = BBType::normal_additive;
  expect_pieces_match_one_thread(coupled);
}

// profiled_beta_gains (docs/output-format.md "Cost of the chi2 with many bins"): in lite mode without a
// zero-variance process, dβ̂/dξ's rows are the gains times the profiled yield Jacobian's rows (the
// BB-masked bin 4 with gain 0, the empty data bin included); 3 threads give 1 thread's bits; with a
// zero-variance process, in full mode and without BB the call gives nothing.
TEST(PostfitBinPieces, BetaGainsTimesTheYieldJacobianAreDBetaDXi) {
  for (DataLikelihood lik : {DataLikelihood::poisson, DataLikelihood::chisq})
    for (BBType bb_type : {BBType::gamma, BBType::normal_multiplicative, BBType::normal_additive}) {
      SCOPED_TRACE(::testing::Message()
                   << "likelihood " << static_cast<int>(lik) << " type " << static_cast<int>(bb_type));
      ShardConfig c;
      c.nbins = 700;
      c.likelihood = lik;
      c.bb_type = bb_type;
      c.zero_variance_process = false;
      auto in = make_test_input(c);
      auto model = make_test_model(in, c);
      CpuShardEvaluator one(model, 0, in->nbins, 1), three(model, 0, in->nbins, 3);
      const VectorXd xi = test_point(*model);
      const int64_t B = in->nbins;
      const VectorXd h = three.profiled_beta_gains(xi, 0, B);
      ASSERT_EQ(h.size(), B);
      expect_same_bits(one.profiled_beta_gains(xi, 0, B), h, "gains");
      const MatrixXd J = one.yield_jacobian(xi, 0, B, Mode::profiled);
      const MatrixXd D = one.profiled_beta_jacobian(xi, 0, B);
      ASSERT_EQ(D.rows(), B);
      const MatrixXd hJ = h.asDiagonal() * J;
      for (int64_t b = 0; b < B; ++b)
        EXPECT_LE((hJ.row(b) - D.row(b)).cwiseAbs().maxCoeff(),
                  1e-12 * std::max(D.row(b).cwiseAbs().maxCoeff(), 1e-300))
            << "bin " << b;
      EXPECT_GT(D.cwiseAbs().maxCoeff(), 0.0);
      const VectorXd part = one.profiled_beta_gains(xi, 37, 90);
      ASSERT_EQ(part.size(), 53);
      EXPECT_TRUE(part.cwiseEqual(h.segment(37, 53)).all());
    }
  ShardConfig zero_variance;  // process 2 without MC statistics
  zero_variance.nbins = 700;
  ShardConfig full = zero_variance;
  full.zero_variance_process = false;
  full.bb_mode = BBMode::full;
  ShardConfig no_bb = full;
  no_bb.bb = false;
  for (const ShardConfig* c : {&zero_variance, &full, &no_bb}) {
    auto in = make_test_input(*c);
    auto model = make_test_model(in, *c);
    CpuShardEvaluator shard(model, 0, in->nbins, 2);
    EXPECT_EQ(shard.profiled_beta_gains(test_point(*model), 0, in->nbins).size(), 0);
  }
}

TEST(PostfitBinPieces, RangeErrorsBeforeAnyPiece) {
  ShardConfig c;
  c.nbins = 700;
  auto in = make_test_input(c);
  auto model = make_test_model(in, c);
  CpuShardEvaluator shard(model, 0, in->nbins, 2);
  const VectorXd xi = test_point(*model);
  EXPECT_THROW(shard.yield_jacobian(xi, 0, in->nbinsfull + 1, Mode::stored), Error);
  EXPECT_THROW(shard.process_yield_jacobian(xi, -1, 600, Mode::stored), Error);
  EXPECT_THROW(shard.profiled_beta_jacobian(xi, 0, in->nbins + 1), Error);
  EXPECT_THROW(shard.profiled_beta_gains(xi, 0, in->nbins + 1), Error);
}

}  // namespace
}  // namespace rabbit::testing
