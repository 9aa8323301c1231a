// Select and the Ratio family (src/postfit/{term,select_mapping,ratio_mapping}.cpp; docs/user-guide.md
// "Mappings"): values against hand computations, Jacobians (inclusive, per process and over the
// per-process yields) against central differences, rabbit's keys, channel names and axes, and -m errors.
#include <gtest/gtest.h>

#include "rabbit/core/error.hpp"
#include "rabbit/postfit/mapping.hpp"
#include "support/finite_differences.hpp"

namespace rabbit::testing {
namespace {

using Eigen::MatrixXd;
using Eigen::VectorXd;

AxisInfo axis(const std::string& name, int64_t size, double lo = 0.0) {
  AxisInfo a;
  a.kind = "regular";
  a.name = name;
  a.size = size;
  for (int64_t i = 0; i <= size; ++i) a.edges.push_back(lo + static_cast<double>(i));
  return a;
}

/// Channel "obs": axes a (2 bins, edges 0,1,2) × b (4 bins, edges 0..4), row-major; channel "other":
/// axis c (4 bins); masked channel "masked": axis b (4 bins) as obs's. Three processes.
FitInputData input() {
  FitInputData in;
  ChannelInfo obs, other, masked;
  obs.name = "obs";
  obs.axes = {axis("a", 2), axis("b", 4)};
  obs.start = 0;
  obs.stop = 8;
  other.name = "other";
  other.axes = {axis("c", 4)};
  other.start = 8;
  other.stop = 12;
  masked.name = "masked";
  masked.masked = true;
  masked.axes = {axis("b", 4)};
  masked.start = 12;
  masked.stop = 16;
  in.channels = {obs, other, masked};
  in.nbins = 12;
  in.nbinsfull = 16;
  in.nproc = 3;
  in.procs = {"sig", "bkg", "bkg_2"};
  return in;
}

/// N [16 × 3]: N(b, p) = (b + 1)·(p + 1) + p, so that every process differs from every other.
MatrixXd yields() {
  MatrixXd n(16, 3);
  for (int b = 0; b < 16; ++b)
    for (int p = 0; p < 3; ++p) n(b, p) = (b + 1.0) * (p + 1.0) + p;
  return n;
}
VectorXd nu() {
  return yields().rowwise().sum();
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

// vec(N) with index b·P + p, as the Mapping interface orders it.
VectorXd vec(const MatrixXd& n) {
  VectorXd v(n.size());
  for (int64_t b = 0; b < n.rows(); ++b)
    for (int64_t p = 0; p < n.cols(); ++p) v(b * n.cols() + p) = n(b, p);
  return v;
}
MatrixXd unvec(const VectorXd& v, int64_t P) {
  MatrixXd n(v.size() / P, P);
  for (int64_t b = 0; b < n.rows(); ++b)
    for (int64_t p = 0; p < P; ++p) n(b, p) = v(b * P + p);
  return n;
}

void expect_jacobians_match_differences(const postfit::Mapping& m) {
  const VectorXd x = nu();
  const MatrixXd fd = test::central_jacobian([&](const VectorXd& v) { return m.apply(v); }, x, 1e-4);
  EXPECT_LT((MatrixXd(m.jacobian(x)) - fd).cwiseAbs().maxCoeff(), 1e-8) << m.key();
  const VectorXd xn = vec(yields());
  const MatrixXd fdn =
      test::central_jacobian([&](const VectorXd& v) { return m.apply_processes(unvec(v, 3)); }, xn, 1e-4);
  EXPECT_LT((MatrixXd(m.jacobian_processes(yields())) - fdn).cwiseAbs().maxCoeff(), 1e-8) << m.key();
  if (!m.has_per_process()) return;
  const MatrixXd fdp = test::central_jacobian(
      [&](const VectorXd& v) { return vec(m.apply_per_process(unvec(v, 3))); }, xn, 1e-4);
  EXPECT_LT((MatrixXd(m.jacobian_per_process(yields())) - fdp).cwiseAbs().maxCoeff(), 1e-8) << m.key();
}

TEST(SelectMapping, SliceKeepsBinsAndTheKeyLeavesTheChannelOut) {
  const auto m = make({"Select", "obs", "b:slice(1,3)"});
  EXPECT_EQ(m->key(), "Select b:slice(1,3)");  // rabbit's Select key has no channel
  ASSERT_EQ(m->channels().size(), 1u);
  const auto& ch = m->channels()[0];
  EXPECT_EQ(ch.name, "obs");
  ASSERT_EQ(ch.axes.size(), 2u);
  EXPECT_EQ(ch.axes[1].name, "b");
  EXPECT_EQ(ch.axes[1].size, 2);
  EXPECT_EQ(ch.axes[1].edges, (std::vector<double>{1, 2, 3}));
  EXPECT_TRUE(m->has_data());
  EXPECT_EQ(m->observed_size(), 4);
  const VectorXd n = nu();
  EXPECT_EQ(m->apply(n), (VectorXd(4) << n(1), n(2), n(5), n(6)).finished());
  expect_jacobians_match_differences(*m);
}

TEST(SelectMapping, IndexSumRebinAndValueLocations) {
  const VectorXd n = nu();
  // An index keeps one bin and sums the axis away.
  auto m = make({"Select", "obs", "a:1"});
  ASSERT_EQ(m->channels()[0].axes.size(), 1u);
  EXPECT_EQ(m->apply(n), n.segment(4, 4));
  m = make({"Select", "obs", "b:sum"});
  EXPECT_EQ(m->apply(n), (VectorXd(2) << n.segment(0, 4).sum(), n.segment(4, 4).sum()).finished());
  // Every axis summed: one bin, no axes (written on rabbit's `yield` axis).
  m = make({"Select", "obs", "a:sum,b:sum"});
  EXPECT_TRUE(m->channels()[0].axes.empty());
  EXPECT_EQ(m->apply(n), (VectorXd(1) << n.head(8).sum()).finished());
  // rebin onto old edges; bins outside the new range drop.
  m = make({"Select", "obs", "b:rebin(0,2,4)"});
  EXPECT_EQ(m->channels()[0].axes[1].kind, "variable");
  EXPECT_EQ(m->channels()[0].axes[1].edges, (std::vector<double>{0, 2, 4}));
  EXPECT_EQ(m->apply(n), (VectorXd(4) << n(0) + n(1), n(2) + n(3), n(4) + n(5), n(6) + n(7)).finished());
  m = make({"Select", "obs", "a:0,b:rebin(1,3)"});
  EXPECT_EQ(m->apply(n), (VectorXd(1) << n(1) + n(2)).finished());
  // Values: 1.5j is the bin holding 1.5; 1+1.5j the one after it.
  m = make({"Select", "obs", "b:slice(1.5j,3.5j)"});
  EXPECT_EQ(m->channels()[0].axes[1].edges, (std::vector<double>{1, 2, 3}));
  m = make({"Select", "obs", "a:slice(None,None),b:1+1.5j"});
  EXPECT_EQ(m->apply(n), (VectorXd(2) << n(2), n(6)).finished());
  // A step keeps every s-th bin (rabbit's values[a:b:s]) on an axis merged s by s (hist.rebin).
  m = make({"Select", "obs", "b:slice(0,4,2)"});
  EXPECT_EQ(m->channels()[0].axes[1].edges, (std::vector<double>{0, 2, 4}));
  EXPECT_EQ(m->apply(n), (VectorXd(4) << n(0), n(2), n(4), n(6)).finished());
  expect_jacobians_match_differences(*make({"Select", "obs", "a:sum,b:rebin(0,1,3)"}));
}

TEST(SelectMapping, ProcessesSelectThePerProcessHistogramsOnly) {
  const auto m = make({"Select", "obs", "bkg_2,sig", "a:0"});
  EXPECT_EQ(m->key(), "Select bkg_2,sig a:0");
  EXPECT_EQ(m->process_selection(), (std::vector<int64_t>{0, 2}));  // input order
  EXPECT_TRUE(m->has_data());
  EXPECT_FALSE(m->needs_processes());
  // rabbit's ChannelMapping maps every process into the inclusive histograms.
  EXPECT_EQ(m->apply(nu()), nu().head(4));
  const MatrixXd N = yields(), y = m->apply_per_process(N);
  ASSERT_EQ(y.cols(), 2);
  EXPECT_EQ(y.col(0), N.col(0).head(4));
  EXPECT_EQ(y.col(1), N.col(2).head(4));
  expect_jacobians_match_differences(*m);
  EXPECT_EQ(make({"Select", "obs", "None"})->process_selection(), std::vector<int64_t>{});
}

TEST(RatioMappings, ValuesAgainstHandComputations) {
  const VectorXd n = nu();
  const VectorXd num = n.segment(8, 4), den = (VectorXd(4) << n.segment(0, 4) + n.segment(4, 4)).finished();
  auto m = make({"Ratio", "other", "obs", "None:None", "a:sum"});
  EXPECT_EQ(m->key(), "Ratio other obs None:None a:sum");
  EXPECT_EQ(m->channels()[0].name, "other_obs");
  ASSERT_EQ(m->channels()[0].axes.size(), 1u);
  EXPECT_EQ(m->channels()[0].axes[0].name, "a0");  // axis names differ: integer categories
  EXPECT_EQ(m->channels()[0].axes[0].kind, "category_int");
  EXPECT_TRUE(m->has_data());
  EXPECT_EQ(m->ndf_reduction(), 0);
  EXPECT_FALSE(m->has_per_process());
  EXPECT_TRUE(m->apply(n).isApprox(num.cwiseQuotient(den), 1e-15));
  m = make({"Normratio", "other", "obs", "None:None", "a:sum"});
  EXPECT_EQ(m->ndf_reduction(), 1);
  EXPECT_TRUE(m->apply(n).isApprox((num / num.sum()).cwiseQuotient(den / den.sum()), 1e-15));
  m = make({"Difference", "other", "obs", "None:None", "a:sum"});
  EXPECT_TRUE(m->apply(n).isApprox(num / num.sum() - den / den.sum(), 1e-15));
  m = make({"Asymmetry", "other", "obs", "None:None", "a:sum"});
  EXPECT_TRUE(m->apply(n).isApprox((num - den).cwiseQuotient(num + den), 1e-15));
  // One channel: its name and its axes.
  m = make({"Ratio", "obs", "obs", "a:0", "a:1"});
  EXPECT_EQ(m->channels()[0].name, "obs");
  EXPECT_EQ(m->channels()[0].axes[0].name, "b");
  EXPECT_TRUE(m->apply(n).isApprox(n.head(4).cwiseQuotient(n.segment(4, 4)), 1e-15));
  // A masked numerator: no data.
  EXPECT_FALSE(make({"Ratio", "masked", "other"})->has_data());
}

TEST(RatioMappings, ProcessSelectionsMapThePerProcessYields) {
  const auto m = make({"Ratio", "other", "other", "sig", "bkg,bkg_2"});
  EXPECT_EQ(m->key(), "Ratio other other sig bkg,bkg_2");
  EXPECT_TRUE(m->needs_processes());
  EXPECT_FALSE(m->has_data());  // rabbit's Term.has_data
  const MatrixXd N = yields();
  const VectorXd expected =
      N.col(0).segment(8, 4).cwiseQuotient(N.col(1).segment(8, 4) + N.col(2).segment(8, 4));
  EXPECT_TRUE(m->apply_processes(N).isApprox(expected, 1e-15));
  const auto none = make({"Ratio", "other", "other", "None", "sig"});  // None: every process
  EXPECT_TRUE(
      none->apply_processes(N).isApprox(nu().segment(8, 4).cwiseQuotient(N.col(0).segment(8, 4)), 1e-15));
}

TEST(RatioMappings, JacobiansMatchCentralDifferences) {
  for (const char* name : {"Ratio", "Normratio", "Difference", "Asymmetry"}) {
    expect_jacobians_match_differences(*make({name, "other", "obs", "None:None", "a:sum"}));
    expect_jacobians_match_differences(*make({name, "obs", "other", "sig,bkg", "bkg_2", "a:1", "None:None"}));
  }
}

TEST(RatioMappings, CompositeWithAProcessSelectionMapsThePerProcessYields) {
  // --compositeMapping: one part of N makes the whole a mapping of N; the other parts enter through
  // ∂y/∂ν repeated for every process (Mapping::jacobian_processes).
  std::vector<std::unique_ptr<postfit::Mapping>> parts;
  parts.push_back(make({"Select", "obs", "a:sum"}));
  parts.push_back(make({"Ratio", "obs", "other", "sig,bkg", "bkg_2", "a:1", "None:None"}));
  parts.push_back(make({"Normratio", "other", "obs", "None:None", "a:sum"}));
  const auto m = postfit::make_composite_mapping(std::move(parts));
  EXPECT_TRUE(m->needs_processes());
  const MatrixXd N = yields();
  const VectorXd y = m->apply_processes(N);
  ASSERT_EQ(y.size(), 12);
  EXPECT_TRUE(y.head(4).isApprox(make({"Select", "obs", "a:sum"})->apply(nu()), 1e-15));
  EXPECT_TRUE(y.segment(4, 4).isApprox(
      make({"Ratio", "obs", "other", "sig,bkg", "bkg_2", "a:1", "None:None"})->apply_processes(N), 1e-15));
  EXPECT_TRUE(
      y.tail(4).isApprox(make({"Normratio", "other", "obs", "None:None", "a:sum"})->apply(nu()), 1e-15));
  expect_jacobians_match_differences(*m);
  std::vector<std::unique_ptr<postfit::Mapping>> inclusive;
  inclusive.push_back(make({"Select", "obs", "a:sum"}));
  inclusive.push_back(make({"Ratio", "other", "obs", "None:None", "a:sum"}));
  EXPECT_FALSE(postfit::make_composite_mapping(std::move(inclusive))->needs_processes());
}

TEST(TermMappings, BadArgumentsAreOneLineNamingTheMapping) {
  EXPECT_EQ(option_error({"Select", "nope"}), "-m Select: unknown channel nope");
  EXPECT_EQ(option_error({"Select", "obs", "q:sum"}), "-m Select: unknown axis q of channel obs");
  EXPECT_EQ(option_error({"Select", "obs", "sig,top"}),
            "-m Select: unknown process top (the input has sig, bkg, bkg_2)");
  EXPECT_EQ(option_error({"Select", "obs", "b:slice(1,x)"}),
            "-m Select: bad axis selection b:slice(1,x): 'x' is not an integer");
  EXPECT_EQ(option_error({"Select", "obs", "b:rebin(0,1.5,4)"}),
            "-m Select: bad axis selection b:rebin(0,1.5,4): rebin edge 1.5 is not an edge of axis b");
  EXPECT_EQ(option_error({"Select", "obs", "b:slice(3,1)"}),
            "-m Select: bad axis selection b:slice(3,1): axis b: the selection keeps no bin");
  EXPECT_EQ(option_error({"Select", "obs", "b"}),
            "-m Select: unknown process b (the input has sig, bkg, bkg_2)");
  EXPECT_EQ(option_error({"Select", "obs", "sig", "bkg"}),
            "-m Select: unexpected argument bkg (expected CHANNEL [PROCESSES] [SELECTION])");
  EXPECT_EQ(option_error({"Ratio", "obs"}), "-m Ratio: a numerator and a denominator channel are required");
  EXPECT_EQ(
      option_error({"Normratio", "obs", "other", "a:sum"}),
      "-m Normratio: selection a:sum for the numerator needs the denominator's too (None:None for none)");
  EXPECT_EQ(option_error({"Asymmetry", "obs", "other", "sig"}),
            "-m Asymmetry: processes sig for the numerator need the denominator's too (None for all)");
  EXPECT_EQ(option_error({"Difference", "obs", "other"}),
            "-m Difference: the numerator's and the denominator's axes must have the same numbers of bins");
  EXPECT_EQ(option_error({"Ratio", "obs", "other", "None:None", "a:sum", "b:sum"}),
            "-m Ratio: unexpected argument b:sum");
}

}  // namespace
}  // namespace rabbit::testing
