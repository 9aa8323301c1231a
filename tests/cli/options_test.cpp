// Command-line parsing of rabbit_fit (docs/user-guide.md "Command-line rules"): argparse behaviours and
// refusals.
#include "rabbit/cli/options.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "rabbit/core/error.hpp"

using rabbit::OptionError;
using rabbit::cli::FitOptions;
using rabbit::cli::parse_fit_options;

namespace {

FitOptions parse(std::vector<std::string> args) {
  args.insert(args.begin(), "rabbit_fit");
  std::vector<const char*> argv;
  for (auto& a : args) argv.push_back(a.c_str());
  return parse_fit_options(static_cast<int>(argv.size()), argv.data());
}

std::string error_of(std::vector<std::string> args) {
  try {
    parse(std::move(args));
  } catch (const OptionError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(Options, Defaults) {
  auto o = parse({"in.hdf5"});
  EXPECT_EQ(o.filename, "in.hdf5");
  EXPECT_EQ(o.toys, std::vector<int64_t>({-1}));
  EXPECT_EQ(o.output_file(), "./fitresults.hdf5");
  EXPECT_EQ(o.verbose, 3);
  EXPECT_EQ(o.scan_points, 15);
  EXPECT_FALSE(o.scan.has_value());
  EXPECT_EQ(o.contour_levels, std::vector<double>({1.0, 2.0}));
  EXPECT_NE(o.args_json.find("\"toys\": [-1]"), std::string::npos);
  EXPECT_NE(o.args_json.find("\"paramModel\": null"), std::string::npos);
  EXPECT_NE(o.args_json.find("\"earlyStopping\": -1"), std::string::npos);
}

TEST(Options, NegativeNumbersAreValues) {
  auto o = parse({"in.hdf5", "-t", "-1", "0", "--doImpacts"});
  EXPECT_EQ(o.toys, std::vector<int64_t>({-1, 0}));
  EXPECT_TRUE(o.do_impacts);
  auto p = parse({"-t", "-1", "--setConstraintMinimum", "bkg_2_norm", "-0.5", "in.hdf5"});
  ASSERT_EQ(p.model.set_constraint_minimum.size(), 1u);
  EXPECT_EQ(p.model.set_constraint_minimum[0].first, "bkg_2_norm");
  EXPECT_DOUBLE_EQ(p.model.set_constraint_minimum[0].second, -0.5);
  EXPECT_EQ(p.filename, "in.hdf5");
}

TEST(Options, RepeatedOptions) {
  // list+ : the last occurrence wins (argparse nargs='+'); append kinds accumulate.
  auto o = parse({"in.hdf5", "-t", "0", "-t", "-1", "--paramModel", "Mu", "--paramModel", "Ones",
                  "--expectSignal", "sig", "2", "--expectSignal", "bkg", "0.5", "-v", "2", "-v", "4"});
  EXPECT_EQ(o.toys, std::vector<int64_t>({-1}));
  ASSERT_EQ(o.model.param_models.size(), 2u);
  EXPECT_EQ(o.model.param_models[1].name, "Ones");
  ASSERT_EQ(o.model.expect_signal.size(), 2u);
  EXPECT_DOUBLE_EQ(o.model.expect_signal[1].second, 0.5);
  EXPECT_EQ(o.verbose, 4);
  EXPECT_NE(o.args_json.find("\"expectSignal\": [[\"sig\", \"2\"], [\"bkg\", \"0.5\"]]"), std::string::npos);
}

TEST(Options, BareListOptions) {
  auto o = parse({"in.hdf5", "--unblind", "--scan", "--pseudoData", "--contourScan", "-t", "0"});
  EXPECT_EQ(o.model.unblind, std::vector<std::string>({".*"}));
  ASSERT_TRUE(o.scan.has_value());
  EXPECT_TRUE(o.scan->empty());
  ASSERT_TRUE(o.pseudo_data.has_value());
  EXPECT_TRUE(o.pseudo_data->empty());
  EXPECT_NE(o.args_json.find("\"unblind\": [\".*\"]"), std::string::npos);
  auto p = parse({"in.hdf5", "--unblind", "^sig$", "--scan", "sig", "slope_signal"});
  EXPECT_EQ(p.model.unblind, std::vector<std::string>({"^sig$"}));
  EXPECT_EQ(*p.scan, std::vector<std::string>({"sig", "slope_signal"}));
}

TEST(Options, UniquePrefixesAndAmbiguity) {
  auto o = parse({"in.hdf5", "--doImp", "--saveHistsPer", "--outn", "res"});
  EXPECT_TRUE(o.do_impacts);
  EXPECT_TRUE(o.save_hists_per_process);
  EXPECT_EQ(o.output_file(), "./res.hdf5");
  std::string e = error_of({"in.hdf5", "--save"});
  EXPECT_NE(e.find("ambiguous option: --save"), std::string::npos) << e;
}

TEST(Options, OutputFileName) {
  EXPECT_EQ(parse({"in.hdf5", "-o", "dir", "-p", "blinded"}).output_file(), "dir/fitresults_blinded.hdf5");
  EXPECT_EQ(parse({"in.hdf5", "-o", "d", "--outname", "sub/x.h5", "-p", "a"}).output_file(), "d/sub/x_a.h5");
}

TEST(Options, RefusedAndInvalid) {
  EXPECT_NE(error_of({"in.hdf5", "--minimizerMethod", "BFGS"}).find("not implemented"), std::string::npos);
  EXPECT_NE(error_of({"in.hdf5", "--binByBinStatType", "poisson"}).find("invalid choice: 'poisson'"),
            std::string::npos);
  EXPECT_NE(error_of({"in.hdf5", "-t", "x"}).find("invalid int value: 'x'"), std::string::npos);
  EXPECT_NE(error_of({"in.hdf5", "--chisqFit", "--covarianceFit"}).find("mutually exclusive"),
            std::string::npos);
  EXPECT_NE(error_of({"in.hdf5", "--stallRelTol", "-1"}).find("--stallRelTol"), std::string::npos);
  EXPECT_NE(error_of({"in.hdf5", "--nDevices", "2", "--devices", "0"}).find("--nDevices is 2"),
            std::string::npos);
  EXPECT_NE(
      error_of({"in.hdf5", "-m", "NoSuchMapping", "ch0"})
          .find("mapping NoSuchMapping is not implemented yet (this release supports BaseMapping, Project, "
                "Normalize, Select, Ratio, Normratio, Difference, Asymmetry, AngularCoefficients, LamTung)"),
      std::string::npos);
  EXPECT_EQ(error_of({"in.hdf5", "-m", "Ratio", "ch0", "ch1"}), "");
  EXPECT_EQ(error_of({"in.hdf5", "-m", "Project", "ch1", "a"}), "");
  EXPECT_EQ(error_of({"in.hdf5", "-m", "LamTung", "ch0"}), "");
  EXPECT_NE(error_of({}).find("filename"), std::string::npos);
  EXPECT_NE(error_of({"in.hdf5", "--noSuchOption"}).find("--noSuchOption"), std::string::npos);
  for (const auto& msg : {error_of({"in.hdf5", "--noSuchOption"}), error_of({})})
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
}

TEST(Options, NoHessianIncompatibilitiesListedTogether) {
  EXPECT_EQ(
      error_of({"in.hdf5", "--noHessian", "--doImpacts", "--saveHists", "--computeHistErrors"}),
      "--noHessian is incompatible with: --doImpacts, --saveHists (without --noChi2), --computeHistErrors");
  auto o = parse({"in.hdf5", "--noHessian", "--globalImpacts", "--saveHists", "--noChi2"});
  EXPECT_TRUE(o.no_hessian);
}

// docs/user-guide.md "Options": the histogram impacts and --compositeMapping are parsed, and refused
// where rabbit has no definition or this release does not cover the case.
TEST(Options, HistImpactsAndCompositeMapping) {
  auto o = parse({"in.hdf5", "--saveHists", "--computeHistImpacts", "--computeHistGaussianImpacts",
                  "--compositeMapping", "-m", "Project", "ch0"});
  EXPECT_TRUE(o.compute_hist_impacts);
  EXPECT_TRUE(o.compute_hist_gaussian_impacts);
  EXPECT_TRUE(o.composite_mapping);
  EXPECT_EQ(
      error_of({"in.hdf5", "--saveHists", "--computeHistImpacts", "--prefitUnconstrainedNuisanceUncertainty",
                "1"}),
      "--computeHistImpacts is not implemented with --prefitUnconstrainedNuisanceUncertainty != 0 (as in "
      "rabbit)");
  EXPECT_EQ(error_of({"in.hdf5", "--saveHists", "--computeHistGaussianImpacts", "--covarianceFit",
                      "--binByBinStatType", "normal-additive"}),
            "--computeHistGaussianImpacts is not implemented with --covarianceFit and bin-by-bin statistics");
  EXPECT_EQ(error_of({"in.hdf5", "--noHessian", "--computeHistImpacts", "--computeHistGaussianImpacts"}),
            "--noHessian is incompatible with: --computeHistImpacts, --computeHistGaussianImpacts");
}

TEST(Options, TensorFlowOptionsWarn) {
  auto o = parse({"in.hdf5", "--eager", "--jitCompile", "off", "--minimizerFtol", "1e-3"});
  ASSERT_EQ(o.warnings.size(), 3u);
  EXPECT_NE(o.warnings[0].find("--eager"), std::string::npos);
  EXPECT_NE(o.warnings[2].find("ftol"), std::string::npos);
}

TEST(Options, MultiDeviceOptions) {
  auto o = parse({"in.hdf5", "--nDevices", "2", "--devices", "1", "0", "--hvpBatch", "16"});
  EXPECT_EQ(o.n_devices, 2);
  EXPECT_EQ(o.devices, std::vector<int64_t>({1, 0}));
  EXPECT_EQ(o.hvp_batch, 16);
  EXPECT_EQ(o.n_threads, 0);  // default: from the affinity mask and the cgroup CPU quota
  EXPECT_EQ(parse({"in.hdf5", "--nThreads", "3"}).n_threads, 3);
}

// docs/input-reader.md "Precision": a float32 logk is held as float32 unless --tensorPrecision double.
TEST(Options, TensorPrecision) {
  EXPECT_EQ(parse({"in.hdf5"}).tensor_precision, "file");
  EXPECT_EQ(parse({"in.hdf5", "--tensorPrecision", "double"}).tensor_precision, "double");
  EXPECT_EQ(parse({"in.hdf5", "--tensorPrecision", "file"}).tensor_precision, "file");
  EXPECT_NE(error_of({"in.hdf5", "--tensorPrecision", "float"}).find("invalid choice: 'float'"),
            std::string::npos);
}

TEST(Options, HelpDocumentsEveryOption) {
  std::string help = rabbit::cli::fit_help_text();
  for (const char* opt :
       {"--outpath", "--doImpacts", "--globalImpacts", "--scanRangeUsePrefit", "--contourLevels",
        "--nDevices", "--devices", "--asymImpacts", "--eager", "--noHessian", "--pseudoData"})
    EXPECT_NE(help.find(opt), std::string::npos) << opt;
  try {
    parse({"--help"});
    FAIL() << "no HelpRequested";
  } catch (const rabbit::cli::HelpRequested& h) {
    EXPECT_NE(h.text.find("--toys"), std::string::npos);
  }
}

TEST(Options, PreconditionerOptions) {
  auto o = parse({"in.hdf5"});
  EXPECT_FALSE(o.precondition);
  EXPECT_TRUE(o.precondition_params.empty());
  EXPECT_EQ(o.precondition_blocks, "auto");
  EXPECT_EQ(o.precondition_block_threshold, 0.1);
  EXPECT_EQ(o.precondition_from, "hessian");
  EXPECT_EQ(o.precondition_ridge, 1e-8);
  EXPECT_EQ(o.precondition_transform, "ridge");
  EXPECT_NE(o.args_json.find("\"precondition\": false"), std::string::npos) << o.args_json;

  o = parse({"in.hdf5", "--precondition", "--preconditionParams", "sig", "lumi.*", "--preconditionBlocks",
             "expressions", "--preconditionBlockThreshold", "0.25", "--preconditionFrom", "gaussnewton",
             "--preconditionRidge", "1e-6", "--preconditionTransform", "spectral"});
  EXPECT_TRUE(o.precondition);
  EXPECT_EQ(o.precondition_params, std::vector<std::string>({"sig", "lumi.*"}));
  EXPECT_EQ(o.precondition_blocks, "expressions");
  EXPECT_EQ(o.precondition_block_threshold, 0.25);
  EXPECT_EQ(o.precondition_from, "gaussnewton");
  EXPECT_EQ(o.precondition_ridge, 1e-6);
  EXPECT_EQ(o.precondition_transform, "spectral");
  EXPECT_TRUE(o.warnings.empty());
  EXPECT_NE(o.args_json.find("\"preconditionParams\": [\"sig\", \"lumi.*\"]"), std::string::npos)
      << o.args_json;

  // Bare --preconditionBlocks means auto (argparse const).
  o = parse({"in.hdf5", "--precondition", "--preconditionBlocks"});
  EXPECT_EQ(o.precondition_blocks, "auto");
  // Given without --precondition: accepted, one warning naming the option.
  o = parse({"in.hdf5", "--preconditionRidge", "1e-4"});
  ASSERT_EQ(o.warnings.size(), 1u);
  EXPECT_EQ(o.warnings[0], "--preconditionRidge has no effect without --precondition");

  // Bad values: one line naming the option.
  for (const auto& [args, expected] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"--preconditionBlocks", "diagonal"},
            "argument --preconditionBlocks: invalid choice: 'diagonal'"},
           {{"--preconditionFrom", "fisher"}, "argument --preconditionFrom: invalid choice: 'fisher'"},
           {{"--preconditionTransform", "qr"}, "argument --preconditionTransform: invalid choice: 'qr'"},
           {{"--preconditionRidge", "-1"},
            "argument --preconditionRidge: must be a finite number >= 0, got -1"},
           {{"--preconditionRidge", "nan"}, "argument --preconditionRidge: must be a finite number >= 0"},
           {{"--preconditionRidge", "abc"}, "argument --preconditionRidge: invalid float value: 'abc'"},
           {{"--preconditionBlockThreshold", "-0.5"},
            "argument --preconditionBlockThreshold: must be a finite number >= 0, got -0.5"},
       }) {
    std::vector<std::string> full = {"in.hdf5", "--precondition"};
    full.insert(full.end(), args.begin(), args.end());
    const std::string msg = error_of(full);
    EXPECT_EQ(msg.rfind(expected, 0), 0u) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
  const auto refused = rabbit::cli::refused_options();
  for (const char* name :
       {"precondition", "preconditionParams", "preconditionBlocks", "preconditionBlockThreshold",
        "preconditionFrom", "preconditionRidge", "preconditionTransform"})
    EXPECT_EQ(std::find(refused.begin(), refused.end(), name), refused.end()) << name;
}

// -r/--regularization, --regularizationStrength and the L curve (docs/user-guide.md "Regularization").
TEST(Options, Regularization) {
  auto o =
      parse({"in.hdf5", "-r", "SVD", "Project", "ch1", "a", "-r", "SVD", "Select", "ch0_masked",
             "--regularizationStrength", "-0.5", "--lCurveScan", "--lCurveOptimize", "--noBinByBinStat"});
  ASSERT_EQ(o.model.regularization.size(), 2u);
  EXPECT_EQ(o.model.regularization[0].name, "SVD");
  EXPECT_EQ(o.model.regularization[0].mapping, std::vector<std::string>({"Project", "ch1", "a"}));
  EXPECT_EQ(o.model.regularization[1].mapping, std::vector<std::string>({"Select", "ch0_masked"}));
  EXPECT_DOUBLE_EQ(o.model.regularization_strength, -0.5);
  EXPECT_TRUE(o.l_curve_scan);
  EXPECT_TRUE(o.l_curve_optimize);
  EXPECT_NE(o.args_json.find("\"regularization\": [[\"SVD\", \"Project\", \"ch1\", \"a\"], [\"SVD\", "
                             "\"Select\", \"ch0_masked\"]]"),
            std::string::npos)
      << o.args_json;
  const auto refused = rabbit::cli::refused_options();
  for (const char* name : {"regularization", "regularizationStrength", "lCurveScan", "lCurveOptimize"})
    EXPECT_EQ(std::find(refused.begin(), refused.end(), name), refused.end()) << name;
  for (const auto& [args, expected] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"-r", "SVD"}, "argument -r/--regularization: expected NAME MAPPING [ARG...], got 'SVD'"},
           {{"--lCurveScan"}, "--lCurveScan needs -r/--regularization"},
           {{"--lCurveOptimize", "--noBinByBinStat"}, "--lCurveOptimize needs -r/--regularization"},
           {{"-r", "SVD", "Select", "ch0_masked", "--lCurveScan", "--lCurveOptimize"}, ""},
           {{"-r", "SVD", "Select", "ch0_masked", "--saveHists", "--computeHistErrors", "--computeHistCov",
             "--computeHistImpacts", "--computeHistErrorsPerProcess"},
            ""},
           {{"-r", "SVD", "Select", "ch0_masked", "--saveHists", "--computeHistGaussianImpacts"},
            "-r/--regularization with bin-by-bin statistics is not implemented with "
            "--computeHistGaussianImpacts; add --noBinByBinStat"},
           {{"-r", "SVD", "Select", "ch0_masked", "--covarianceFit", "--saveHists", "--computeHistErrors"},
            "-r/--regularization with bin-by-bin statistics and --covarianceFit is not implemented with "
            "histogram uncertainties (--computeHistErrors, --computeHistErrorsPerProcess, --computeHistCov, "
            "--computeHistImpacts); add --noBinByBinStat"},
           {{"-r", "SVD", "Select", "ch0_masked", "--covarianceFit", "--saveHists", "--computeHistErrors",
             "--noBinByBinStat"},
            ""},
           {{"-r", "SVD", "Select", "ch0", "--regularizationStrength", "nan"},
            "argument --regularizationStrength: must be a finite number, got nan"},
       }) {
    std::vector<std::string> full = {"in.hdf5"};
    full.insert(full.end(), args.begin(), args.end());
    EXPECT_EQ(error_of(full), expected);
  }
}

// docs/user-guide.md "Rules across options": --scan2D/--contourScan2D take pairs, one line per mistake.
TEST(Options, TwoDimensionalScansAndForceLinear) {
  auto o = parse(
      {"in.hdf5", "--scan2D", "a", "b", "--scan2D", "c", "d", "--contourScan2D", "a", "c", "--forceLinear"});
  EXPECT_EQ(o.scan_2d, (std::vector<std::vector<std::string>>{{"a", "b"}, {"c", "d"}}));
  EXPECT_EQ(o.contour_scan_2d, (std::vector<std::vector<std::string>>{{"a", "c"}}));
  EXPECT_TRUE(o.force_linear);
  EXPECT_FALSE(parse({"in.hdf5"}).force_linear);
  for (const auto& [args, expected] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"--scan2D", "a"}, "argument --scan2D: expects two parameters P1 P2, got 1"},
           {{"--scan2D", "a", "b", "c"}, "argument --scan2D: expects two parameters P1 P2, got 3"},
           {{"--contourScan2D", "a", "a"},
            "argument --contourScan2D: the two parameters must differ, got a twice"},
           {{"--scan2D", "a", "b", "--scanPoints", "4"},
            "argument --scanPoints: --scan2D needs an odd number of points (the grid's centre is the best "
            "fit), "
            "got 4"},
           {{"--contourScan2D", "a", "b", "--scanPoints", "2"},
            "argument --scanPoints: --contourScan2D needs at least 3 angles"},
           {{"--scan2D", "a", "b", "--noHessian"}, "--noHessian is incompatible with: --scan2D (without"},
           {{"--contourScan2D", "a", "b", "--noHessian"},
            "--noHessian is incompatible with: --contourScan2D"},
       }) {
    std::vector<std::string> full = {"in.hdf5"};
    full.insert(full.end(), args.begin(), args.end());
    const std::string msg = error_of(full);
    EXPECT_EQ(msg.rfind(expected, 0), 0u) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
  EXPECT_EQ(error_of({"in.hdf5", "--scan2D", "a", "b", "--noHessian", "--scanRangeUsePrefit"}), "");
}

TEST(Options, MinBBKstatAndBlindingGroup) {
  auto o =
      parse({"in.hdf5", "--minBBKstat", "2.5", "--blindingGroup", "slope_.*", "sig", "--unblind", "norm"});
  EXPECT_DOUBLE_EQ(o.model.min_bb_kstat, 2.5);
  EXPECT_EQ(o.model.blinding_groups, std::vector<std::string>({"slope_.*", "sig"}));
  EXPECT_EQ(o.model.unblind, std::vector<std::string>({"norm"}));
  EXPECT_NE(o.args_json.find("\"minBBKstat\": 2.5"), std::string::npos) << o.args_json;
  auto d = parse({"in.hdf5"});
  EXPECT_EQ(d.model.min_bb_kstat, 0.0);
  EXPECT_TRUE(d.model.blinding_groups.empty());
  EXPECT_EQ(error_of({"in.hdf5", "--minBBKstat", "-1"}), "argument --minBBKstat: must be >= 0, got -1");
}

TEST(Options, ToysRandomizeParameters) {
  EXPECT_FALSE(parse({"in.hdf5"}).toys_randomize_parameters);
  EXPECT_TRUE(parse({"in.hdf5", "-t", "2", "--toysRandomizeParameters"}).toys_randomize_parameters);
}

TEST(Options, ExternalPostfit) {
  auto o = parse({"in.hdf5", "--externalPostfit", "fit.hdf5", "--externalPostfitResult", "asimov"});
  EXPECT_EQ(o.external_postfit, std::optional<std::string>("fit.hdf5"));
  EXPECT_EQ(o.external_postfit_result, std::optional<std::string>("asimov"));
  EXPECT_FALSE(parse({"in.hdf5"}).external_postfit.has_value());
  EXPECT_EQ(error_of({"in.hdf5", "--externalPostfitResult", "asimov"}),
            "--externalPostfitResult needs --externalPostfit");
}
