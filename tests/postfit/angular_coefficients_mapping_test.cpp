// AngularCoefficients and LamTung (src/postfit/angular_coefficients_mapping.cpp; docs/user-guide.md
// "Mappings"): values against hand computations, the Jacobian against central differences, rabbit's
// keys, axes and has_data, and one-line -m errors.
#include <gtest/gtest.h>

#include "rabbit/core/error.hpp"
#include "rabbit/postfit/mapping.hpp"
#include "support/finite_differences.hpp"

namespace rabbit::testing {
namespace {

using Eigen::MatrixXd;
using Eigen::VectorXd;

AxisInfo axis(const std::string& name, int64_t size) {
  AxisInfo a;
  a.kind = "regular";
  a.name = name;
  a.size = size;
  for (int64_t i = 0; i <= size; ++i) a.edges.push_back(static_cast<double>(i));
  return a;
}

/// Channel "ang": y (2) × helicity (5) × pt (3), row-major, so that the helicity axis sits between two
/// others; "flat": x (4), no helicity axis; "both": helicity (2) × helicitySig (3), rabbit takes
/// helicitySig. Two processes.
FitInputData input() {
  FitInputData in;
  ChannelInfo ang, flat, both;
  ang.name = "ang";
  ang.axes = {axis("y", 2), axis("helicity", 5), axis("pt", 3)};
  ang.start = 0;
  ang.stop = 30;
  flat.name = "flat";
  flat.axes = {axis("x", 4)};
  flat.start = 30;
  flat.stop = 34;
  both.name = "both";
  both.axes = {axis("helicity", 2), axis("helicitySig", 3)};
  both.start = 34;
  both.stop = 40;
  in.channels = {ang, flat, both};
  in.nbins = 40;
  in.nbinsfull = 40;
  in.nproc = 2;
  in.procs = {"sig", "bkg"};
  return in;
}

VectorXd nu() {
  VectorXd v(40);
  for (int b = 0; b < 40; ++b) v(b) = 1.0 + b + 0.1 * b * b;
  return v;
}

std::unique_ptr<postfit::Mapping> make(const std::vector<std::string>& tokens) {
  return postfit::make_mapping(input(), tokens);
}

std::string option_error(const std::vector<std::string>& tokens) {
  try {
    make(tokens);
  } catch (const OptionError& e) {
    return e.what();
  }
  return "<no OptionError>";
}

// ν of channel "ang" at (y, helicity, pt).
double ang(const VectorXd& n, int y, int h, int pt) {
  return n(y * 15 + h * 3 + pt);
}

TEST(AngularCoefficientsMapping, RatiosToTheUnpolarisedBinOnAnAiAxis) {
  const VectorXd n = nu();
  const auto m = make({"AngularCoefficients", "ang"});
  EXPECT_EQ(m->key(), "AngularCoefficients ang");
  EXPECT_FALSE(m->has_data());
  EXPECT_EQ(m->observed_size(), 0);
  EXPECT_FALSE(m->has_per_process());
  EXPECT_FALSE(m->needs_processes());
  const auto& ch = m->channels().at(0);
  EXPECT_EQ(ch.name, "ang");
  ASSERT_EQ(ch.axes.size(), 3u);
  EXPECT_EQ(ch.axes[0].name, "y");
  EXPECT_EQ(ch.axes[1].name, "ai");
  EXPECT_EQ(ch.axes[1].size, 4);
  EXPECT_EQ(ch.axes[2].name, "pt");
  const VectorXd a = m->apply(n);
  ASSERT_EQ(a.size(), 24);
  for (int y = 0; y < 2; ++y)
    for (int i = 0; i < 4; ++i)
      for (int pt = 0; pt < 3; ++pt)
        EXPECT_DOUBLE_EQ(a(y * 12 + i * 3 + pt), ang(n, y, i + 1, pt) / ang(n, y, 0, pt));
}

TEST(AngularCoefficientsMapping, SelectionAppliesToBothTermsAndHelicitySigIsPreferred) {
  const VectorXd n = nu();
  auto m = make({"AngularCoefficients", "ang", "sig,bkg", "pt:sum,y:1"});
  EXPECT_EQ(m->key(), "AngularCoefficients ang sig,bkg pt:sum,y:1");
  ASSERT_EQ(m->channels()[0].axes.size(), 1u);
  EXPECT_EQ(m->channels()[0].axes[0].name, "ai");
  const VectorXd a = m->apply(n);
  ASSERT_EQ(a.size(), 4);
  for (int i = 0; i < 4; ++i) {
    double num = 0, den = 0;
    for (int pt = 0; pt < 3; ++pt) num += ang(n, 1, i + 1, pt), den += ang(n, 1, 0, pt);
    EXPECT_DOUBLE_EQ(a(i), num / den);
  }
  m = make({"AngularCoefficients", "both"});
  ASSERT_EQ(m->channels()[0].axes.size(), 2u);
  EXPECT_EQ(m->channels()[0].axes[0].name, "helicity");
  EXPECT_EQ(m->channels()[0].axes[1].name, "ai");
  EXPECT_EQ(m->channels()[0].axes[1].size, 2);
  EXPECT_DOUBLE_EQ(m->apply(n)(2), n(34 + 3 + 1) / n(34 + 3));  // helicity 1, helicitySig 1 over 0
}

TEST(LamTungMapping, A0MinusA2WithoutTheAiAxis) {
  const VectorXd n = nu();
  const auto m = make({"LamTung", "ang", "y:sum"});
  EXPECT_EQ(m->key(), "LamTung ang y:sum");
  EXPECT_FALSE(m->has_data());
  ASSERT_EQ(m->channels()[0].axes.size(), 1u);
  EXPECT_EQ(m->channels()[0].axes[0].name, "pt");
  const VectorXd lt = m->apply(n);
  ASSERT_EQ(lt.size(), 3);
  for (int pt = 0; pt < 3; ++pt) {
    double s1 = 0, s3 = 0, s0 = 0;
    for (int y = 0; y < 2; ++y) s1 += ang(n, y, 1, pt), s3 += ang(n, y, 3, pt), s0 += ang(n, y, 0, pt);
    EXPECT_DOUBLE_EQ(lt(pt), (s1 - s3) / s0);
  }
}

TEST(AngularCoefficientsMapping, ACompositeWithItHasNoPerProcessHistograms) {
  std::vector<std::unique_ptr<postfit::Mapping>> parts;
  parts.push_back(make({"Select", "flat"}));
  EXPECT_TRUE(postfit::make_composite_mapping(std::move(parts))->has_per_process());
  parts.clear();
  parts.push_back(make({"Select", "flat"}));
  parts.push_back(make({"AngularCoefficients", "ang"}));
  EXPECT_FALSE(postfit::make_composite_mapping(std::move(parts))->has_per_process());
}

TEST(AngularCoefficientsMapping, JacobiansMatchCentralDifferences) {
  const VectorXd x = nu();
  for (const auto& tokens : std::vector<std::vector<std::string>>{{"AngularCoefficients", "ang"},
                                                                  {"AngularCoefficients", "ang", "pt:sum"},
                                                                  {"AngularCoefficients", "both"},
                                                                  {"LamTung", "ang"},
                                                                  {"LamTung", "ang", "y:sum"}}) {
    const auto m = make(tokens);
    // step 1e-5: the truncation error h²·n/d⁴ stays below 1e-8 with σ_UL bins as small as 1
    const MatrixXd fd = test::central_jacobian([&](const VectorXd& v) { return m->apply(v); }, x, 1e-5);
    EXPECT_LT((MatrixXd(m->jacobian(x)) - fd).cwiseAbs().maxCoeff(), 1e-8) << m->key();
  }
}

TEST(AngularCoefficientsMapping, BadArgumentsAreOneLineNamingTheMapping) {
  EXPECT_EQ(option_error({"AngularCoefficients"}), "-m AngularCoefficients: a channel name is required");
  EXPECT_EQ(option_error({"LamTung", "nope"}), "-m LamTung: unknown channel nope");
  EXPECT_EQ(option_error({"AngularCoefficients", "flat"}),
            "-m AngularCoefficients: channel flat has no helicity axis (helicitySig or helicity; it has x)");
  EXPECT_EQ(option_error({"AngularCoefficients", "ang", "sig"}),
            "-m AngularCoefficients: unexpected argument sig (expected CHANNEL [PROCESSES SELECTION] or "
            "CHANNEL [SELECTION])");
  EXPECT_EQ(option_error({"AngularCoefficients", "ang", "top", "pt:sum"}),
            "-m AngularCoefficients: unknown process top (the input has sig, bkg)");
  EXPECT_EQ(option_error({"LamTung", "ang", "helicity:sum"}),
            "-m LamTung: bad axis selection helicity:slice(1,None),helicity:sum: axis helicity given twice");
  EXPECT_EQ(option_error({"LamTung", "both"}),
            "-m LamTung: A_0 - A_2 needs helicity bins 1 and 3 of helicitySig (2 bins above 0)");
  EXPECT_EQ(option_error({"LamTung", "ang", "q:sum"}), "-m LamTung: unknown axis q of channel ang");
}

}  // namespace
}  // namespace rabbit::testing
