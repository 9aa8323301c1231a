// rabbit_fit's minimizer options on the example model (docs/minimizers.md): the three methods
// reach one minimum, --precondition* reaches the fit and leaves it where it was, and the
// Gauss-Newton reference matrix leaves the observed data alone. The first run of each test is the
// executable, the others the same program in this process.
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "rabbit/fit/make_fitter.hpp"
#include "rabbit/model/model.hpp"
#include "rabbit/postfit/result_file.hpp"
#include "support/command.hpp"
#include "support/error_measures.hpp"
#include "support/test_paths.hpp"

namespace fs = std::filesystem;
using rabbit::result::ResultReader;
using rabbit::test::example_tensor;
using rabbit::test::relative_error;
using rabbit::test::run_rabbit_fit;
using rabbit::test::run_rabbit_fit_captured;
using rabbit::test::scratch_dir;

TEST(RabbitFit, ThreeMinimizersReachTheSameMinimum) {
  // Issue 4: trust-krylov (GLTR), trust-ncg (Steihaug-CG) and trust-exact (More–Sorensen) on the
  // example model end at the same NLL to 1e-8; parameters agree to a small fraction of their
  // uncertainty (an NLL difference of 1e-8 allows shifts of ~1e-4 σ).
  auto dir = scratch_dir("cli_three_minimizers");
  const std::string base = example_tensor() + " -t 0 --unblind -o " + dir.string();
  std::vector<std::unique_ptr<ResultReader>> results;
  for (const char* method : {"trust-krylov", "trust-ncg", "trust-exact"}) {
    // The first method runs the executable, the others the same program in this process.
    const auto run = results.empty() ? run_rabbit_fit : run_rabbit_fit_captured;
    auto r = run(base + " --minimizerMethod " + method + " -p " + method);
    ASSERT_EQ(r.exit_code, 0) << method << ": " << r.output;
    results.push_back(
        std::make_unique<ResultReader>((dir / (std::string("fitresults_") + method + ".hdf5")).string()));
  }
  const double nll = results[0]->scalar("results/nllvalreduced");
  const auto parms = results[0]->hist("results/parms");
  for (size_t m = 1; m < results.size(); ++m) {
    EXPECT_NEAR(results[m]->scalar("results/nllvalreduced"), nll, 1e-8) << m;
    EXPECT_LT(results[m]->scalar("results/edmval"), 1e-6) << m;
    const auto p = results[m]->hist("results/parms");
    ASSERT_EQ(p.values.size(), parms.values.size());
    for (size_t i = 0; i < p.values.size(); ++i)
      EXPECT_NEAR(p.values[i], parms.values[i], 1e-3 * std::sqrt(parms.variances[i]))
          << m << " parameter " << i;
  }
}
TEST(RabbitFit, PreconditionerOptionsReachTheFit) {
  // --preconditionParams resolves groups and names into one block per expression, and the fit ends
  // at the plain fit's minimum. That the preconditioner never moves the minimum (every method,
  // scope, reference matrix and transform) is checked in process by test_minimize's
  // PreconditionedFit.ReachesTheUnpreconditionedMinimum (docs/minimizers.md "Preconditioner").
  auto dir = scratch_dir("cli_precondition");
  const std::string base = example_tensor() + " -t 0 --unblind -o " + dir.string();
  auto r = run_rabbit_fit(base + " -p plain");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // "slopes" and "norm" are systematic groups (8 and 1 members), "sig" a parameter name.
  r = run_rabbit_fit_captured(
      base +
      " --precondition --preconditionParams slopes norm sig --preconditionBlocks expressions -p groups");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("Preconditioned 3 of 3 block(s), 10 parameters"), std::string::npos) << r.output;
  {
    ResultReader ref((dir / "fitresults_plain.hdf5").string()), f((dir / "fitresults_groups.hdf5").string());
    EXPECT_NEAR(f.scalar("results/nllvalreduced"), ref.scalar("results/nllvalreduced"), 1e-8);
    const auto parms = f.hist("results/parms"), ref_parms = ref.hist("results/parms");
    ASSERT_EQ(parms.values.size(), ref_parms.values.size());
    for (size_t i = 0; i < parms.values.size(); ++i) {
      EXPECT_NEAR(parms.values[i], ref_parms.values[i], 1e-3 * std::sqrt(ref_parms.variances[i])) << i;
      EXPECT_LT(relative_error(parms.variances[i], ref_parms.variances[i]), 1e-5) << i;
    }
  }
  // Bad values are refused before anything is read: exit code 2, one line naming the option.
  for (const std::string bad : {"--preconditionRidge -1", "--preconditionFrom fisher",
                                "--preconditionBlocks diag", "--preconditionBlockThreshold nan"}) {
    auto r = run_rabbit_fit_captured(base + " --precondition " + bad + " -p bad");
    EXPECT_EQ(r.exit_code, 2) << bad << ": " << r.output;
    EXPECT_EQ(r.output.rfind("rabbit_fit: error: argument --precondition", 0), 0u) << r.output;
    EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
  }
  EXPECT_FALSE(fs::exists(dir / "fitresults_bad.hdf5"));
}
TEST(RabbitFit, GaussNewtonPreconditionerLeavesTheObservedDataAlone) {
  // The Gauss-Newton reference matrix is built by swapping in Asimov data; the stored NLL is
  // evaluated after the fit with whatever the fitter holds, so it must be the data's NLL at x̂.
  auto dir = scratch_dir("cli_precondition_gn_data");
  auto r = run_rabbit_fit(example_tensor() +
                          " -t -1 0 --unblind --precondition --preconditionParams '.*' --preconditionFrom "
                          "gaussnewton -o " +
                          dir.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("Preconditioned"), std::string::npos) << r.output;
  ResultReader f((dir / "fitresults.hdf5").string());
  const auto parms = f.hist("results/parms");
  auto input = std::make_shared<rabbit::FitInputData>(rabbit::read_fit_input(example_tensor()));
  auto model = rabbit::build_model(input, rabbit::ModelOptions{});
  auto fitter = rabbit::make_fitter(model, rabbit::FitterOptions{});
  fitter->set_observed(input->data_obs, Eigen::VectorXd());
  Eigen::VectorXd x =
      Eigen::Map<const Eigen::VectorXd>(parms.values.data(), static_cast<Eigen::Index>(parms.values.size()));
  EXPECT_LT(relative_error(fitter->value(x), f.scalar("results/nllvalreduced")), 1e-12);
  // And the minimum is the plain fit's.
  r = run_rabbit_fit_captured(example_tensor() + " -t 0 --unblind -o " + dir.string() + " -p plain");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ResultReader p((dir / "fitresults_plain.hdf5").string());
  EXPECT_NEAR(p.scalar("results/nllvalreduced"), f.scalar("results/nllvalreduced"), 1e-8);
}
