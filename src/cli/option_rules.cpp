// The rules on option values and across options (docs/user-guide.md "Rules across options", the rules
// that need no input): the first part of the run's front door (rabbit/cli/validate_run.hpp).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "option_table.hpp"
#include "rabbit/cli/validate_run.hpp"
#include "rabbit/core/error.hpp"

namespace rabbit::cli {
namespace {

// A string option outside its choices: only reachable for options built in code, since the parser
// refuses such values with the same message.
void check_choice(const std::string& option, const std::string& value) {
  for (const auto& s : detail::specs()) {
    if (detail::long_name(s) != option || s.choices.empty()) continue;
    if (std::find(s.choices.begin(), s.choices.end(), value) != s.choices.end()) return;
    std::string c;
    for (const auto& ch : s.choices) c += (c.empty() ? "'" : ", '") + ch + "'";
    throw OptionError(fmt::format("argument --{}: invalid choice: '{}' (choose from {})", option, value, c));
  }
}

void check_choices(const FitOptions& o) {
  check_choice("outputFormat", o.output_format);
  check_choice("minimizerMethod", o.minimizer_method);
  check_choice("toysSystRandomize", o.toys_syst_randomize);
  check_choice("toysDataRandomize", o.toys_data_randomize);
  check_choice("toysDataMode", o.toys_data_mode);
  check_choice("preconditionBlocks", o.precondition_blocks);
  check_choice("preconditionFrom", o.precondition_from);
  check_choice("preconditionTransform", o.precondition_transform);
  check_choice("backend", o.backend);
}

// docs/sharding-and-gpu.md "Device selection": explicit indices are non-negative and as many as the
// shards; one may repeat (`--devices 0,0`: two shards on one GPU).
void check_devices(const FitOptions& o) {
  if (o.n_devices < 1) throw OptionError("argument --nDevices: must be >= 1");
  if (o.devices.empty()) return;
  for (auto d : o.devices)
    if (d < 0) throw OptionError(fmt::format("argument --devices: negative device index {}", d));
  if (static_cast<int64_t>(o.devices.size()) != o.n_devices)
    throw OptionError(
        fmt::format("--devices lists {} indices but --nDevices is {}", o.devices.size(), o.n_devices));
}

// --noHessian: everything that needs the dense Hessian or the covariance, all listed in one message.
void check_no_hessian(const FitOptions& o) {
  if (!o.no_hessian) return;
  std::vector<std::string> bad;
  if (o.do_impacts) bad.push_back("--doImpacts");
  if (o.compute_variations) bad.push_back("--computeVariations");
  if (o.save_hists && !o.no_chi2) bad.push_back("--saveHists (without --noChi2)");
  if (o.compute_hist_errors) bad.push_back("--computeHistErrors");
  if (o.compute_hist_errors_per_process) bad.push_back("--computeHistErrorsPerProcess");
  if (o.compute_hist_cov) bad.push_back("--computeHistCov");
  if (o.compute_hist_impacts) bad.push_back("--computeHistImpacts");
  if (o.compute_hist_gaussian_impacts) bad.push_back("--computeHistGaussianImpacts");
  if (o.scan && !o.scan_range_use_prefit) bad.push_back("--scan (without --scanRangeUsePrefit)");
  if (o.contour_scan) bad.push_back("--contourScan");
  if (o.asym_impacts) bad.push_back("--asymImpacts");
  if (o.global_asym_impacts_linear_warmstart) bad.push_back("--globalAsymImpactsLinearWarmstart");
  if (!o.scan_2d.empty() && !o.scan_range_use_prefit)
    bad.push_back("--scan2D (without --scanRangeUsePrefit)");
  if (!o.contour_scan_2d.empty()) bad.push_back("--contourScan2D");
  if (!bad.empty())
    throw OptionError("--noHessian is incompatible with: " + fmt::format("{}", fmt::join(bad, ", ")));
}

// The L curve (docs/user-guide.md "Regularization") needs a regulariser and finite tau.
void check_l_curve(const FitOptions& o) {
  if (!std::isfinite(o.model.regularization_strength))
    throw OptionError(fmt::format("argument --regularizationStrength: must be a finite number, got {}",
                                  o.model.regularization_strength));
  for (const char* option : {"--lCurveScan", "--lCurveOptimize"}) {
    const bool given = std::string(option) == "--lCurveScan" ? o.l_curve_scan : o.l_curve_optimize;
    if (!given) continue;
    if (o.model.regularization.empty())
      throw OptionError(fmt::format("{} needs -r/--regularization", option));
  }
}

// docs/sharding-and-gpu.md "Device selection": the largest --nDevices.
constexpr int64_t kMaxDevices = 64;

// docs/user-guide.md "Value ranges": every numeric option's values that mean something; the rest name
// the option in one line before any input is read.
void check_at_least(const std::string& option, int64_t value, int64_t lowest) {
  if (value < lowest)
    throw OptionError(fmt::format("argument --{}: must be >= {}, got {}", option, lowest, value));
}
void check_non_negative(const std::string& option, double value) {
  if (!(value >= 0.0) || !std::isfinite(value))
    throw OptionError(fmt::format("argument --{}: must be a finite number >= 0, got {}", option, value));
}
void check_positive(const std::string& option, double value) {
  if (!(value > 0.0) || !std::isfinite(value))
    throw OptionError(fmt::format("argument --{}: must be a finite number > 0, got {}", option, value));
}
void check_finite(const std::string& option, const std::string& name, double value) {
  if (!std::isfinite(value))
    throw OptionError(
        fmt::format("argument --{}: value of '{}' must be finite, got {}", option, name, value));
}

void check_value_ranges(const FitOptions& o) {
  const ModelOptions& m = o.model;
  if (o.minimizer_maxiter) check_at_least("minimizerMaxiter", *o.minimizer_maxiter, 0);
  if (o.minimizer_gtol) check_non_negative("minimizerGtol", *o.minimizer_gtol);
  if (o.minimizer_ftol) check_non_negative("minimizerFtol", *o.minimizer_ftol);
  check_non_negative("prefitUnconstrainedNuisanceUncertainty", m.prefit_unconstrained_nuisance_uncertainty);
  for (const auto& [name, value] : m.expect_signal) check_finite("expectSignal", name, value);
  for (const auto& [name, value] : m.set_constraint_minimum)
    check_finite("setConstraintMinimum", name, value);
  check_positive("scanRange", o.scan_range);
  for (double level : o.contour_levels) check_positive("contourLevels", level);
  for (int64_t t : o.toys) check_at_least("toys", t, -1);
  check_at_least("seed", o.seed, 0);
  check_at_least("maxRestarts", o.max_restarts, -1);
  // docs/sharding-and-gpu.md "Device selection": every shard holds its own n×n Hessian and thread, so a
  // count no node has is a typo, not a request.
  if (o.n_devices > kMaxDevices)
    throw OptionError(fmt::format("argument --nDevices: must be <= {}, got {}", kMaxDevices, o.n_devices));
}

// docs/user-guide.md "Output": the result file stays inside -o; --outname and --postfix only name it.
void check_output_name(const FitOptions& o) {
  namespace fs = std::filesystem;
  const fs::path name(o.outname);
  if (o.outname.empty() || name.has_root_path())
    throw OptionError(
        fmt::format("argument --outname: must be a relative file name inside -o, got '{}'", o.outname));
  const fs::path normal = name.lexically_normal();
  if (normal.empty() || *normal.begin() == ".." || !normal.has_filename() || normal.filename() == "." ||
      normal.filename() == "..")
    throw OptionError(fmt::format(
        "argument --outname: must name a file inside -o (no '..' leaving it, no trailing '/'), got '{}'",
        o.outname));
  if (o.postfix && o.postfix->find('/') != std::string::npos)
    throw OptionError(fmt::format("argument --postfix: must not contain '/', got '{}'", *o.postfix));
}

// docs/user-guide.md "Rules across options": rabbit runs the saturated projection tests while it saves
// the postfit histograms of its Project mappings; without them the option would do nothing.
void check_saturated_projection_tests(const FitOptions& o) {
  if (!o.compute_saturated_projection_tests) return;
  const bool project = std::any_of(o.mappings.begin(), o.mappings.end(),
                                   [](const auto& m) { return !m.empty() && m[0] == "Project"; });
  if (!o.save_hists || !project || o.prefit_only)
    throw OptionError(
        "--computeSaturatedProjectionTests needs --saveHists, a -m Project mapping and a fit (not "
        "--prefitOnly)");
}

}  // namespace

void check_option_rules(const FitOptions& o) {
  check_choices(o);
  check_value_ranges(o);
  check_output_name(o);
  const ModelOptions& m = o.model;
  if (!(m.min_bb_kstat >= 0.0))
    throw OptionError(fmt::format("argument --minBBKstat: must be >= 0, got {}", m.min_bb_kstat));
  // docs/likelihood.md "Barlow–Beeston types and modes": the covariance χ² takes only the normal BB types.
  if (m.likelihood == DataLikelihood::covariance && m.bin_by_bin_stat && m.bb_type == BBType::gamma)
    throw OptionError(
        "--covarianceFit with bin-by-bin statistics requires --binByBinStatType normal-additive, "
        "normal-multiplicative or automatic");
  if (!(o.edm_tol > 0.0) || !std::isfinite(o.edm_tol))
    throw OptionError(fmt::format("--edmTol must be a positive number, got {}", o.edm_tol));
  if (o.scan_points < 1) throw OptionError("argument --scanPoints: must be >= 1");
  // docs/user-guide.md "Likelihood scans": each 2D option names two different parameters.
  for (const auto* pairs : {&o.scan_2d, &o.contour_scan_2d})
    for (const auto& pair : *pairs) {
      const char* name = pairs == &o.scan_2d ? "--scan2D" : "--contourScan2D";
      if (pair.size() != 2)
        throw OptionError(
            fmt::format("argument {}: expects two parameters P1 P2, got {}", name, pair.size()));
      if (pair[0] == pair[1])
        throw OptionError(
            fmt::format("argument {}: the two parameters must differ, got {} twice", name, pair[0]));
    }
  if (!o.scan_2d.empty() && o.scan_points % 2 == 0)
    throw OptionError(
        fmt::format("argument --scanPoints: --scan2D needs an odd number of points (the grid's centre is the "
                    "best fit), got {}",
                    o.scan_points));
  if (!o.contour_scan_2d.empty() && o.scan_points < 3)
    throw OptionError("argument --scanPoints: --contourScan2D needs at least 3 angles");
  if (o.external_postfit_result && !o.external_postfit)
    throw OptionError("--externalPostfitResult needs --externalPostfit");
  if (!(o.stall_rel_tol >= 0) || !std::isfinite(o.stall_rel_tol))
    throw OptionError("argument --stallRelTol: must be >= 0");
  check_devices(o);
  if (o.hvp_batch < 1) throw OptionError("argument --hvpBatch: must be >= 1");
  if (o.n_threads < 0)
    throw OptionError("argument --nThreads: must be >= 0 (0: the CPUs the process may use)");
  if (o.refit_workers < 0)
    throw OptionError("argument --refitWorkers: must be >= 0 (0: one per thread of the fit)");
  if (!(o.precondition_block_threshold >= 0.0) || !std::isfinite(o.precondition_block_threshold))
    throw OptionError(
        fmt::format("argument --preconditionBlockThreshold: must be a finite number >= 0, got {}",
                    o.precondition_block_threshold));
  if (!(o.precondition_ridge >= 0.0) || !std::isfinite(o.precondition_ridge))
    throw OptionError(fmt::format("argument --preconditionRidge: must be a finite number >= 0, got {}",
                                  o.precondition_ridge));
  check_no_hessian(o);
  // As rabbit's global_impacts_obs: the prefit case has no definition for unconstrained parameters
  // given a prefit uncertainty (docs/output-format.md "Global impacts on histogram bins").
  if (o.compute_hist_impacts && m.prefit_unconstrained_nuisance_uncertainty != 0.0)
    throw OptionError(
        "--computeHistImpacts is not implemented with --prefitUnconstrainedNuisanceUncertainty != 0 (as in "
        "rabbit)");
  if (o.compute_hist_gaussian_impacts && m.likelihood == DataLikelihood::covariance && m.bin_by_bin_stat)
    throw OptionError(
        "--computeHistGaussianImpacts is not implemented with --covarianceFit and bin-by-bin statistics");
  check_saturated_projection_tests(o);
  if (!(o.asym_impacts_tol > 0.0) || !std::isfinite(o.asym_impacts_tol))
    throw OptionError(
        fmt::format("argument --asymImpactsTol: must be a finite number > 0, got {}", o.asym_impacts_tol));
  if (!(o.global_asym_impacts_sigma > 0.0) || !std::isfinite(o.global_asym_impacts_sigma))
    throw OptionError(fmt::format("argument --globalAsymImpactsSigma: must be a finite number > 0, got {}",
                                  o.global_asym_impacts_sigma));
  // docs/user-guide.md "Toys": the covariance χ² has no Poisson counts to draw.
  const bool toys = std::any_of(o.toys.begin(), o.toys.end(), [](int64_t t) { return t >= 1; });
  if (toys && m.likelihood == DataLikelihood::covariance && o.toys_data_randomize == "poisson")
    throw OptionError("--toysDataRandomize poisson is not allowed with --covarianceFit");
  check_l_curve(o);
  // docs/likelihood.md "Regularisation and β": with BB the postfit β terms carry the penalty's curvature,
  // but not yet the masked β⁰'s response through x̂ that the Gaussian histogram impacts need, nor the
  // penalty's block of the covariance fit's dense H_ββ⁻¹; refused rather than written without them.
  if (!o.model.regularization.empty() && o.model.bin_by_bin_stat) {
    if (o.compute_hist_gaussian_impacts)
      throw OptionError(
          "-r/--regularization with bin-by-bin statistics is not implemented with "
          "--computeHistGaussianImpacts; "
          "add --noBinByBinStat");
    if (m.likelihood == DataLikelihood::covariance &&
        (o.compute_hist_errors || o.compute_hist_errors_per_process || o.compute_hist_cov ||
         o.compute_hist_impacts))
      throw OptionError(
          "-r/--regularization with bin-by-bin statistics and --covarianceFit is not implemented with "
          "histogram "
          "uncertainties (--computeHistErrors, --computeHistErrorsPerProcess, --computeHistCov, "
          "--computeHistImpacts); add --noBinByBinStat");
  }
}

}  // namespace rabbit::cli
