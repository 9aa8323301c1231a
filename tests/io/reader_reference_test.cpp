// read_fit_input on fit tensors written by rabbit itself (../shared/ref/tensors/NAME.hdf5) against
// what rabbit's own reader found in them (NAME.json, format in ../shared/ref/README.md).
// Skips with a message while no reference file exists.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>
#include <stdexcept>

#include "rabbit/io/fit_input_data.hpp"
#include "rabbit/io/json.hpp"
#include "support/test_paths.hpp"

namespace rabbit {
namespace {

using io::Json;

std::string expected_class(const std::string& kind) {
  if (kind == "regular") return "Regular";
  if (kind == "variable") return "Variable";
  if (kind == "integer") return "Integer";
  if (kind == "category_str") return "StrCategory";
  if (kind == "category_int") return "IntCategory";
  if (kind == "boolean") return "Boolean";
  return kind;
}

void expect_close(double got, double want, const std::string& what) {
  EXPECT_NEAR(got, want, 1e-9 * std::max(1.0, std::abs(want))) << what;
}

void compare(const FitInputData& d, const Json& ref) {
  EXPECT_EQ(d.nbins, static_cast<int64_t>(ref.at("nbins").number()));
  EXPECT_EQ(d.nbinsfull, static_cast<int64_t>(ref.at("nbinsfull").number()));
  EXPECT_EQ(d.nbinsmasked, static_cast<int64_t>(ref.at("nbinsmasked").number()));
  EXPECT_EQ(d.nproc, static_cast<int64_t>(ref.at("nproc").number()));
  EXPECT_EQ(d.nsyst, static_cast<int64_t>(ref.at("nsyst").number()));
  EXPECT_EQ(d.nsignals, static_cast<int64_t>(ref.at("nsignals").number()));
  EXPECT_EQ(d.nsystnoconstraint, static_cast<int64_t>(ref.at("nsystnoconstraint").number()));
  EXPECT_EQ(d.sparse, ref.at("sparse").boolean());
  EXPECT_EQ(d.symmetric_tensor, ref.at("symmetric_tensor").boolean());
  EXPECT_EQ(d.systematic_type == SystematicType::normal ? "normal" : "log_normal", ref.at("systematic_type").string());
  EXPECT_EQ(d.procs, ref.at("procs").strings());
  EXPECT_EQ(d.signals, ref.at("signals").strings());
  EXPECT_EQ(d.systs, ref.at("systs").strings());
  EXPECT_EQ(d.pseudodatanames, ref.at("pseudodatanames").strings());
  std::vector<int64_t> noi;
  for (const auto& i : ref.at("noiidxs").array()) noi.push_back(static_cast<int64_t>(i.number()));
  EXPECT_EQ(d.noiidxs, noi);
  // Groups: names in order, members as sets (member order inside a group is arbitrary).
  const Json& groups = ref.at("systgroups");
  ASSERT_EQ(d.systgroups.size(), groups.object().size());
  for (size_t g = 0; g < d.systgroups.size(); ++g) {
    EXPECT_EQ(d.systgroups[g], groups.object()[g].first);
    std::multiset<std::string> got, want;
    for (int64_t i : d.systgroupidxs[g]) got.insert(d.systs[static_cast<size_t>(i)]);
    for (const auto& m : groups.object()[g].second.array()) want.insert(m.string());
    EXPECT_EQ(got, want) << "group " << d.systgroups[g];
  }
  const Json& channels = ref.at("channels");
  ASSERT_EQ(d.channels.size(), channels.object().size());
  for (size_t c = 0; c < d.channels.size(); ++c) {
    const ChannelInfo& ch = d.channels[c];
    const auto& [name, rc] = channels.object()[c];
    EXPECT_EQ(ch.name, name);
    EXPECT_EQ(ch.start, static_cast<int64_t>(rc.at("start").number())) << name;
    EXPECT_EQ(ch.stop, static_cast<int64_t>(rc.at("stop").number())) << name;
    EXPECT_EQ(ch.masked, rc.find("masked") && rc.at("masked").boolean()) << name;
    EXPECT_EQ(ch.flow, rc.find("flow") && rc.at("flow").boolean()) << name;
    const Json& axes = rc.at("axes");
    ASSERT_EQ(ch.axes.size(), axes.array().size()) << name;
    for (size_t a = 0; a < ch.axes.size(); ++a) {
      const AxisInfo& ax = ch.axes[a];
      const Json& ra = axes.array()[a];
      EXPECT_EQ(ax.name, ra.at("name").string());
      EXPECT_NE(ra.at("class").string().find(expected_class(ax.kind)), std::string::npos)
          << "axis kind " << ax.kind << " vs class " << ra.at("class").string();
      EXPECT_EQ(ax.underflow, ra.at("underflow").boolean()) << name << " axis " << a;
      EXPECT_EQ(ax.overflow, ra.at("overflow").boolean()) << name << " axis " << a;
      if (ra.find("edges")) {
        std::vector<double> edges;
        for (const auto& e : ra.at("edges").array()) edges.push_back(e.number());
        EXPECT_EQ(ax.edges, edges) << name << " axis " << a << " (bit-exact edges)";
      }
      if (ra.find("categories")) {
        const auto& cats = ra.at("categories").array();
        if (ax.kind == "category_str") {
          EXPECT_EQ(ax.categories_str, ra.at("categories").strings());
        } else {
          std::vector<int64_t> ints;
          for (const auto& e : cats) ints.push_back(static_cast<int64_t>(e.number()));
          EXPECT_EQ(ax.categories_int, ints);
        }
      }
    }
  }
  const Json& sums = ref.at("checksums");
  double norm_sum = 0, logk_sum = 0, logk_abs = 0, sumw2_sum = 0;
  for (double v : d.norm) norm_sum += v;
  const std::vector<double>& logk = d.sparse ? d.logk_sparse.values : d.logk;
  for (double v : logk) {
    logk_sum += v;
    logk_abs += std::abs(v);
  }
  for (double v : d.sumw2) sumw2_sum += v;
  expect_close(norm_sum, sums.at("norm_sum").number(), "norm_sum");
  expect_close(logk_sum, sums.at("logk_sum").number(), "logk_sum");
  expect_close(logk_abs, sums.at("logk_abs_sum").number(), "logk_abs_sum");
  expect_close(d.data_obs.sum(), sums.at("data_obs_sum").number(), "data_obs_sum");
  expect_close(sumw2_sum, sums.at("sumw2_sum").number(), "sumw2_sum");
}

TEST(ReaderReference, MatchesRabbitsOwnReader) {
  const auto dir = test::shared_dir() / "ref" / "tensors";
  std::vector<std::filesystem::path> files;
  if (std::filesystem::is_directory(dir)) {
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
      if (e.path().extension() == ".hdf5") files.push_back(e.path());
    }
  }
  if (files.empty()) GTEST_SKIP() << "no reference tensors in " << dir.string() << " yet (see ../shared/ref/README.md)";
  std::sort(files.begin(), files.end());
  for (const auto& hdf5 : files) {
    SCOPED_TRACE(hdf5.filename().string());
    auto json_path = hdf5;
    json_path.replace_extension(".json");
    if (!std::filesystem::exists(json_path)) {
      ADD_FAILURE() << "reference " << hdf5 << " has no .json next to it";
      continue;
    }
    const Json ref = Json::parse_file(json_path.string());
    const FitInputData d = read_fit_input(hdf5.string());
    compare(d, ref);
  }
}

// The JSON reader (rabbit/io/json.hpp) on what Python's json module writes.
TEST(ReaderReference, JsonParserSelfCheck) {
  const Json j =
      Json::parse(R"({"a": [1, 2.5e-3, -0.1, NaN, -Infinity], "b": {"x": true, "y": null}, "s": "\u00e9\ud83d\ude00\n"})");
  EXPECT_EQ(j.at("a")[1].number(), 2.5e-3);
  EXPECT_EQ(j.at("a")[2].number(), -0.1);
  EXPECT_TRUE(std::isnan(j.at("a")[3].number()));
  EXPECT_EQ(j.at("a")[4].number(), -INFINITY);
  EXPECT_TRUE(j.at("b").at("x").boolean());
  EXPECT_TRUE(j.at("b").at("y").is_null());
  EXPECT_EQ(j.at("s").string(), "\xC3\xA9\xF0\x9F\x98\x80\n");
  EXPECT_EQ(j.at("b").object()[0].first, "x");  // members keep file order
  EXPECT_THROW(Json::parse("{\"a\": }"), std::runtime_error);
  EXPECT_THROW(j.at("missing"), std::runtime_error);
}

}  // namespace
}  // namespace rabbit
