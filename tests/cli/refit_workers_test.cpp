// Parallel refits (docs/architecture.md "Parallel refits"): the refits of --asymImpacts,
// --nonProfiledImpacts and --globalAsymImpacts run several at a time on replicas of the fitter, and their
// results equal, bit for bit, those of the sequential order (--refitWorkers 1, the run's own fitter): on
// observed data and on frequentist toys, whose thrown constraint and BB centres the replicas must carry.
// The progress lines are logged, and a negative count is a one-line error naming the option.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "rabbit/postfit/result_file.hpp"
#include "support/command.hpp"
#include "support/test_paths.hpp"

namespace fs = std::filesystem;
using rabbit::result::Hist;
using rabbit::result::ResultReader;
using rabbit::test::example_tensor;
using rabbit::test::run_rabbit_fit_captured;
using rabbit::test::scratch_dir;

namespace {

const std::string kRefits =
    " --freezeParameters slope_background --nonProfiledImpacts --asymImpacts --globalAsymImpacts --nThreads "
    "3";

struct FitRun {
  fs::path file;
  std::string output;
};

FitRun fit(const std::string& args, const std::string& name) {
  const fs::path dir = scratch_dir(name);
  auto r = run_rabbit_fit_captured(example_tensor() + " " + args + kRefits + " -o " + dir.string());
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return {dir / "fitresults.hdf5", r.output};
}

// Every refit histogram (and the fitted parameters) of every result group of a and b are identical.
void expect_identical(const fs::path& a, const fs::path& b, size_t groups_expected) {
  const ResultReader ra(a.string()), rb(b.string());
  const auto groups = ra.result_groups();
  ASSERT_EQ(groups, rb.result_groups());
  ASSERT_EQ(groups.size(), groups_expected);
  for (const auto& g : groups)
    for (const char* name :
         {"parms", "impacts_asym", "impacts_asym_grouped", "nonprofiled_impacts_asym",
          "nonprofiled_impacts_asym_grouped", "global_impacts_asym", "global_impacts_asym_grouped"}) {
      const std::string path = g + "/" + name;
      ASSERT_TRUE(ra.exists(path)) << path;
      const Hist ha = ra.hist(path), hb = rb.hist(path);
      EXPECT_EQ(ha.axis_labels, hb.axis_labels) << path;
      ASSERT_EQ(ha.values.size(), hb.values.size()) << path;
      size_t differ = 0;
      for (size_t i = 0; i < ha.values.size(); ++i) {
        // NaN marks the columns of impacts_asym_grouped that hold no interval; equal NaNs count as equal.
        const bool same =
            ha.values[i] == hb.values[i] || (ha.values[i] != ha.values[i] && hb.values[i] != hb.values[i]);
        differ += same ? 0 : 1;
      }
      EXPECT_EQ(differ, 0u) << path << ": values differ between the sequential and the parallel refits";
    }
}

}  // namespace

TEST(RefitWorkers, ParallelRefitsGiveTheSequentialResults) {
  const FitRun seq = fit("-t 0 --unblind --refitWorkers 1", "refit_workers_seq");
  const FitRun par = fit("-t 0 --unblind --refitWorkers 3", "refit_workers_par");
  expect_identical(seq.file, par.file, 1);
  EXPECT_NE(par.output.find("asym impacts: "), std::string::npos) << par.output;
  EXPECT_NE(par.output.find("3 at a time with 1 thread(s) each (--refitWorkers)"), std::string::npos)
      << par.output;
  for (const char* what : {"nonprofiled impacts", "asym impacts", "global asym impacts"}) {
    for (const FitRun* r : {&seq, &par}) {
      const auto at = r->output.find(std::string(what) + ": ");
      ASSERT_NE(at, std::string::npos) << what << "\n" << r->output;
      EXPECT_NE(r->output.find(" refits, elapsed ", at), std::string::npos) << what << "\n" << r->output;
      EXPECT_NE(r->output.find("ETA ", at), std::string::npos) << what << "\n" << r->output;
    }
  }
}

// Frequentist toys throw the constraint centres and the BB centres of each toy: a replica made for a toy's
// refits must start from that toy's state, not the model's defaults.
TEST(RefitWorkers, ParallelRefitsOfToysGiveTheSequentialResults) {
  const std::string toys = "-t -1 2 --toysSystRandomize frequentist --seed 7";
  const FitRun seq = fit(toys + " --refitWorkers 1", "refit_workers_toys_seq");
  const FitRun par = fit(toys + " --refitWorkers 2", "refit_workers_toys_par");
  expect_identical(seq.file, par.file, 3);
}

TEST(RefitWorkers, NegativeCountIsAnError) {
  auto r = run_rabbit_fit_captured(example_tensor() + " --asymImpacts --refitWorkers -1 -o " +
                                   scratch_dir("refit_workers_bad").string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("argument --refitWorkers: must be >= 0"), std::string::npos) << r.output;
}
