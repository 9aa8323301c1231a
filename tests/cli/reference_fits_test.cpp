// Regression against rabbit's own results (/work/shared/ref/fits/NAME__CASE.json, see its README):
// rabbit_fit is run with the recorded arguments on the recorded tensor and the parameters, their
// uncertainties, the reduced NLL and the impacts are compared within DECISIONS.md's tolerances.
// Skips with a message while no reference is present.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "rabbit/postfit/result_file.hpp"
#include "support/test_paths.hpp"

namespace fs = std::filesystem;

namespace {

// A minimal JSON value and recursive-descent parser (objects, arrays, strings, numbers incl.
// NaN/Infinity, true/false/null).
struct Json {
  enum Kind { null, boolean, number, string, array, object } kind = null;
  double num = 0;
  bool b = false;
  std::string str;
  std::vector<Json> arr;
  std::map<std::string, Json> obj;
  const Json* get(const std::string& k) const {
    auto it = obj.find(k);
    return it == obj.end() ? nullptr : &it->second;
  }
};

class Parser {
 public:
  explicit Parser(const std::string& s) : s_(s) {}
  Json parse() {
    ws();
    Json v;
    char c = s_.at(i_);
    if (c == '{') {
      v.kind = Json::object;
      ++i_;
      ws();
      if (s_[i_] == '}') return ++i_, v;
      while (true) {
        ws();
        std::string k = parse_string();
        ws();
        expect(':');
        v.obj[k] = parse();
        ws();
        if (s_[i_] == ',') { ++i_; continue; }
        expect('}');
        return v;
      }
    }
    if (c == '[') {
      v.kind = Json::array;
      ++i_;
      ws();
      if (s_[i_] == ']') return ++i_, v;
      while (true) {
        v.arr.push_back(parse());
        ws();
        if (s_[i_] == ',') { ++i_; continue; }
        expect(']');
        return v;
      }
    }
    if (c == '"') {
      v.kind = Json::string;
      v.str = parse_string();
      return v;
    }
    if (s_.compare(i_, 4, "true") == 0) { i_ += 4; v.kind = Json::boolean; v.b = true; return v; }
    if (s_.compare(i_, 5, "false") == 0) { i_ += 5; v.kind = Json::boolean; return v; }
    if (s_.compare(i_, 4, "null") == 0) { i_ += 4; return v; }
    if (s_.compare(i_, 3, "NaN") == 0) { i_ += 3; v.kind = Json::number; v.num = NAN; return v; }
    if (s_.compare(i_, 8, "Infinity") == 0) { i_ += 8; v.kind = Json::number; v.num = INFINITY; return v; }
    if (s_.compare(i_, 9, "-Infinity") == 0) { i_ += 9; v.kind = Json::number; v.num = -INFINITY; return v; }
    size_t used = 0;
    v.kind = Json::number;
    v.num = std::stod(s_.substr(i_, 64), &used);
    i_ += used;
    return v;
  }

 private:
  void ws() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  void expect(char c) {
    if (s_.at(i_) != c) throw std::runtime_error(std::string("JSON: expected ") + c);
    ++i_;
  }
  std::string parse_string() {
    expect('"');
    std::string out;
    while (s_.at(i_) != '"') {
      char c = s_[i_++];
      if (c == '\\') {
        char e = s_.at(i_++);
        if (e == 'n') out += '\n';
        else if (e == 't') out += '\t';
        else if (e == 'u') { out += '?'; i_ += 4; }
        else out += e;
      } else {
        out += c;
      }
    }
    ++i_;
    return out;
  }
  const std::string& s_;
  size_t i_ = 0;
};

void flatten(const Json& j, std::vector<double>& out) {
  if (j.kind == Json::array) {
    for (const auto& e : j.arr) flatten(e, out);
  } else {
    out.push_back(j.kind == Json::number ? j.num : NAN);
  }
}

std::vector<std::string> labels_of(const Json& hist, size_t axis) {
  std::vector<std::string> out;
  const Json* axes = hist.get("axes");
  if (!axes || axes->arr.size() <= axis) return out;
  if (const Json* l = axes->arr[axis].get("labels"))
    for (const auto& e : l->arr) out.push_back(e.str);
  return out;
}

bool close(double ours, double ref, double rel, double abs_floor) {
  if (std::isnan(ref)) return std::isnan(ours);
  return std::abs(ours - ref) <= std::max(rel * std::abs(ref), abs_floor);
}

}  // namespace

TEST(ReferenceFits, AgreeWithRabbit) {
  const fs::path ref = rabbit::test::shared_dir() / "ref";
  std::vector<fs::path> cases;
  if (fs::exists(ref / "fits"))
    for (const auto& e : fs::directory_iterator(ref / "fits"))
      if (e.path().extension() == ".json") cases.push_back(e.path());
  if (cases.empty()) GTEST_SKIP() << "no reference fits in " << (ref / "fits") << " yet";
  const auto dir = rabbit::test::scratch_dir("reference_fits");
  for (const auto& c : cases) {
    SCOPED_TRACE(c.filename().string());
    std::ifstream in(c);
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string text = ss.str();
    Json j = Parser(text).parse();
    const fs::path tensor = ref / "tensors" / j.get("tensor")->str;
    if (!fs::exists(tensor)) {
      ADD_FAILURE() << "reference tensor missing: " << tensor;
      continue;
    }
    std::string args;
    for (const auto& a : j.get("args")->arr) args += " '" + a.str + "'";
    const std::string out = (dir / c.stem()).string();
    const std::string cmd = (rabbit::test::binary_dir() / "rabbit_fit").string() + " " + tensor.string() + args +
                            " -o " + out + " 2>&1";
    // The recorded arguments may carry -o/-p of their own; ours come last and win (argparse rule).
    std::string log;
    FILE* pipe = popen(cmd.c_str(), "r");
    std::array<char, 4096> buf;
    while (pipe && fgets(buf.data(), buf.size(), pipe)) log += buf.data();
    int status = pipe ? pclose(pipe) : -1;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      // Options this release refuses are reported as such, not as numerical disagreement.
      if (log.find("not implemented yet") != std::string::npos) {
        std::cout << "[ reference ] " << c.filename().string() << ": skipped, " << log;
        continue;
      }
      ADD_FAILURE() << "rabbit_fit failed:\n" << log;
      continue;
    }
    fs::path file;
    for (const auto& e : fs::directory_iterator(out))
      if (e.path().extension() == ".hdf5") file = e.path();
    rabbit::result::ResultReader r(file.string());
    for (const auto& [suffix, res] : j.get("results")->obj) {
      const std::string group = (suffix.empty() || suffix == "data_obs" || suffix == "results") ? "results"
                                                                                               : "results_" + suffix;
      ASSERT_TRUE(r.exists(group)) << group;
      if (const Json* nll = res.get("nllvalreduced"); nll && nll->kind == Json::number)
        EXPECT_NEAR(r.scalar(group + "/nllvalreduced"), nll->num, 1e-6) << group;
      if (const Json* p = res.get("parms")) {
        auto ours = r.hist(group + "/parms");
        auto names = labels_of(*p, 0);
        std::vector<double> vals, vars;
        flatten(*p->get("values"), vals);
        if (const Json* v = p->get("variances"); v && v->kind == Json::array) flatten(*v, vars);
        for (size_t i = 0; i < names.size(); ++i) {
          auto it = std::find(ours.axis_labels[0].begin(), ours.axis_labels[0].end(), names[i]);
          ASSERT_NE(it, ours.axis_labels[0].end()) << names[i];
          const size_t k = it - ours.axis_labels[0].begin();
          const double sigma = vars.empty() ? 0.0 : std::sqrt(vars[i]);
          EXPECT_TRUE(close(ours.values[k], vals[i], 1e-6, 1e-6 * sigma))
              << group << " " << names[i] << ": " << ours.values[k] << " vs " << vals[i];
          if (!vars.empty())
            EXPECT_TRUE(close(ours.variances[k], vars[i], 2e-6, 0.0))
                << group << " var " << names[i] << ": " << ours.variances[k] << " vs " << vars[i];
        }
      }
      for (const char* key : {"impacts", "impacts_grouped", "global_impacts", "global_impacts_grouped"}) {
        const Json* h = res.get(key);
        if (!h || !r.exists(group + "/" + key)) continue;
        auto ours = r.hist(group + "/" + key);
        std::vector<double> vals;
        flatten(*h->get("values"), vals);
        auto rows = labels_of(*h, 0), cols = labels_of(*h, 1);
        ASSERT_EQ(rows, ours.axis_labels[0]) << key;
        ASSERT_EQ(cols, ours.axis_labels[1]) << key;
        double scale = 0.0;
        for (double v : vals) scale = std::max(scale, std::abs(v));
        for (size_t i = 0; i < vals.size(); ++i)
          EXPECT_TRUE(close(ours.values[i], vals[i], 1e-5, 1e-7 * scale)) << group << " " << key << "[" << i << "]";
      }
    }
  }
}
