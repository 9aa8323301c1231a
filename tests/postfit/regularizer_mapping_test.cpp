// The postfit mappings as -r mappings (src/postfit/regularizer_mapping.cpp; docs/model.md "The
// regularisation term"): the matrix and shape of linear mappings, axis selections included, and one-line
// errors naming -r/--regularization for the others.
#include "rabbit/postfit/regularizer_mapping.hpp"

#include <gtest/gtest.h>

#include "rabbit/core/error.hpp"
#include "rabbit/model/regularizer.hpp"

namespace rabbit::testing {
namespace {

using Eigen::MatrixXd;
using Eigen::VectorXd;

AxisInfo regular_axis(const std::string& name, int64_t size) {
  AxisInfo a;
  a.kind = "regular";
  a.name = name;
  a.size = size;
  for (int64_t i = 0; i <= size; ++i) a.edges.push_back(static_cast<double>(i));
  return a;
}

/// "obs" a (2) × b (3), row-major, then the masked "masked" x (4); one process.
FitInputData input() {
  FitInputData in;
  ChannelInfo obs, masked;
  obs.name = "obs";
  obs.axes = {regular_axis("a", 2), regular_axis("b", 3)};
  obs.start = 0;
  obs.stop = 6;
  masked.name = "masked";
  masked.masked = true;
  masked.axes = {regular_axis("x", 4)};
  masked.start = 6;
  masked.stop = 10;
  in.channels = {obs, masked};
  in.nbins = 6;
  in.nbinsmasked = 4;
  in.nbinsfull = 10;
  in.nproc = 1;
  in.procs = {"p"};
  return in;
}

std::string error_of(const std::vector<std::string>& tokens) {
  try {
    postfit::regularizer_mapping(input(), tokens);
  } catch (const OptionError& e) {
    return e.what();
  }
  return "";
}

TEST(RegularizerMapping, LinearMappingsGiveTheirMatrixAndShape) {
  const VectorXd nu = VectorXd::LinSpaced(10, 1.0, 10.0);
  const auto select = postfit::regularizer_mapping(input(), {"Select", "masked"});
  EXPECT_EQ(select.shape, (std::vector<int64_t>{4}));
  EXPECT_EQ(VectorXd(select.matrix * nu), nu.tail(4));
  const auto project = postfit::regularizer_mapping(input(), {"Project", "obs", "b"});
  EXPECT_EQ(project.shape, (std::vector<int64_t>{3}));
  EXPECT_EQ(VectorXd(project.matrix * nu), Eigen::Vector3d(1 + 4, 2 + 5, 3 + 6));
  // an axis selection, which the regulariser's own Select/Project did not take
  const auto sliced = postfit::regularizer_mapping(input(), {"Select", "masked", "x:slice(1,3)"});
  EXPECT_EQ(sliced.shape, (std::vector<int64_t>{2}));
  EXPECT_EQ(VectorXd(sliced.matrix * nu), Eigen::Vector2d(8, 9));
  const auto summed = postfit::regularizer_mapping(input(), {"Select", "obs", "a:sum"});
  EXPECT_EQ(summed.shape, (std::vector<int64_t>{3}));
  EXPECT_EQ(VectorXd(summed.matrix * nu), Eigen::Vector3d(1 + 4, 2 + 5, 3 + 6));
  // the SVD regulariser on it: 2-D obs
  SvdRegularizer reg(postfit::regularizer_mapping(input(), {"Select", "obs"}));
  EXPECT_EQ(reg.shape(), (std::vector<int64_t>{2, 3}));
}

TEST(RegularizerMapping, OneLineErrorsNameTheOption) {
  EXPECT_EQ(
      error_of({"Normalize", "masked"}),
      "-r/--regularization SVD Normalize masked: mapping Normalize is not linear in the yields; supported: "
      "BaseMapping, Select, Project");
  EXPECT_EQ(error_of({"BaseMapping"}),
            "-r/--regularization SVD BaseMapping: the mapping gives 2 channels; a regulariser takes one (use "
            "one -r "
            "per channel)");
  EXPECT_EQ(error_of({"Select"}), "-r/--regularization SVD Select: a channel name is required");
  EXPECT_EQ(error_of({"Select", "masked", "p"}),
            "-r/--regularization SVD Select masked p: a mapping that selects processes is not supported (the "
            "penalty reads the yields summed over processes)");
  try {
    SvdRegularizer reg(postfit::regularizer_mapping(input(), {"Project", "obs"}));
    FAIL() << "no axes accepted";
  } catch (const OptionError& e) {
    EXPECT_EQ(std::string(e.what()),
              "-r/--regularization SVD Project obs: the mapping has 0 axes; 1 to 3 are supported");
  }
}

}  // namespace
}  // namespace rabbit::testing
