// The comparison library (rabbit/compare/compare.hpp) on small in-memory results: what is matched,
// which tolerance applies, and what is reported. The files and the command line are in
// compare_cli_test.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "rabbit/compare/compare.hpp"
#include "rabbit/core/error.hpp"

namespace rabbit::compare {
namespace {

// A result held in memory, built by the tests.
class MemoryTree : public ResultTree {
 public:
  std::string description() const override { return "memory"; }
  std::vector<std::string> groups() const override { return order_; }
  std::vector<QuantityInfo> quantities(const std::string& group) const override {
    std::vector<QuantityInfo> out;
    for (const auto& [name, q] : groups_.at(group)) out.push_back({name, q.kind});
    return out;
  }
  Quantity load(const std::string& group, const std::string& name) const override {
    for (const auto& [n, q] : groups_.at(group))
      if (n == name) return q;
    throw InputError("no " + name);
  }

  void add_group(const std::string& group) {
    if (!groups_.count(group)) order_.push_back(group);
    groups_[group];
  }
  Quantity& set(const std::string& group, const std::string& name, Quantity q) {
    add_group(group);
    auto& list = groups_[group];
    for (auto& [n, existing] : list)
      if (n == name) return existing = std::move(q);
    list.emplace_back(name, std::move(q));
    return list.back().second;
  }
  Quantity& get(const std::string& group, const std::string& name) {
    for (auto& [n, q] : groups_.at(group))
      if (n == name) return q;
    throw InputError("no " + name);
  }
  void erase(const std::string& group, const std::string& name) {
    auto& list = groups_.at(group);
    for (auto it = list.begin(); it != list.end(); ++it)
      if (it->first == name) return void(list.erase(it));
  }

 private:
  std::vector<std::string> order_;
  std::map<std::string, std::vector<std::pair<std::string, Quantity>>> groups_;
};

Quantity number(double v) {
  Quantity q;
  q.kind = Quantity::Kind::scalar;
  q.scalar = v;
  return q;
}

TreeAxis categories(const std::string& name, std::vector<std::string> labels) {
  TreeAxis a;
  a.name = name;
  a.category = true;
  a.extent = static_cast<int64_t>(labels.size());
  a.labels = std::move(labels);
  return a;
}

TreeAxis bins(const std::string& name, int64_t extent) {
  TreeAxis a;
  a.name = name;
  a.extent = extent;
  return a;
}

Quantity hist(std::vector<TreeAxis> axes, std::vector<double> values, std::vector<double> variances = {}) {
  Quantity q;
  q.kind = Quantity::Kind::hist;
  q.hist.axes = std::move(axes);
  q.hist.values = std::move(values);
  q.hist.variances = std::move(variances);
  return q;
}

const std::vector<std::string> kParms = {"sig", "bkg_norm", "slope"};

// A small fit result: NLL, parameters, covariance, impacts, a mapping with chi2 and one channel.
MemoryTree example() {
  MemoryTree t;
  const std::string g = "results";
  t.set(g, "nllvalreduced", number(35.4));
  t.set(g, "ndfsat", number(57));
  t.set(g, "edmval", number(1e-17));
  t.set(g, "parms_prefit", hist({categories("parms", kParms)}, {1, 0, 0}, {1, 1, 1}));
  t.set(g, "parms", hist({categories("parms", kParms)}, {1.05, -0.8, 0.3}, {0.04, 0.25, 0.09}));
  t.set(g, "cov",
        hist({categories("parms_x", kParms), categories("parms_y", kParms)},
             {0.04, 0.01, 0.0, 0.01, 0.25, 0.02, 0.0, 0.02, 0.09}));
  t.set(g, "impacts",
        hist({categories("parms", {"sig"}), categories("impacts", kParms)}, {0.2, 0.02, 1e-12}));
  t.set(g, "epoch_loss", hist({bins("epoch", 3)}, {40, 38, 35.4}));
  t.set(g, "mappings/BaseMapping/chi2", number(70.27));
  t.set(g, "mappings/BaseMapping/channels/ch0/hist_postfit_inclusive",
        hist({bins("x", 4)}, {100, 200, 300, 400}, {10, 20, 30, 40}));
  return t;
}

Report run(const MemoryTree& a, const MemoryTree& b, CompareOptions options = {}) {
  return compare_results(a, b, options);
}

// The one failing result, or a test failure listing what failed.
std::optional<QuantityResult> only_failure(const Report& report) {
  std::vector<QuantityResult> failed;
  for (const auto& r : report.results)
    if (!r.ok()) failed.push_back(r);
  if (failed.size() == 1) return failed[0];
  std::string all;
  for (const auto& r : failed) all += format_result(r) + "\n";
  ADD_FAILURE() << failed.size() << " failures:\n" << all;
  return std::nullopt;
}

TEST(CompareEngine, IdenticalResultsAreWithinTolerance) {
  const MemoryTree a = example();
  const Report report = run(a, a);
  EXPECT_TRUE(report.within_tolerance());
  EXPECT_EQ(report.groups_compared, 1u);
  // One result per compared aspect; edmval and epoch_loss are the minimizer's path, not compared.
  std::vector<std::string> titles;
  for (const auto& r : report.results) titles.push_back(r.title());
  EXPECT_EQ(titles, (std::vector<std::string>{
                        "nllvalreduced", "ndfsat", "parms_prefit values", "parms_prefit uncertainties",
                        "parms values", "parms uncertainties", "cov", "impacts", "mappings/BaseMapping/chi2",
                        "mappings/BaseMapping/channels/ch0/hist_postfit_inclusive values",
                        "mappings/BaseMapping/channels/ch0/hist_postfit_inclusive uncertainties"}));
  const auto summary = report.summary();
  for (const char* category : {"nll", "parms values", "parms sigma", "cov", "impacts", "chi2/ndf",
                               "hist values", "hist uncertainties"})
    EXPECT_EQ(summary.count(category), 1u) << category;
}

TEST(CompareEngine, ShiftedParameterIsNamed) {
  const MemoryTree a = example();
  MemoryTree b = example();
  // 1e-6 of max(|x|, sigma) is allowed: 1.05e-6 for sig.
  b.get("results", "parms").hist.values[0] += 0.5e-6;
  EXPECT_TRUE(run(a, b).within_tolerance());
  b.get("results", "parms").hist.values[0] += 1e-6;
  const Report report = run(a, b);
  auto r = only_failure(report);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->title(), "parms values");
  EXPECT_EQ(r->beyond, 1u);
  EXPECT_NE(r->worst.find("[sig]: A 1.05, B 1.0500015"), std::string::npos) << r->worst;
  EXPECT_NEAR(r->max_absolute, 1.5e-6, 1e-12);
}

TEST(CompareEngine, ChangedVarianceIsNamed) {
  const MemoryTree a = example();
  MemoryTree b = example();
  b.get("results", "mappings/BaseMapping/channels/ch0/hist_postfit_inclusive").hist.variances[2] *= 1.001;
  auto r = only_failure(run(a, b));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->title(), "mappings/BaseMapping/channels/ch0/hist_postfit_inclusive uncertainties");
  EXPECT_EQ(r->worst.rfind("[2]: A ", 0), 0u) << r->worst;

  MemoryTree c = example();
  c.get("results", "parms").hist.variances[2] *= 1.0001;  // sigma 5e-5 relative off, 1e-6 allowed
  r = only_failure(run(a, c));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->title(), "parms uncertainties");
  EXPECT_EQ(r->worst.rfind("[slope]: ", 0), 0u) << r->worst;
}

TEST(CompareEngine, MissingGroupsAndQuantitiesFail) {
  MemoryTree a = example(), b = example();
  a.set("results_asimov", "nllvalreduced", number(0.0));
  auto r = only_failure(run(a, b));
  ASSERT_TRUE(r);
  EXPECT_EQ(format_result(*r), "FAIL  results_asimov: only in A");
  // Only in B fails too, unless B may hold more.
  r = only_failure(run(b, a));
  ASSERT_TRUE(r);
  EXPECT_EQ(format_result(*r), "FAIL  results_asimov: only in B");
  CompareOptions subset;
  subset.b_may_hold_more = true;
  EXPECT_TRUE(run(b, a, subset).within_tolerance());

  MemoryTree c = example();
  c.erase("results", "cov");
  r = only_failure(run(example(), c));
  ASSERT_TRUE(r);
  EXPECT_EQ(format_result(*r), "FAIL  results  cov: only in A");
  // A parameter B lacks, and one only B has.
  MemoryTree d = example();
  d.get("results", "parms").hist.axes[0].labels[2] = "other";
  CompareOptions all;
  all.keep_all_beyond = true;
  r = only_failure(run(example(), d, all));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->title(), "parms values");
  EXPECT_EQ(r->beyond_entries,
            (std::vector<std::string>{"only in B: axis 0 (parms): other", "missing in B: [slope]"}));
}

TEST(CompareEngine, ImpactsKeepTheirOrderAndHaveAFloor) {
  const MemoryTree a = example();
  MemoryTree b = example();
  // An impact of 1e-12 differs by 2e-9: beyond 1e-5 relative, within 1e-7 of sigma(sig) = 0.2.
  b.get("results", "impacts").hist.values[2] = 2e-9;
  EXPECT_TRUE(run(a, b).within_tolerance());
  b.get("results", "impacts").hist.values[2] = 3e-8;
  auto r = only_failure(run(a, b));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->worst.rfind("[sig,slope]: A 1e-12, B 3e-08 (allowed 2e-08)", 0), 0u) << r->worst;
  // Same entries by name in another order: the order is part of rabbit's impact histograms.
  MemoryTree c = example();
  c.set("results", "impacts",
        hist({categories("parms", {"sig"}), categories("impacts", {"bkg_norm", "sig", "slope"})},
             {0.02, 0.2, 1e-12}));
  r = only_failure(run(a, c));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->worst, "labels of axis 1 differ from A's (names or order)");
}

TEST(CompareEngine, CovarianceToleranceIsOfBothSigmas) {
  const MemoryTree a = example();
  MemoryTree b = example();
  // Entry [bkg_norm,slope]: 2e-6 * 0.5 * 0.3 = 3e-7 allowed.
  b.get("results", "cov").hist.values[5] += 2.9e-7;
  EXPECT_TRUE(run(a, b).within_tolerance());
  b.get("results", "cov").hist.values[5] += 0.2e-7;
  auto r = only_failure(run(a, b));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->worst.rfind("[bkg_norm,slope]:", 0), 0u) << r->worst;
}

TEST(CompareEngine, FlowBinsOnlyOneSideStoresAreDropped) {
  // A knows its 4 in-range bins (rabbit's JSON); B stores underflow and overflow too.
  MemoryTree a = example(), b = example();
  TreeAxis known = bins("x", 4);
  known.bins = 4;
  known.underflow = true;
  a.get("results", "mappings/BaseMapping/channels/ch0/hist_postfit_inclusive").hist.axes = {known};
  b.set("results", "mappings/BaseMapping/channels/ch0/hist_postfit_inclusive",
        hist({bins("x", 6)}, {-1, 100, 200, 300, 400, -1}, {1, 10, 20, 30, 40, 1}));
  EXPECT_TRUE(run(a, b).within_tolerance());
  b.get("results", "mappings/BaseMapping/channels/ch0/hist_postfit_inclusive").hist.values[1] = 101;
  auto r = only_failure(run(a, b));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->worst.rfind("[0]: A 100, B 101", 0), 0u) << r->worst;
  // Where both sides store the flow bins, they are compared too, and named.
  TreeAxis with_flow = known;
  with_flow.extent = 6;
  MemoryTree d = example(), e = example();
  for (MemoryTree* t : {&d, &e})
    t->set("results", "mappings/BaseMapping/channels/ch0/hist_postfit_inclusive",
           hist({with_flow}, {1, 100, 200, 300, 400, 2}, {1, 10, 20, 30, 40, 2}));
  EXPECT_TRUE(run(d, e).within_tolerance());
  e.get("results", "mappings/BaseMapping/channels/ch0/hist_postfit_inclusive").hist.values[5] = 3;
  r = only_failure(run(d, e));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->worst.rfind("[overflow]: A 2, B 3", 0), 0u) << r->worst;
  // Two result files must have the same extents.
  MemoryTree c = example();
  c.get("results", "mappings/BaseMapping/channels/ch0/hist_postfit_inclusive") =
      hist({bins("x", 5)}, {1, 2, 3, 4, 5});
  r = only_failure(run(example(), c));
  ASSERT_TRUE(r);
  EXPECT_NE(r->worst.find("histograms do not match: axis 0 (x) has 4 entries"), std::string::npos)
      << r->worst;
}

TEST(CompareEngine, NumericCategoriesMatchByValue) {
  MemoryTree a = example(), b = example();
  a.set("results", "nll_scan_sig", hist({categories("scan", {"0.10", "0.2", "1e-5"})}, {0.5, 0.0, 0.5}));
  b.set("results", "nll_scan_sig",
        hist({categories("scan", {number_label(1e-5), number_label(0.1), number_label(0.2)})},
             {0.5, 0.5, 0.0}));
  EXPECT_TRUE(run(a, b).within_tolerance());
  b.get("results", "nll_scan_sig").hist.values[0] = 0.5 + 2e-6;  // ΔNLL: 1e-6 absolute
  auto r = only_failure(run(a, b));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->worst.rfind("[1e-5]:", 0), 0u) << r->worst;
}

TEST(CompareEngine, EntryTolerancesLoosenOnlyTheirEntry) {
  const MemoryTree a = example();
  MemoryTree b = example();
  b.get("results", "mappings/BaseMapping/chi2").scalar = 70.27 * (1 + 2e-6);
  EXPECT_FALSE(run(a, b).within_tolerance());
  CompareOptions options;
  options.tolerances.entries = {{"results", "mappings/BaseMapping/chi2", "chi2", 3e-6}};
  EXPECT_TRUE(run(a, b, options).within_tolerance());
  options.tolerances.entries = {{"results_asimov", "mappings/BaseMapping/chi2", "chi2", 3e-6}};
  EXPECT_FALSE(run(a, b, options).within_tolerance());
  // Every rule takes an entry's tolerance: here a parameter's value and uncertainty.
  MemoryTree c = example();
  c.get("results", "parms").hist.values[1] *= 1 + 1e-5;
  EXPECT_FALSE(run(a, c).within_tolerance());
  options.tolerances.entries = {{"results", "parms", "[bkg_norm]", 2e-5}};
  EXPECT_TRUE(run(a, c, options).within_tolerance());
  // Scaling scales the entries too.
  options.tolerances.entries = {{"results", "mappings/BaseMapping/chi2", "chi2", 3e-6}};
  options.tolerances.scale(0.5);
  EXPECT_FALSE(run(a, b, options).within_tolerance());
}

TEST(CompareEngine, PathAndDetailsAreNotCompared) {
  const MemoryTree a = example();
  MemoryTree b = example();
  b.get("results", "edmval").scalar = 1e-13;
  b.get("results", "epoch_loss").hist.values = {41, 36, 35.4};
  b.set("results", "_cpp/niter", number(12));
  b.set("results", "mappings/BaseMapping/channels/ch0/cov_data_obs", hist({bins("x", 1)}, {1}));
  EXPECT_TRUE(run(a, b).within_tolerance());
  // Other numbers are compared with the chi2 rule; NaN agrees only with NaN, +inf only with +inf.
  MemoryTree c = example(), d = example();
  c.set("results", "nllvalfull", number(NAN));
  d.set("results", "nllvalfull", number(NAN));
  c.set("results", "mappings/BaseMapping/chi2", number(INFINITY));
  d.set("results", "mappings/BaseMapping/chi2", number(INFINITY));
  EXPECT_TRUE(run(c, d).within_tolerance());
  d.get("results", "mappings/BaseMapping/chi2").scalar = 1e300;
  EXPECT_FALSE(run(c, d).within_tolerance());
}

TEST(CompareEngine, SelectionOfGroupsAndQuantities) {
  MemoryTree a = example(), b = example();
  b.get("results", "parms").hist.values[0] += 1.0;
  CompareOptions options;
  options.quantities = {"cov", "mappings/.*"};
  EXPECT_TRUE(run(a, b, options).within_tolerance());  // parms not selected
  options.quantities = {"parms"};
  EXPECT_FALSE(run(a, b, options).within_tolerance());
  // A group only one side holds fails whatever quantities are selected.
  a.set("results_asimov", "nllvalreduced", number(0.0));
  options.quantities = {"cov"};
  EXPECT_FALSE(run(a, b, options).within_tolerance());
  options.quantities = {};
  options.groups = {"asimov"};  // the group's name without "results_"
  const Report report = run(a, b, options);
  ASSERT_EQ(report.results.size(), 1u);
  EXPECT_EQ(format_result(report.results[0]), "FAIL  results_asimov: only in A");
  options.groups = {"results_toy.*"};
  EXPECT_THROW(run(a, b, options), InputError);
  options.groups = {};
  options.quantities = {"no_such_quantity"};
  EXPECT_THROW(run(a, b, options), InputError);
  options.quantities = {"("};
  EXPECT_THROW(run(a, b, options), InputError);
}

TEST(CompareEngine, EveryEntryBeyondToleranceOnRequest) {
  const MemoryTree a = example();
  MemoryTree b = example();
  for (double& v : b.get("results", "parms").hist.values) v += 0.01;
  CompareOptions options;
  EXPECT_TRUE(run(a, b, options).results[4].beyond_entries.empty());
  options.keep_all_beyond = true;
  auto r = only_failure(run(a, b, options));
  ASSERT_TRUE(r);
  ASSERT_EQ(r->beyond_entries.size(), 3u);
  EXPECT_EQ(r->beyond_entries[1].rfind("[bkg_norm]: A -0.8, B -0.79", 0), 0u) << r->beyond_entries[1];
  EXPECT_EQ(format_result(*r).rfind(
                "FAIL  results  parms values: 3 entries, 3 beyond tolerance; largest deviation ", 0),
            0u)
      << format_result(*r);
}

}  // namespace
}  // namespace rabbit::compare
