// The saturated model of a Project mapping (include/rabbit/postfit/saturated_projection.hpp;
// docs/output-format.md "Saturated projection tests"): the bin groups and rabbit's parameter names of
// a projection, and the input with one free systematic per group, whose yields are the file's times
// e^θ in the group's bins, on dense, sparse and symmetric tensors.
#include "rabbit/postfit/saturated_projection.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "rabbit/core/error.hpp"
#include "rabbit/fit/make_fitter.hpp"
#include "rabbit/model/model.hpp"
#include "support/test_paths.hpp"

namespace rabbit::testing {
namespace {

using Eigen::VectorXd;

std::string reference_tensor(const std::string& name) {
  return (test::source_dir() / "tests" / "reference" / "tensors" / name).string();
}

std::string option_error(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const OptionError& e) {
    return e.what();
  }
  return "<no OptionError>";
}

// dense.hdf5: ch0 (x: 10 bins), ch1 (a: 10 × b: 5, row-major, bins 10..59), masked ch0_masked.
TEST(SaturatedProjection, GroupsAndNamesFollowTheKeptAxesInTheOrderGiven) {
  const FitInputData in = read_fit_input(reference_tensor("dense.hdf5"));
  const auto mapping = postfit::make_mapping(in, {"Project", "ch1", "b", "a"});
  const postfit::BinGroups g = postfit::projection_groups(in, *mapping);
  ASSERT_EQ(g.size(), 50);
  EXPECT_EQ(g.names.front(), "saturated_ch1_b0_a0");
  EXPECT_EQ(g.names[1], "saturated_ch1_b0_a1");
  EXPECT_EQ(g.names.back(), "saturated_ch1_b4_a9");
  ASSERT_EQ(static_cast<int64_t>(g.group_of_bin.size()), in.nbinsfull);
  for (int64_t b = 0; b < in.nbinsfull; ++b) {
    const bool in_ch1 = b >= 10 && b < 60;
    const int64_t ia = (b - 10) / 5, ib = (b - 10) % 5;
    EXPECT_EQ(g.group_of_bin[b], in_ch1 ? ib * 10 + ia : -1) << b;
  }
  const auto x = postfit::projection_groups(in, *postfit::make_mapping(in, {"Project", "ch0", "x"}));
  EXPECT_EQ(x.names, (std::vector<std::string>{"saturated_ch0_x0", "saturated_ch0_x1", "saturated_ch0_x2",
                                               "saturated_ch0_x3", "saturated_ch0_x4", "saturated_ch0_x5",
                                               "saturated_ch0_x6", "saturated_ch0_x7", "saturated_ch0_x8",
                                               "saturated_ch0_x9"}));
}

TEST(SaturatedProjection, RefusesWhatRabbitCannotFit) {
  const FitInputData in = read_fit_input(reference_tensor("dense.hdf5"));
  auto groups = [&](std::vector<std::string> tokens) {
    return option_error([&] { postfit::projection_groups(in, *postfit::make_mapping(in, tokens)); });
  };
  EXPECT_EQ(
      groups({"Project", "ch0_masked", "x"}),
      "--computeSaturatedProjectionTests: -m Project ch0_masked x: channel ch0_masked is masked (it has no "
      "data to saturate)");
  EXPECT_EQ(
      groups({"Project", "ch1"}),
      "--computeSaturatedProjectionTests: -m Project ch1: a projection without kept axes has no saturated "
      "test in rabbit");
  EXPECT_EQ(
      groups({"Normalize", "ch1", "b"}),
      "--computeSaturatedProjectionTests: -m Normalize ch1 b: only Project mappings have a saturated test");
  const FitInputData normal = read_fit_input(reference_tensor("normal.hdf5"));
  const auto g = postfit::projection_groups(normal, *postfit::make_mapping(normal, {"Project", "ch1", "a"}));
  EXPECT_NE(option_error([&] { postfit::with_free_group_scales(normal, g); }).find("systematic_type normal"),
            std::string::npos);
}

VectorXd expected_yields(const std::shared_ptr<const FitInputData>& input, const VectorXd& x) {
  auto model = build_model(input, ModelOptions{});
  FitterOptions fo;
  fo.backend = Backend::cpu;
  fo.threads = 1;
  auto fitter = make_fitter(model, fo);
  VectorXd nu;
  fitter->yield_model().expected_yields(model->parameters.effective(x), 0, input->nbinsfull,
                                        YieldModel::BetaMode::stored, &nu);
  return nu;
}

class SaturatedInput : public ::testing::TestWithParam<std::string> {};

// ν of the saturated input at (x, θ) = ν of the file at x, times e^θ_g in the bins of group g: the free
// normalisation of rabbit's SaturatedProjectModel, s² = e^θ, on every process.
TEST_P(SaturatedInput, ScalesEveryProcessOfAGroupsBins) {
  auto in = std::make_shared<const FitInputData>(read_fit_input(reference_tensor(GetParam())));
  const postfit::BinGroups g =
      postfit::projection_groups(*in, *postfit::make_mapping(*in, {"Project", "ch1", "a"}));
  auto sat = std::make_shared<const FitInputData>(postfit::with_free_group_scales(*in, g));
  ASSERT_EQ(sat->nsyst, in->nsyst + 10);
  EXPECT_EQ(sat->nsystnoconstraint, in->nsystnoconstraint + 10);
  EXPECT_EQ(sat->systs.back(), "saturated_ch1_a9");
  EXPECT_EQ(sat->constraintweights.tail(10), VectorXd::Zero(10));

  auto base = build_model(in, ModelOptions{});
  VectorXd x = base->parameters.x_default;
  const int64_t first_syst = base->parameters.nparams();
  for (int64_t s = 0; s < in->nsyst; ++s)
    x(first_syst + s) = 0.7 * std::sin(1.0 + s);  // both interpolation sides
  VectorXd theta(10);
  for (int64_t k = 0; k < 10; ++k) theta(k) = 0.15 * k - 0.6;
  VectorXd xs(x.size() + 10);
  xs << x, theta;

  const VectorXd nu = expected_yields(in, x), nus = expected_yields(sat, xs);
  ASSERT_EQ(nu.size(), nus.size());
  for (int64_t b = 0; b < nu.size(); ++b) {
    const int64_t k = g.group_of_bin[b];
    const double want = k >= 0 ? nu(b) * std::exp(theta(k)) : nu(b);
    EXPECT_NEAR(nus(b), want, 1e-12 * std::abs(want)) << GetParam() << " bin " << b;
  }
}

INSTANTIATE_TEST_SUITE_P(Tensors, SaturatedInput,
                         ::testing::Values("dense.hdf5", "sparse_blosc2.hdf5", "symmetric.hdf5"),
                         [](const auto& info) {
                           std::string s = info.param;
                           return s.substr(0, s.find('.'));
                         });

}  // namespace
}  // namespace rabbit::testing
