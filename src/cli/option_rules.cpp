// The rules on option values and across options (docs/user-guide.md "Rules across options", the rules
// that need no input): the first part of the run's front door (rabbit/cli/validate_run.hpp).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
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

// docs/sharding-and-gpu.md "Device selection": explicit indices are distinct, non-negative and as many as
// the shards.
void check_devices(const FitOptions& o) {
  if (o.n_devices < 1) throw OptionError("argument --nDevices: must be >= 1");
  if (o.devices.empty()) return;
  for (auto d : o.devices)
    if (d < 0) throw OptionError(fmt::format("argument --devices: negative device index {}", d));
  if (static_cast<int64_t>(o.devices.size()) != o.n_devices)
    throw OptionError(
        fmt::format("--devices lists {} indices but --nDevices is {}", o.devices.size(), o.n_devices));
  std::vector<int64_t> sorted = o.devices;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
    throw OptionError(fmt::format("--devices lists a device twice: {}", fmt::join(o.devices, ",")));
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
  if (!o.scan_2d.empty() && !o.scan_range_use_prefit) bad.push_back("--scan2D (without --scanRangeUsePrefit)");
  if (!o.contour_scan_2d.empty()) bad.push_back("--contourScan2D");
  if (!bad.empty())
    throw OptionError("--noHessian is incompatible with: " + fmt::format("{}", fmt::join(bad, ", ")));
}

}  // namespace

void check_option_rules(const FitOptions& o) {
  check_choices(o);
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
        throw OptionError(fmt::format("argument {}: expects two parameters P1 P2, got {}", name, pair.size()));
      if (pair[0] == pair[1])
        throw OptionError(fmt::format("argument {}: the two parameters must differ, got {} twice", name, pair[0]));
    }
  if (!o.scan_2d.empty() && o.scan_points % 2 == 0)
    throw OptionError(fmt::format(
        "argument --scanPoints: --scan2D needs an odd number of points (the grid's centre is the best fit), got {}",
        o.scan_points));
  if (!o.contour_scan_2d.empty() && o.scan_points < 3)
    throw OptionError("argument --scanPoints: --contourScan2D needs at least 3 angles");
  if (o.external_postfit_result && !o.external_postfit)
    throw OptionError("--externalPostfitResult needs --externalPostfit");
  if (o.stall_rel_tol < 0) throw OptionError("argument --stallRelTol: must be >= 0");
  check_devices(o);
  if (o.hvp_batch < 1) throw OptionError("argument --hvpBatch: must be >= 1");
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
  // docs/user-guide.md "Toys": the covariance χ² has no Poisson counts to draw.
  const bool toys = std::any_of(o.toys.begin(), o.toys.end(), [](int64_t t) { return t >= 1; });
  if (toys && m.likelihood == DataLikelihood::covariance && o.toys_data_randomize == "poisson")
    throw OptionError("--toysDataRandomize poisson is not allowed with --covarianceFit");
}

}  // namespace rabbit::cli
