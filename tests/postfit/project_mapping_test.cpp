// Project and Normalize (src/postfit/project_mapping.cpp; docs/output-format.md "Mappings"): values
// against hand sums, Jacobians against central differences, the per-process forms, and -m errors.
#include <gtest/gtest.h>

#include "rabbit/core/error.hpp"
#include "rabbit/postfit/mapping.hpp"
#include "support/finite_differences.hpp"

namespace rabbit::testing {
namespace {

using Eigen::MatrixXd;
using Eigen::VectorXd;

AxisInfo axis(const std::string& name, int64_t size, bool flow = false) {
  AxisInfo a;
  a.kind = "regular";
  a.name = name;
  a.size = size;
  a.underflow = a.overflow = flow;
  return a;
}

/// Channel "obs" with axes a (2 bins) and b (3 bins), bins row-major (ν_{a,b} at a·3 + b), then the
/// masked channel "masked" with axis x (3 bins); two processes.
FitInputData two_axis_input() {
  FitInputData in;
  ChannelInfo obs, masked;
  obs.name = "obs";
  obs.axes = {axis("a", 2), axis("b", 3)};
  obs.start = 0;
  obs.stop = 6;
  masked.name = "masked";
  masked.masked = true;
  masked.axes = {axis("x", 3)};
  masked.start = 6;
  masked.stop = 9;
  in.channels = {obs, masked};
  in.nbins = 6;
  in.nbinsfull = 9;
  in.nproc = 2;
  return in;
}

std::string option_error(const FitInputData& in, const std::vector<std::string>& tokens) {
  try {
    postfit::make_mapping(in, tokens);
  } catch (const OptionError& e) {
    return e.what();
  }
  return "<no OptionError>";
}

const VectorXd kNu = (VectorXd(9) << 1, 2, 3, 4, 5, 6, 7, 8, 9).finished();

TEST(ProjectMapping, SumsOverTheAxesNotNamed) {
  const auto in = two_axis_input();
  const auto m = postfit::make_mapping(in, {"Project", "obs", "b"});
  EXPECT_EQ(m->name(), "Project");
  EXPECT_EQ(m->key(), "Project obs b");
  ASSERT_EQ(m->channels().size(), 1u);
  EXPECT_EQ(m->channels()[0].name, "obs");
  ASSERT_EQ(m->channels()[0].axes.size(), 1u);
  EXPECT_EQ(m->channels()[0].axes[0].name, "b");
  EXPECT_EQ(m->size(), 3);
  EXPECT_TRUE(m->has_data());
  EXPECT_EQ(m->observed_size(), 3);
  EXPECT_EQ(m->ndf_reduction(), 0);
  EXPECT_FALSE(m->is_identity());
  EXPECT_EQ(m->apply(kNu), (VectorXd(3) << 1 + 4, 2 + 5, 3 + 6).finished());
}

TEST(ProjectMapping, KeepsTheAxesInTheOrderGiven) {
  const auto in = two_axis_input();
  const auto m = postfit::make_mapping(in, {"Project", "obs", "b", "a"});
  EXPECT_EQ(m->key(), "Project obs b a");
  EXPECT_EQ(m->channels()[0].axes[0].name, "b");
  EXPECT_EQ(m->channels()[0].axes[1].name, "a");
  // y_{b,a} at b·2 + a = ν_{a,b}: the channel transposed.
  EXPECT_EQ(m->apply(kNu), (VectorXd(6) << 1, 4, 2, 5, 3, 6).finished());
}

TEST(ProjectMapping, NoAxesGiveTheChannelTotal) {
  const auto in = two_axis_input();
  const auto m = postfit::make_mapping(in, {"Project", "obs"});
  EXPECT_EQ(m->key(), "Project obs");
  EXPECT_TRUE(m->channels()[0].axes.empty());
  EXPECT_EQ(m->apply(kNu), (VectorXd(1) << 21).finished());
}

TEST(ProjectMapping, MaskedChannelHasNoData) {
  const auto in = two_axis_input();
  const auto m = postfit::make_mapping(in, {"Project", "masked", "x"});
  EXPECT_FALSE(m->has_data());
  EXPECT_EQ(m->observed_size(), 0);
  EXPECT_EQ(m->apply(kNu), (VectorXd(3) << 7, 8, 9).finished());
}

TEST(ProjectMapping, FlowBinsCountWhenTheChannelHasFlow) {
  FitInputData in;
  ChannelInfo ch;
  ch.name = "obs";
  ch.flow = true;
  ch.axes = {axis("a", 1, true), axis("b", 2)};  // extents 3 and 2
  ch.stop = 6;
  in.channels = {ch};
  in.nbins = in.nbinsfull = 6;
  in.nproc = 1;
  const auto m = postfit::make_mapping(in, {"Project", "obs", "a"});
  EXPECT_TRUE(m->channels()[0].flow);
  EXPECT_EQ(m->apply(kNu.head(6)), (VectorXd(3) << 3, 7, 11).finished());
}

TEST(ProjectMapping, PerProcessSumsEachProcess) {
  const auto in = two_axis_input();
  const auto m = postfit::make_mapping(in, {"Project", "obs", "b"});
  MatrixXd N(9, 2);
  N.col(0) = kNu;
  N.col(1) = 10 * kNu;
  const MatrixXd Y = m->apply_per_process(N);
  EXPECT_EQ(Y.col(0), m->apply(kNu));
  EXPECT_EQ(Y.col(1), m->apply(10 * kNu));
}

TEST(NormalizeMapping, DividesTheProjectionByTheChannelTotal) {
  const auto in = two_axis_input();
  const auto m = postfit::make_mapping(in, {"Normalize", "obs", "b"});
  EXPECT_EQ(m->name(), "Normalize");
  EXPECT_EQ(m->key(), "Normalize obs b");
  EXPECT_EQ(m->ndf_reduction(), 1);
  EXPECT_TRUE(m->apply(kNu).isApprox((VectorXd(3) << 5, 7, 9).finished() / 21.0, 1e-15));
  // Per process the norm is the channel's sum over all processes (rabbit's reduce_sum of the tensor).
  MatrixXd N(9, 2);
  N.col(0) = kNu;
  N.col(1) = 2 * kNu;
  const MatrixXd Y = m->apply_per_process(N);
  EXPECT_TRUE(Y.col(0).isApprox((VectorXd(3) << 5, 7, 9).finished() / 63.0, 1e-15));
  EXPECT_TRUE(Y.col(1).isApprox((VectorXd(3) << 10, 14, 18).finished() / 63.0, 1e-15));
}

class JacobianTest : public ::testing::TestWithParam<std::vector<std::string>> {};

TEST_P(JacobianTest, MatchesCentralDifferences) {
  const auto in = two_axis_input();
  const auto m = postfit::make_mapping(in, GetParam());
  const VectorXd nu = kNu + VectorXd::LinSpaced(9, 0.1, 0.9);
  const MatrixXd fd = test::central_jacobian([&](const VectorXd& x) { return m->apply(x); }, nu, 1e-5);
  EXPECT_LT((MatrixXd(m->jacobian(nu)) - fd).cwiseAbs().maxCoeff(), 1e-9);
  // Per process: vec(Y) row-major (i·nproc + p) against vec(N) row-major (b·nproc + p).
  const int64_t P = 2;
  MatrixXd N(9, P);
  N.col(0) = nu;
  N.col(1) = nu.reverse();
  auto flat = [&](const VectorXd& v) {
    MatrixXd n(9, P);
    for (int64_t b = 0; b < 9; ++b)
      for (int64_t p = 0; p < P; ++p) n(b, p) = v(b * P + p);
    const MatrixXd y = m->apply_per_process(n);
    VectorXd out(y.size());
    for (int64_t i = 0; i < y.rows(); ++i)
      for (int64_t p = 0; p < P; ++p) out(i * P + p) = y(i, p);
    return out;
  };
  VectorXd v(9 * P);
  for (int64_t b = 0; b < 9; ++b)
    for (int64_t p = 0; p < P; ++p) v(b * P + p) = N(b, p);
  const MatrixXd fdp = test::central_jacobian(flat, v, 1e-5);
  EXPECT_LT((MatrixXd(m->jacobian_per_process(N)) - fdp).cwiseAbs().maxCoeff(), 1e-9);
}

INSTANTIATE_TEST_SUITE_P(ProjectAndNormalize, JacobianTest,
                         ::testing::Values(std::vector<std::string>{"Project", "obs", "b", "a"},
                                           std::vector<std::string>{"Project", "masked"},
                                           std::vector<std::string>{"Normalize", "obs", "b"},
                                           std::vector<std::string>{"Normalize", "masked", "x"}));

TEST(ProjectMapping, BadArgumentsNameTheMappingAndTheArgument) {
  const auto in = two_axis_input();
  EXPECT_EQ(option_error(in, {"Project"}), "-m Project: a channel name is required");
  EXPECT_EQ(option_error(in, {"Project", "ch9", "x"}), "-m Project: unknown channel ch9");
  EXPECT_EQ(option_error(in, {"Normalize", "obs", "z"}), "-m Normalize: unknown axis z of channel obs");
  EXPECT_EQ(option_error(in, {"Project", "obs", "a", "a"}), "-m Project: axis a given twice");
}

}  // namespace
}  // namespace rabbit::testing
