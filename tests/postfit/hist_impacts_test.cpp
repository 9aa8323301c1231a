// The MC-stat part of the global impacts on histogram bins (src/postfit/hist_beta_impacts.cpp;
// docs/output-format.md "Global impacts on histogram bins") against the dense formula it avoids
// building, and CompositeMapping (src/postfit/composite_mapping.cpp) against its sub-mappings.
#include <gtest/gtest.h>

#include <Eigen/LU>
#include <random>

#include "rabbit/core/error.hpp"
#include "rabbit/postfit/mapping.hpp"
#include "src/postfit/hist_beta_impacts.hpp"

namespace rabbit::testing {
namespace {

using Eigen::MatrixXd;
using Eigen::VectorXd;
using postfit::MappingJacobian;

MappingJacobian sparse_random(int64_t rows, int64_t cols, double density, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(-1.0, 1.0), keep(0.0, 1.0);
  std::vector<Eigen::Triplet<double>> t;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      if (keep(rng) < density) t.emplace_back(i, j, u(rng));
  MappingJacobian m(rows, cols);
  m.setFromTriplets(t.begin(), t.end());
  return m;
}

// rabbit's impacts_beta0 built densely: X[e, i] = S_e (M[e, i] + D[e, i]), squared and summed over e.
postfit::BetaImpacts dense_reference(const postfit::BetaImpactTerms& t, const MatrixXd& JC) {
  const MatrixXd AUH = t.A ? MatrixXd(*t.A * t.UH) : MatrixXd(t.UH);
  const int64_t ne = t.UH.cols(), ny = JC.rows(), P = t.full ? t.nproc : 1;
  const MatrixXd D = t.Hinv ? MatrixXd(*t.Hinv * AUH.transpose()) : MatrixXd(AUH.transpose());
  MatrixXd M = MatrixXd::Zero(ne, ny);
  if (t.B && t.B->size()) M.topRows(t.B->rows()) = *t.B * JC.transpose();
  MatrixXd sq = MatrixXd::Zero(ny, P);
  for (int64_t e = 0; e < ne; ++e)
    sq.col(t.full ? e % t.nproc : 0) += t.s2(e) * (M.row(e) + D.row(e)).transpose().cwiseAbs2();
  return {sq.rowwise().sum(), t.full ? sq : MatrixXd()};
}

struct Case {
  bool full, mapped, profiled, dense_h;
};

class HistBetaImpacts : public ::testing::TestWithParam<Case> {};

TEST_P(HistBetaImpacts, EqualTheDenseFormula) {
  const Case c = GetParam();
  std::mt19937_64 rng(17);
  std::uniform_real_distribution<double> pos(0.5, 2.0);
  const int64_t nbf = 7, nobs = 5, P = 3, npar = 4, ny = c.mapped ? 4 : nbf;
  const int64_t ne = c.full ? nbf * P : nbf, ne_obs = c.full ? nobs * P : nobs;
  postfit::BetaImpactTerms t;
  t.full = c.full;
  t.nproc = P;
  // U H⁻¹: each bin's own entries (one in lite mode), as the yields respond to β.
  std::vector<Eigen::Triplet<double>> u;
  for (int64_t b = 0; b < nbf; ++b)
    for (int64_t p = 0; p < (c.full ? P : 1); ++p) u.emplace_back(b, c.full ? b * P + p : b, pos(rng));
  t.UH.resize(nbf, ne);
  t.UH.setFromTriplets(u.begin(), u.end());
  t.s2 = VectorXd::NullaryExpr(ne, [&](Eigen::Index) { return pos(rng); });
  t.s2(1) = 0.0;  // a masked entry
  const MappingJacobian A = sparse_random(ny, nbf, 0.5, rng);
  if (c.mapped) t.A = &A;
  const MatrixXd B = MatrixXd::Random(ne_obs, npar);
  if (c.profiled) t.B = &B;
  MatrixXd Hinv;
  if (c.dense_h) {
    const MatrixXd R = MatrixXd::Random(ne, ne);
    Hinv = (R * R.transpose() + MatrixXd::Identity(ne, ne)).inverse();
    t.Hinv = &Hinv;
  }
  const MatrixXd JC = MatrixXd::Random(ny, npar);

  const auto got = postfit::hist_beta_impacts(t, JC);
  const auto want = dense_reference(t, JC);
  ASSERT_EQ(got.total_sq.size(), ny);
  for (int64_t i = 0; i < ny; ++i) EXPECT_NEAR(got.total_sq(i), want.total_sq(i), 1e-12) << i;
  if (!c.full) {
    EXPECT_EQ(got.per_process_sq.size(), 0);
    return;
  }
  ASSERT_EQ(got.per_process_sq.rows(), ny);
  ASSERT_EQ(got.per_process_sq.cols(), P);
  for (int64_t i = 0; i < ny; ++i)
    for (int64_t p = 0; p < P; ++p) EXPECT_NEAR(got.per_process_sq(i, p), want.per_process_sq(i, p), 1e-12);
}

INSTANTIATE_TEST_SUITE_P(Forms, HistBetaImpacts,
                         ::testing::Values(Case{false, false, true, false}, Case{false, true, true, false},
                                           Case{true, false, true, false}, Case{true, true, true, false},
                                           Case{false, true, false, false}, Case{true, true, false, false},
                                           Case{false, true, true, true}, Case{true, true, true, true}));

AxisInfo axis(const std::string& name, int64_t size) {
  AxisInfo a;
  a.kind = "regular";
  a.name = name;
  a.size = size;
  return a;
}

/// "obs" (axes a: 2, b: 3), "obs2" (x: 2), then the masked "masked" (x: 3); two processes.
FitInputData composite_input() {
  FitInputData in;
  ChannelInfo obs, obs2, masked;
  obs.name = "obs";
  obs.axes = {axis("a", 2), axis("b", 3)};
  obs.start = 0;
  obs.stop = 6;
  obs2.name = "obs2";
  obs2.axes = {axis("x", 2)};
  obs2.start = 6;
  obs2.stop = 8;
  masked.name = "masked";
  masked.masked = true;
  masked.axes = {axis("x", 3)};
  masked.start = 8;
  masked.stop = 11;
  in.channels = {obs, obs2, masked};
  in.nbins = 8;
  in.nbinsfull = 11;
  in.nproc = 2;
  return in;
}

std::unique_ptr<postfit::Mapping> composite(const FitInputData& in,
                                            const std::vector<std::vector<std::string>>& tokens) {
  std::vector<std::unique_ptr<postfit::Mapping>> parts;
  for (const auto& t : tokens) parts.push_back(postfit::make_mapping(in, t));
  return postfit::make_composite_mapping(std::move(parts));
}

TEST(CompositeMapping, ConcatenatesItsMappingsUnderRenamedChannels) {
  const auto in = composite_input();
  const auto m = composite(in, {{"Project", "obs", "b"}, {"Normalize", "obs2", "x"}});
  EXPECT_EQ(m->key(), "CompositeMapping");
  ASSERT_EQ(m->channels().size(), 2u);
  EXPECT_EQ(m->channels()[0].name, "Project obs b obs");
  EXPECT_EQ(m->channels()[1].name, "Normalize obs2 x obs2");
  EXPECT_EQ(m->channels()[1].start, 3);
  EXPECT_EQ(m->channels()[1].stop, 5);
  EXPECT_EQ(m->size(), 5);
  EXPECT_TRUE(m->has_data());
  EXPECT_EQ(m->observed_size(), 5);
  EXPECT_EQ(m->ndf_reduction(), 1);  // Normalize's
  const VectorXd nu = VectorXd::LinSpaced(11, 1.0, 11.0);
  const VectorXd y = m->apply(nu);
  EXPECT_EQ(y.head(3), (VectorXd(3) << 1 + 4, 2 + 5, 3 + 6).finished());
  EXPECT_NEAR(y(3), 7.0 / 15.0, 1e-15);
  EXPECT_NEAR(y(4), 8.0 / 15.0, 1e-15);
  // The Jacobian is the sub-Jacobians one under the other, per process too.
  const auto p = postfit::make_mapping(in, {"Project", "obs", "b"});
  const auto n = postfit::make_mapping(in, {"Normalize", "obs2", "x"});
  const MatrixXd J = MatrixXd(m->jacobian(nu));
  EXPECT_EQ(J.topRows(3), MatrixXd(p->jacobian(nu)));
  EXPECT_EQ(J.bottomRows(2), MatrixXd(n->jacobian(nu)));
  const MatrixXd N = MatrixXd::Random(11, 2).cwiseAbs();
  const MatrixXd Y = m->apply_per_process(N);
  EXPECT_EQ(Y.topRows(3), p->apply_per_process(N));
  EXPECT_EQ(Y.bottomRows(2), n->apply_per_process(N));
  const MatrixXd Jp = MatrixXd(m->jacobian_per_process(N));
  EXPECT_EQ(Jp.topRows(6), MatrixXd(p->jacobian_per_process(N)));
  EXPECT_EQ(Jp.bottomRows(4), MatrixXd(n->jacobian_per_process(N)));
}

TEST(CompositeMapping, HasDataOnlyWhenEveryMappingHas) {
  const auto in = composite_input();
  const auto m = composite(in, {{"Project", "masked", "x"}, {"Project", "obs", "a"}});
  EXPECT_FALSE(m->has_data());
  EXPECT_EQ(m->channels()[0].name, "Project masked x masked");
  EXPECT_TRUE(m->channels()[0].masked);
}

TEST(CompositeMapping, BaseMappingWithMaskedChannelsOnlyLast) {
  const auto in = composite_input();
  const auto last = composite(in, {{"Project", "obs", "a"}, {"BaseMapping"}});
  EXPECT_EQ(last->observed_size(), 2 + 8);
  EXPECT_EQ(last->size(), 2 + 11);
  try {
    composite(in, {{"BaseMapping"}, {"Project", "obs", "a"}});
    FAIL() << "no OptionError";
  } catch (const OptionError& e) {
    EXPECT_NE(std::string(e.what()).find("--compositeMapping"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("BaseMapping"), std::string::npos) << e.what();
  }
  EXPECT_THROW(postfit::make_composite_mapping({}), OptionError);
}

}  // namespace
}  // namespace rabbit::testing
