#include "support/limit_comparison.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "rabbit/postfit/result_file.hpp"

namespace rabbit::test {
namespace {

void flatten(const io::Json& j, std::vector<double>& out) {
  if (j.is_array()) {
    for (const auto& v : j.array()) flatten(v, out);
  } else {
    out.push_back(j.number());
  }
}

// docs/validation.md "Asymptotic limits": every limit to 1e-6 relative (floor 1e-9), the project's
// parameter tolerance; the roots behind them (scipy's root / trust-constr upstream, bisection and our
// contour search here) are solved far tighter than that.
double allowed_deviation(double expected) {
  return std::max(1e-6 * std::abs(expected), 1e-9);
}

}  // namespace

int compare_limit_result(const std::string& name, const io::Json& expected_results,
                         const std::string& result_file) {
  const rabbit::result::ResultReader file(result_file);
  int compared = 0;
  for (const auto& [group, hists] : expected_results.object()) {
    const std::string key = group == "data_obs" ? "results" : "results_" + group;
    for (const auto& [hist_name, h] : hists.object()) {
      if (hist_name.find("asymptoticLimits") == std::string::npos) continue;
      if (!file.exists(key + "/" + hist_name)) {
        ADD_FAILURE() << name << ": " << key << "/" << hist_name << " missing";
        continue;
      }
      const auto ours = file.hist(key + "/" + hist_name);
      std::vector<double> expected;
      flatten(h.at("values"), expected);
      if (ours.values.size() != expected.size()) {
        ADD_FAILURE() << name << " " << hist_name << ": " << ours.values.size() << " values, expected "
                      << expected.size();
        continue;
      }
      const auto& axes = h.at("axes").array();
      EXPECT_EQ(ours.axis_names.size(), axes.size()) << name << " " << hist_name;
      for (size_t a = 0; a < std::min(axes.size(), ours.axis_names.size()); ++a) {
        EXPECT_EQ(ours.axis_names[a], axes[a].at("name").string()) << name << " " << hist_name;
        EXPECT_EQ(ours.axis_labels[a], axes[a].at("labels").strings()) << name << " " << hist_name;
      }
      // Toys come from TensorFlow's random stream upstream and from ours here: their groups are
      // compared by layout, and a limit is finite exactly where upstream's is (docs/validation.md
      // "Asymptotic limits").
      const bool toy = group.rfind("toy", 0) == 0;
      for (size_t i = 0; i < expected.size(); ++i) {
        const std::string where = name + " " + key + "/" + hist_name + " entry " + std::to_string(i);
        if (std::isnan(expected[i]) || toy) {
          EXPECT_EQ(std::isfinite(ours.values[i]), std::isfinite(expected[i])) << where;
        } else {
          EXPECT_NEAR(ours.values[i], expected[i], allowed_deviation(expected[i])) << where;
          ++compared;
        }
      }
    }
  }
  return compared;
}

}  // namespace rabbit::test
