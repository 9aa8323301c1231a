// read_fit_input on fit tensors written by rabbit itself (../shared/ref/tensors/NAME.hdf5) against
// what rabbit's own reader found in them (NAME.json, format in ../shared/ref/README.md).
// Skips with a message while no reference file exists.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <algorithm>
#include <map>
#include <set>
#include <memory>
#include <sstream>
#include <variant>

#include "rabbit/io/fit_input_data.hpp"
#include "support/test_paths.hpp"

namespace rabbit {
namespace {

// ---- a minimal JSON reader (objects keep key order) ----
struct Json {
  enum Type { null, boolean, number, string, array, object } type = null;
  bool b = false;
  double n = 0;
  std::string s;
  std::vector<Json> items;
  std::vector<std::pair<std::string, Json>> members;

  const Json& operator[](const std::string& key) const {
    for (const auto& [k, v] : members) {
      if (k == key) return v;
    }
    throw std::runtime_error("JSON key '" + key + "' missing");
  }
  bool has(const std::string& key) const {
    for (const auto& m : members) {
      if (m.first == key) return true;
    }
    return false;
  }
};

class JsonParser {
 public:
  explicit JsonParser(std::string text) : t_(std::move(text)) {}
  Json parse() {
    Json v = value();
    ws();
    if (p_ != t_.size()) fail("trailing characters");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error("JSON: " + what + " at offset " + std::to_string(p_));
  }
  void ws() {
    while (p_ < t_.size() && std::isspace(static_cast<unsigned char>(t_[p_]))) ++p_;
  }
  bool eat(char c) {
    ws();
    if (p_ < t_.size() && t_[p_] == c) {
      ++p_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!eat(c)) fail(std::string("expected '") + c + "'");
  }
  Json value() {
    ws();
    if (p_ >= t_.size()) fail("unexpected end");
    Json v;
    const char c = t_[p_];
    if (c == '{') {
      ++p_;
      v.type = Json::object;
      if (eat('}')) return v;
      do {
        ws();
        std::string key = str();
        expect(':');
        v.members.emplace_back(std::move(key), value());
      } while (eat(','));
      expect('}');
    } else if (c == '[') {
      ++p_;
      v.type = Json::array;
      if (eat(']')) return v;
      do {
        v.items.push_back(value());
      } while (eat(','));
      expect(']');
    } else if (c == '"') {
      v.type = Json::string;
      v.s = str();
    } else if (t_.compare(p_, 4, "true") == 0) {
      p_ += 4;
      v.type = Json::boolean;
      v.b = true;
    } else if (t_.compare(p_, 5, "false") == 0) {
      p_ += 5;
      v.type = Json::boolean;
    } else if (t_.compare(p_, 4, "null") == 0) {
      p_ += 4;
    } else if (t_.compare(p_, 3, "NaN") == 0) {
      p_ += 3;
      v.type = Json::number;
      v.n = std::nan("");
    } else if (t_.compare(p_, 8, "Infinity") == 0 || t_.compare(p_, 9, "-Infinity") == 0) {
      v.type = Json::number;
      v.n = t_[p_] == '-' ? -INFINITY : INFINITY;
      p_ += t_[p_] == '-' ? 9 : 8;
    } else {
      v.type = Json::number;
      const char* start = t_.c_str() + p_;
      char* end = nullptr;
      v.n = std::strtod(start, &end);  // round-trips Python's repr exactly
      if (end == start) fail("bad value");
      p_ += static_cast<size_t>(end - start);
    }
    return v;
  }
  void utf8(uint32_t cp, std::string& out) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }
  uint32_t hex4() {
    if (p_ + 4 > t_.size()) fail("bad \\u escape");
    const uint32_t v = static_cast<uint32_t>(std::stoul(t_.substr(p_, 4), nullptr, 16));
    p_ += 4;
    return v;
  }
  std::string str() {
    if (p_ >= t_.size() || t_[p_] != '"') fail("expected a string");
    ++p_;
    std::string out;
    while (true) {
      if (p_ >= t_.size()) fail("unterminated string");
      const char c = t_[p_++];
      if (c == '"') return out;
      if (c != '\\') {
        out += c;
        continue;
      }
      const char e = t_[p_++];
      switch (e) {
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'u': {
          uint32_t cp = hex4();
          if (cp >= 0xD800 && cp < 0xDC00 && t_.compare(p_, 2, "\\u") == 0) {
            p_ += 2;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (hex4() - 0xDC00);
          }
          utf8(cp, out);
          break;
        }
        default: out += e;
      }
    }
  }
  std::string t_;
  size_t p_ = 0;
};

std::vector<std::string> strings(const Json& j) {
  std::vector<std::string> out;
  for (const auto& i : j.items) out.push_back(i.s);
  return out;
}

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
  EXPECT_EQ(d.nbins, static_cast<int64_t>(ref["nbins"].n));
  EXPECT_EQ(d.nbinsfull, static_cast<int64_t>(ref["nbinsfull"].n));
  EXPECT_EQ(d.nbinsmasked, static_cast<int64_t>(ref["nbinsmasked"].n));
  EXPECT_EQ(d.nproc, static_cast<int64_t>(ref["nproc"].n));
  EXPECT_EQ(d.nsyst, static_cast<int64_t>(ref["nsyst"].n));
  EXPECT_EQ(d.nsignals, static_cast<int64_t>(ref["nsignals"].n));
  EXPECT_EQ(d.nsystnoconstraint, static_cast<int64_t>(ref["nsystnoconstraint"].n));
  EXPECT_EQ(d.sparse, ref["sparse"].b);
  EXPECT_EQ(d.symmetric_tensor, ref["symmetric_tensor"].b);
  EXPECT_EQ(d.systematic_type == SystematicType::normal ? "normal" : "log_normal", ref["systematic_type"].s);
  EXPECT_EQ(d.procs, strings(ref["procs"]));
  EXPECT_EQ(d.signals, strings(ref["signals"]));
  EXPECT_EQ(d.systs, strings(ref["systs"]));
  EXPECT_EQ(d.pseudodatanames, strings(ref["pseudodatanames"]));
  std::vector<int64_t> noi;
  for (const auto& i : ref["noiidxs"].items) noi.push_back(static_cast<int64_t>(i.n));
  EXPECT_EQ(d.noiidxs, noi);
  // Groups: names in order, members as sets (member order inside a group is arbitrary).
  const Json& groups = ref["systgroups"];
  ASSERT_EQ(d.systgroups.size(), groups.members.size());
  for (size_t g = 0; g < d.systgroups.size(); ++g) {
    EXPECT_EQ(d.systgroups[g], groups.members[g].first);
    std::multiset<std::string> got, want;
    for (int64_t i : d.systgroupidxs[g]) got.insert(d.systs[static_cast<size_t>(i)]);
    for (const auto& m : groups.members[g].second.items) want.insert(m.s);
    EXPECT_EQ(got, want) << "group " << d.systgroups[g];
  }
  const Json& channels = ref["channels"];
  ASSERT_EQ(d.channels.size(), channels.members.size());
  for (size_t c = 0; c < d.channels.size(); ++c) {
    const ChannelInfo& ch = d.channels[c];
    const auto& [name, rc] = channels.members[c];
    EXPECT_EQ(ch.name, name);
    EXPECT_EQ(ch.start, static_cast<int64_t>(rc["start"].n)) << name;
    EXPECT_EQ(ch.stop, static_cast<int64_t>(rc["stop"].n)) << name;
    EXPECT_EQ(ch.masked, rc.has("masked") && rc["masked"].b) << name;
    EXPECT_EQ(ch.flow, rc.has("flow") && rc["flow"].b) << name;
    const Json& axes = rc["axes"];
    ASSERT_EQ(ch.axes.size(), axes.items.size()) << name;
    for (size_t a = 0; a < ch.axes.size(); ++a) {
      const AxisInfo& ax = ch.axes[a];
      const Json& ra = axes.items[a];
      EXPECT_EQ(ax.name, ra["name"].s);
      EXPECT_NE(ra["class"].s.find(expected_class(ax.kind)), std::string::npos)
          << "axis kind " << ax.kind << " vs class " << ra["class"].s;
      EXPECT_EQ(ax.underflow, ra["underflow"].b) << name << " axis " << a;
      EXPECT_EQ(ax.overflow, ra["overflow"].b) << name << " axis " << a;
      if (ra.has("edges")) {
        std::vector<double> edges;
        for (const auto& e : ra["edges"].items) edges.push_back(e.n);
        EXPECT_EQ(ax.edges, edges) << name << " axis " << a << " (bit-exact edges)";
      }
      if (ra.has("categories")) {
        const auto& cats = ra["categories"].items;
        if (ax.kind == "category_str") {
          EXPECT_EQ(ax.categories_str, strings(ra["categories"]));
        } else {
          std::vector<int64_t> ints;
          for (const auto& e : cats) ints.push_back(static_cast<int64_t>(e.n));
          EXPECT_EQ(ax.categories_int, ints);
        }
      }
    }
  }
  const Json& sums = ref["checksums"];
  double norm_sum = 0, logk_sum = 0, logk_abs = 0, sumw2_sum = 0;
  for (double v : d.norm) norm_sum += v;
  const std::vector<double>& logk = d.sparse ? d.logk_sparse.values : d.logk;
  for (double v : logk) {
    logk_sum += v;
    logk_abs += std::abs(v);
  }
  for (double v : d.sumw2) sumw2_sum += v;
  expect_close(norm_sum, sums["norm_sum"].n, "norm_sum");
  expect_close(logk_sum, sums["logk_sum"].n, "logk_sum");
  expect_close(logk_abs, sums["logk_abs_sum"].n, "logk_abs_sum");
  expect_close(d.data_obs.sum(), sums["data_obs_sum"].n, "data_obs_sum");
  expect_close(sumw2_sum, sums["sumw2_sum"].n, "sumw2_sum");
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
    std::ifstream in(json_path);
    std::stringstream buffer;
    buffer << in.rdbuf();
    const Json ref = JsonParser(buffer.str()).parse();
    const FitInputData d = read_fit_input(hdf5.string());
    compare(d, ref);
  }
}

TEST(ReaderReference, JsonParserSelfCheck) {
  const Json j = JsonParser(R"({"a": [1, 2.5e-3, -0.1], "b": {"x": true, "y": null}, "s": "\u00e9\ud83d\ude00\n"})").parse();
  EXPECT_EQ(j["a"].items[1].n, 2.5e-3);
  EXPECT_EQ(j["a"].items[2].n, -0.1);
  EXPECT_TRUE(j["b"]["x"].b);
  EXPECT_EQ(j["b"]["y"].type, Json::null);
  EXPECT_EQ(j["s"].s, "\xC3\xA9\xF0\x9F\x98\x80\n");
  EXPECT_THROW(JsonParser("{\"a\": }").parse(), std::runtime_error);
}

}  // namespace
}  // namespace rabbit
