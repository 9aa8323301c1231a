// docs/user-guide.md "Rules across options" rules 1, 2, 11 and 12: the value range of every numeric
// option, --outname inside -o, and the inputs no fit can use, each refused in one line that names the
// option or the dataset (docs/reliability.md).
#include <gtest/gtest.h>

#include <functional>
#include <limits>
#include <string>
#include <typeinfo>
#include <vector>

#include "rabbit/cli/validate_run.hpp"
#include "rabbit/core/error.hpp"
#include "support/command.hpp"
#include "support/exception_message.hpp"
#include "support/test_paths.hpp"

namespace rabbit {
namespace {

using cli::FitOptions;
using test::message_of;

std::string rule_error(const FitOptions& o) {
  return message_of<OptionError>([&] { cli::check_option_rules(o); });
}

// Two observed bins, one process, yields 3 and 4.
FitInputData two_bin_input() {
  FitInputData in;
  in.filename = "in.hdf5";
  in.nbins = in.nbinsfull = 2;
  in.nproc = 1;
  in.procs = {"sig"};
  in.norm = {3.0, 4.0};
  in.sumw = {3.0, 4.0};
  in.sumw2 = {1.0, 1.0};
  in.data_obs = Eigen::Vector2d(2.0, 5.0);
  in.pseudodatanames = {"ps"};
  in.pseudodata = Eigen::MatrixXd::Constant(2, 1, 1.0);
  return in;
}

std::string input_error(const FitOptions& o, const FitInputData& in) {
  return message_of<InputError>([&] { cli::validate_run(o, in, cli::known_capabilities()); });
}

TEST(ValueRanges, EveryNumericOptionOutsideItsRangeIsRefusedNamingIt) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<std::pair<std::function<void(FitOptions&)>, std::string>> cases = {
      {[](FitOptions& o) { o.minimizer_maxiter = -3; }, "argument --minimizerMaxiter: must be >= 0, got -3"},
      {[](FitOptions& o) { o.minimizer_gtol = -1e-3; },
       "argument --minimizerGtol: must be a finite number >= 0, got -0.001"},
      {[nan](FitOptions& o) { o.minimizer_ftol = nan; },
       "argument --minimizerFtol: must be a finite number >= 0, got nan"},
      {[](FitOptions& o) { o.model.prefit_unconstrained_nuisance_uncertainty = -1; },
       "argument --prefitUnconstrainedNuisanceUncertainty: must be a finite number >= 0, got -1"},
      {[nan](FitOptions& o) {
         o.model.expect_signal = {{"sig", nan}};
       },
       "argument --expectSignal: value of 'sig' must be finite, got nan"},
      {[](FitOptions& o) {
         o.model.set_constraint_minimum = {{"bkg", std::numeric_limits<double>::infinity()}};
       },
       "argument --setConstraintMinimum: value of 'bkg' must be finite, got inf"},
      {[](FitOptions& o) { o.scan_points = 0; }, "argument --scanPoints: must be >= 1"},
      {[](FitOptions& o) { o.scan_range = 0; }, "argument --scanRange: must be a finite number > 0, got 0"},
      {[](FitOptions& o) {
         o.contour_levels = {1.0, -2.0};
       },
       "argument --contourLevels: must be a finite number > 0, got -2"},
      {[](FitOptions& o) {
         o.toys = {0, -2};
       },
       "argument --toys: must be >= -1, got -2"},
      {[](FitOptions& o) { o.seed = -5; }, "argument --seed: must be >= 0, got -5"},
      {[](FitOptions& o) { o.max_restarts = -2; }, "argument --maxRestarts: must be >= -1, got -2"},
      {[nan](FitOptions& o) { o.stall_rel_tol = nan; }, "argument --stallRelTol: must be >= 0"},
      {[](FitOptions& o) { o.n_devices = 1000; }, "argument --nDevices: must be <= 64, got 1000"},
  };
  for (const auto& [change, expected] : cases) {
    FitOptions o;
    change(o);
    EXPECT_EQ(rule_error(o).rfind(expected, 0), 0u) << rule_error(o) << "\n  expected: " << expected;
  }
  FitOptions edges;
  edges.minimizer_maxiter = 0;
  edges.toys = {-1, 0, 3};
  edges.seed = 0;
  edges.max_restarts = -1;
  edges.n_devices = 64;
  edges.model.prefit_unconstrained_nuisance_uncertainty = 0;
  EXPECT_EQ(rule_error(edges), "no " + std::string(typeid(OptionError).name()));
}

TEST(ValueRanges, OutnameCannotLeaveTheOutputDirectory) {
  for (const std::string bad : {"/", "/tmp/x.hdf5", "../x.hdf5", "a/../../x.hdf5", "sub/", ".", ""}) {
    FitOptions o;
    o.outname = bad;
    EXPECT_EQ(rule_error(o).rfind("argument --outname: must", 0), 0u) << "'" << bad << "': " << rule_error(o);
  }
  for (const std::string good : {"fit.hdf5", "sub/dir/fit", "a/../fit.hdf5"}) {
    FitOptions o;
    o.outname = good;
    EXPECT_EQ(rule_error(o), "no " + std::string(typeid(OptionError).name())) << good;
  }
  FitOptions o;
  o.postfix = "../../x";
  EXPECT_EQ(rule_error(o), "argument --postfix: must not contain '/', got '../../x'");
}

TEST(ValueRanges, CommandLineRefusalsAreOneLineWithExitCodeTwo) {
  const auto dir = test::scratch_dir("value_ranges_cli");
  for (const std::string args : {"--nDevices 1000", "--outname /", "--scanRange -1", "--seed -1"}) {
    const test::CommandResult r =
        test::run_rabbit_fit(test::example_tensor() + " -o " + dir.string() + " " + args);
    EXPECT_EQ(r.exit_code, 2) << args << ": " << r.output;
    EXPECT_NE(r.output.find("rabbit_fit: error: argument --"), std::string::npos) << args << ": " << r.output;
    EXPECT_EQ(r.output.find('\n'), r.output.size() - 1) << args << ": " << r.output;
  }
}

TEST(FittableInput, NoProcessesAllZeroYieldsAndNegativeCountsNameTheDataset) {
  FitOptions o;
  o.toys = {0};
  EXPECT_EQ(input_error(o, two_bin_input()), "no " + std::string(typeid(InputError).name()));

  FitInputData none = two_bin_input();
  none.nproc = 0;
  none.procs.clear();
  none.norm.clear();
  EXPECT_EQ(input_error(o, none), "in.hdf5: dataset 'hprocs': lists no processes, there is nothing to fit");

  FitInputData zero = two_bin_input();
  zero.norm = {0.0, 0.0};
  EXPECT_EQ(input_error(o, zero), "in.hdf5: dataset 'hnorm': every yield is zero, there is nothing to fit");
  zero.sparse = true;
  zero.norm.clear();
  EXPECT_EQ(input_error(o, zero),
            "in.hdf5: dataset 'hnorm_sparse/values': every yield is zero, there is nothing to fit");

  FitInputData negative = two_bin_input();
  negative.data_obs[1] = -2.0;
  EXPECT_EQ(
      input_error(o, negative),
      "in.hdf5: dataset 'hdata_obs': bin 1 has the negative count -2, which a Poisson fit of -t 0 cannot "
      "use (--chisqFit or --covarianceFit can)");
  FitOptions asimov;  // -t -1 fits the expectation, not the data
  EXPECT_EQ(input_error(asimov, negative), "no " + std::string(typeid(InputError).name()));
  o.pseudo_data = std::vector<std::string>{};
  EXPECT_EQ(input_error(o, negative), "no " + std::string(typeid(InputError).name()));
  negative.pseudodata(0, 0) = -1.0;
  EXPECT_EQ(
      input_error(o, negative).rfind("in.hdf5: dataset 'hpseudodata' (set 'ps'): bin 0 has the negative", 0),
      0u)
      << input_error(o, negative);
}

}  // namespace
}  // namespace rabbit
