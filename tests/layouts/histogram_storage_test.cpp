// The storage of the expected-yield histograms (docs/output-format.md, `hist_prefit_inclusive` and
// `hist_prefit`): weight storage exactly where upstream rabbit wrote variances, double storage where
// it wrote none, in every mapping and channel of the reference cases that leave the storage open —
// those without --computeHistErrors (inclusive) or with --saveHistsPerProcess but without
// --computeHistErrorsPerProcess (per process). The reference comparison lets our file hold more than
// rabbit's (tests/support/fit_comparison.cpp), so variances rabbit does not write are caught here.
#include <gtest/gtest.h>

#include <algorithm>
#include <regex>

#include "layouts/layout_cases.hpp"
#include "rabbit/compare/result_tree.hpp"

namespace fs = std::filesystem;
using rabbit::test::layouts::FitCase;

namespace {

bool has(const std::vector<std::string>& args, const std::string& flag) {
  return std::find(args.begin(), args.end(), flag) != args.end();
}

std::vector<FitCase> storage_cases() {
  std::vector<FitCase> out;
  const fs::path fits = rabbit::test::source_dir() / "tests" / "reference" / "fits";
  for (const FitCase& c : rabbit::test::layouts::fit_cases()) {
    if (!fs::exists(fits / (c.name + ".json")) || !has(c.args, "--saveHists")) continue;
    const bool per_process_open =
        has(c.args, "--saveHistsPerProcess") && !has(c.args, "--computeHistErrorsPerProcess");
    if (!has(c.args, "--computeHistErrors") || per_process_open) out.push_back(c);
  }
  return out;
}

class HistogramStorage : public ::testing::TestWithParam<FitCase> {};

TEST_P(HistogramStorage, VariancesWhereUpstreamWritesThem) {
  const FitCase& c = GetParam();
  const fs::path dir = rabbit::test::scratch_dir("hist_storage_" + c.name);
  const auto run = rabbit::test::layouts::run_fit_case(c, dir / "fit.hdf5");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const fs::path json = rabbit::test::source_dir() / "tests" / "reference" / "fits" / (c.name + ".json");
  const auto rabbit = rabbit::compare::open_reference_json(json.string());
  const auto ours = rabbit::compare::open_result_file((dir / "fit.hdf5").string());
  const std::regex expected_hist(R"(mappings/.+/channels/.+/hist_(prefit|postfit)(_inclusive)?)");
  int checked = 0;
  for (const std::string& group : rabbit->groups())
    for (const auto& q : rabbit->quantities(group)) {
      if (!std::regex_match(q.name, expected_hist)) continue;
      const bool upstream = !rabbit->load(group, q.name).hist.variances.empty();
      const bool mine = !ours->load(group, q.name).hist.variances.empty();
      EXPECT_EQ(mine, upstream) << c.name << " " << group << " " << q.name << ": "
                                << (upstream ? "rabbit writes variances" : "rabbit writes none");
      ++checked;
    }
  EXPECT_GT(checked, 0) << c.name << ": no expected-yield histograms in the reference";
}

std::string case_name(const ::testing::TestParamInfo<FitCase>& info) {
  return info.param.name;
}

INSTANTIATE_TEST_SUITE_P(ReferenceCases, HistogramStorage, ::testing::ValuesIn(storage_cases()), case_name);

}  // namespace
