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
  if (o.scan && !o.scan_range_use_prefit) bad.push_back("--scan (without --scanRangeUsePrefit)");
  if (o.contour_scan) bad.push_back("--contourScan");
  if (o.asym_impacts) bad.push_back("--asymImpacts");
  if (o.global_asym_impacts_linear_warmstart) bad.push_back("--globalAsymImpactsLinearWarmstart");
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
}

}  // namespace rabbit::cli
