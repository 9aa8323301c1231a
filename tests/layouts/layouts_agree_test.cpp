// Both result layouts hold the same result (docs/output-format.md): for every option set of
// layout_cases.hpp, rabbit_fit writes rabbit's layout and the plain layout (single-threaded, so the
// two runs give the same numbers bit for bit), and our readers must find the same entries with the
// same axes, labels, values and variances, with and without flow bins: our pickle reader reads
// every result we write, proxies and buffers resolved.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <set>

#include "layouts/layout_cases.hpp"
#include "rabbit/core/python_format.hpp"
#include "rabbit/postfit/result_file.hpp"

namespace fs = std::filesystem;
using rabbit::result::Hist;
using rabbit::result::ResultReader;
using rabbit::test::layouts::FitCase;

namespace {

bool same(double a, double b) {
  return a == b || (std::isnan(a) && std::isnan(b));
}

bool same(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!same(a[i], b[i])) return false;
  return true;
}

void expect_same_hist(const Hist& plain, const Hist& rabbit, const std::string& what, bool timing) {
  EXPECT_EQ(plain.axis_names, rabbit.axis_names) << what;
  // Float categories: values in the plain layout, numpy's str of them as labels in rabbit's.
  auto labels = plain.axis_labels;
  for (size_t k = 0; k < plain.axis_values.size() && k < labels.size(); ++k) {
    if (plain.axis_values[k].empty()) continue;
    for (double v : plain.axis_values[k]) labels[k].push_back(rabbit::python_repr(v));
    ASSERT_LT(k, rabbit.axis_values.size()) << what;
    EXPECT_EQ(plain.axis_values[k], rabbit.axis_values[k]) << what << " axis " << k;
  }
  EXPECT_EQ(labels, rabbit.axis_labels) << what;
  EXPECT_EQ(plain.shape, rabbit.shape) << what;
  EXPECT_EQ(plain.label, rabbit.label) << what;
  if (!timing) {
    EXPECT_TRUE(same(plain.values, rabbit.values)) << what << ": values differ";
  }
  EXPECT_TRUE(same(plain.variances, rabbit.variances)) << what << ": variances differ (or storage)";
}

// Walks a result group of both files member by member.
void expect_same_members(const ResultReader& plain, const ResultReader& rabbit, const std::string& path,
                         const std::string& name) {
  const auto p = plain.members(path);
  auto r = rabbit.members(path);
  std::vector<std::string> plain_keys, rabbit_keys;
  for (const auto& e : p) plain_keys.push_back(e.key);
  for (const auto& e : r) {
    // rabbit's layout has no attributes: the minimizer's name is an entry of `_cpp` there.
    if (e.key == "minimizer_method" && path.size() >= 5 && path.substr(path.size() - 5) == "/_cpp") {
      EXPECT_EQ(rabbit.strings(e.path).at(0), plain.attr_str(path, "minimizer_method"))
          << name << " " << path;
      continue;
    }
    rabbit_keys.push_back(e.key);
  }
  ASSERT_EQ(plain_keys, rabbit_keys) << name << " " << path;
  size_t ir = 0;
  for (const auto& e : p) {
    while (r[ir].key != e.key) ++ir;
    const auto& f = r[ir];
    const std::string what = name + " " + e.path;
    EXPECT_EQ(e.container, f.container) << what;
    if (e.container) {
      expect_same_members(plain, rabbit, e.path, name);
    } else if (e.type == "hist") {
      EXPECT_EQ(f.type, "hist") << what;
      const bool timing = e.key == "epoch_time";  // seconds: differ between the two runs
      expect_same_hist(plain.hist(e.path), rabbit.hist(f.path), what, timing);
      expect_same_hist(plain.hist(e.path, true), rabbit.hist(f.path, true), what + " (flow bins)", timing);
    } else if (e.type == "float" || e.type == "int" || e.type == "bool") {
      EXPECT_EQ(f.type, e.type) << what;
      if (e.key.rfind("time_", 0) != 0) {  // timings differ between the two runs
        EXPECT_TRUE(same(plain.scalar(e.path), rabbit.scalar(f.path))) << what;
      }
    } else if (e.type == "str") {
      EXPECT_EQ(f.type, "str") << what;
      EXPECT_EQ(plain.strings(e.path), rabbit.strings(f.path)) << what;
    } else {
      ADD_FAILURE() << what << ": unexpected entry of type '" << e.type << "'";
    }
  }
}

class LayoutsAgree : public ::testing::TestWithParam<FitCase> {};

}  // namespace

namespace rabbit::test::layouts {
void PrintTo(const FitCase& c, std::ostream* os) {
  *os << c.name;
}
}  // namespace rabbit::test::layouts

namespace {

TEST_P(LayoutsAgree, SameResultInBothLayouts) {
  const FitCase& c = GetParam();
  setenv("OMP_NUM_THREADS", "1", 1);  // bit-identical numbers in the two runs
  const fs::path dir = rabbit::test::scratch_dir("layouts_" + c.name);
  const auto rabbit_run = rabbit::test::layouts::run_fit_case(c, dir / "rabbit.hdf5");
  ASSERT_EQ(rabbit_run.exit_code, 0) << rabbit_run.output;
  const auto plain_run = rabbit::test::layouts::run_fit_case(c, dir / "plain.hdf5", "--outputFormat plain");
  ASSERT_EQ(plain_run.exit_code, 0) << plain_run.output;

  const ResultReader rabbit((dir / "rabbit.hdf5").string()), plain((dir / "plain.hdf5").string());
  EXPECT_EQ(rabbit.layout(), rabbit::result::Layout::rabbit);
  EXPECT_EQ(plain.layout(), rabbit::result::Layout::plain);
  ASSERT_EQ(plain.result_groups(), rabbit.result_groups()) << c.name;
  for (const auto& group : plain.result_groups()) expect_same_members(plain, rabbit, group, c.name);
  for (const char* names : {"procs", "pois", "nois"})
    EXPECT_EQ(plain.strings(std::string("meta/") + names), rabbit.strings(std::string("meta/") + names))
        << names;
}

std::string case_name(const ::testing::TestParamInfo<FitCase>& info) {
  std::string s = info.param.name;
  for (char& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
}

INSTANTIATE_TEST_SUITE_P(Cases, LayoutsAgree, ::testing::ValuesIn(rabbit::test::layouts::fit_cases()),
                         case_name);

}  // namespace
