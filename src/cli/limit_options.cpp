// docs/user-guide.md "rabbit_limit": which options rabbit_limit takes. rabbit_limit.py's parser is
// rabbit's common parser plus its own three options; rabbit_fit's own options are refused here as
// upstream's argparse would, and common options that the limit sequence cannot honour are refused by
// name instead of being silently ignored.
#include "limit_options.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <exception>

#include "rabbit/core/error.hpp"

namespace rabbit::cli {
namespace {

// argparse's rule: a word starting with '-' is an option unless it reads as a negative number.
bool looks_like_option(const std::string& word) {
  if (word.size() < 2 || word[0] != '-') return false;
  char* end = nullptr;
  std::strtod(word.c_str(), &end);
  return *end != '\0';
}

std::vector<double> parse_levels(const std::vector<std::string>& vals) {
  std::vector<double> levels;
  for (const auto& v : vals) {
    size_t used = 0;
    double cl = 0.0;
    try {
      cl = std::stod(v, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != v.size() || !(cl > 0.0 && cl < 0.5))
      throw OptionError(fmt::format("--levels: '{}' is not a CLs level in (0, 0.5)", v));
    levels.push_back(cl);
  }
  return levels;
}

}  // namespace

std::vector<std::string> take_limit_options(int argc, const char* const* argv, LimitOptions& lo) {
  std::vector<std::string> rest = {argv[0]};
  bool outname = false, modes_given = false;
  std::vector<std::string> modes;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--asymptoticLimits" || a == "--levels" || a == "--modes") {
      std::vector<std::string> vals;
      while (i + 1 < argc && !looks_like_option(argv[i + 1])) vals.emplace_back(argv[++i]);
      if (vals.empty()) throw OptionError(a + ": expected at least one argument");
      if (a == "--asymptoticLimits") lo.params = vals;
      if (a == "--modes") modes = vals, modes_given = true;
      if (a == "--levels") lo.levels = parse_levels(vals);
      continue;
    }
    if (a == "--outname" || a.rfind("--outname=", 0) == 0) outname = true;
    rest.push_back(a);
  }
  if (modes_given) {
    lo.gaussian = lo.likelihood = false;
    for (const auto& m : modes) {
      if (m == "gaussian")
        lo.gaussian = true;
      else if (m == "likelihood")
        lo.likelihood = true;
      else
        throw OptionError(
            fmt::format("--modes: invalid choice '{}' (choose from 'gaussian', 'likelihood')", m));
    }
  }
  if (!outname) rest.insert(rest.end(), {"--outname", "limits.hdf5"});  // rabbit_limit.py's default
  return rest;
}

std::vector<std::string> check_limit_options(const FitOptions& o, const LimitOptions& lo) {
  if (lo.params.empty()) throw OptionError("--asymptoticLimits: no parameter given");
  const FitOptions d;  // the defaults: an option whose value differs was given
  // rabbit_fit's own options: not in rabbit's common parser, so not options of rabbit_limit.py.
  const std::vector<std::pair<bool, const char*>> fit_only = {
      {o.no_fit != d.no_fit, "--noFit"},
      {o.prefit_only != d.prefit_only, "--prefitOnly"},
      {o.full_nll != d.full_nll, "--fullNll"},
      {o.do_impacts != d.do_impacts, "--doImpacts"},
      {o.global_impacts != d.global_impacts, "--globalImpacts"},
      {o.gaussian_global_impacts != d.gaussian_global_impacts, "--gaussianGlobalImpacts"},
      {o.non_profiled_impacts != d.non_profiled_impacts, "--nonProfiledImpacts"},
      {o.asym_impacts != d.asym_impacts, "--asymImpacts"},
      {o.asym_impacts_include.has_value(), "--asymImpactsInclude"},
      {o.asym_impacts_exclude.has_value(), "--asymImpactsExclude"},
      {o.asym_impacts_hess != d.asym_impacts_hess, "--asymImpactsHess"},
      {o.asym_impacts_tol != d.asym_impacts_tol, "--asymImpactsTol"},
      {o.global_asym_impacts != d.global_asym_impacts, "--globalAsymImpacts"},
      {o.global_asym_impacts_include.has_value(), "--globalAsymImpactsInclude"},
      {o.global_asym_impacts_exclude.has_value(), "--globalAsymImpactsExclude"},
      {o.global_asym_impacts_sigma != d.global_asym_impacts_sigma, "--globalAsymImpactsSigma"},
      {o.global_asym_impacts_linear_warmstart, "--globalAsymImpactsLinearWarmstart"},
      {o.save_hists, "--saveHists"},
      {o.save_hists_per_process, "--saveHistsPerProcess"},
      {o.compute_hist_errors, "--computeHistErrors"},
      {o.compute_hist_errors_per_process, "--computeHistErrorsPerProcess"},
      {o.compute_hist_cov, "--computeHistCov"},
      {o.compute_hist_impacts, "--computeHistImpacts"},
      {o.compute_hist_gaussian_impacts, "--computeHistGaussianImpacts"},
      {o.compute_variations, "--computeVariations"},
      {o.no_chi2, "--noChi2"},
      {o.compute_saturated_projection_tests, "--computeSaturatedProjectionTests"},
      {o.no_postfit_profile_bb, "--noPostfitProfileBB"},
      {o.scan.has_value(), "--scan"},
      {o.scan_points != d.scan_points, "--scanPoints"},
      {o.scan_range != d.scan_range, "--scanRange"},
      {o.scan_range_use_prefit, "--scanRangeUsePrefit"},
      {!o.scan_2d.empty(), "--scan2D"},
      {o.contour_scan.has_value(), "--contourScan"},
      {o.contour_levels != d.contour_levels, "--contourLevels"},
      {!o.contour_scan_2d.empty(), "--contourScan2D"},
      {o.l_curve_scan, "--lCurveScan"},
      {o.l_curve_optimize, "--lCurveOptimize"},
      {o.model.regularization_strength != d.model.regularization_strength, "--regularizationStrength"},
      {o.external_postfit.has_value(), "--externalPostfit"},
      {o.external_postfit_result.has_value(), "--externalPostfitResult"},
  };
  for (const auto& [given, name] : fit_only)
    if (given) throw OptionError(fmt::format("{}: an option of rabbit_fit, not of rabbit_limit", name));
  // Common options that rabbit_limit.py takes but does not use (it never adds regularizers nor
  // composes mappings) or cannot run with (--noHessian leaves it without the covariance that σ and
  // the contour start need; --forceLinear would replace its fits by Newton steps).
  if (!o.model.regularization.empty())
    throw OptionError("-r/--regularization: not used by rabbit_limit (upstream ignores it)");
  if (o.composite_mapping) throw OptionError("--compositeMapping: not used by rabbit_limit (one -m only)");
  if (o.no_hessian) throw OptionError("--noHessian: rabbit_limit needs the covariance of each fit");
  if (o.force_linear) throw OptionError("--forceLinear: not supported by rabbit_limit");
  if (!o.mappings.empty() && lo.likelihood)
    throw OptionError("-m/--mapping: a limit on a mapping is computed with --modes gaussian only");
  std::vector<std::string> warnings;
  if (o.mappings.size() > 1)
    warnings.push_back(
        fmt::format("-m/--mapping: {} mappings given, the limit is on the first one only "
                    "(as rabbit_limit.py)",
                    o.mappings.size()));
  return warnings;
}

}  // namespace rabbit::cli
