// The run's front door (rabbit/cli/validate_run.hpp; docs/user-guide.md "Rules across options"): the
// rules of multi-device runs, of the backend choice and between the options and the input. The
// backends state what they cannot evaluate as data (rabbit/model/capabilities.hpp); this unit says which
// options asked for it and how to run instead.
#include "rabbit/cli/validate_run.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <string>
#include <vector>

#include "rabbit/core/error.hpp"
#include "rabbit/fit/devices.hpp"
#include "rabbit/model/param_model.hpp"

namespace rabbit::cli {
namespace {

// One feature of the run that some evaluator may refuse, named by the options that ask for it.
struct Requested {
  FitFeature feature;
  std::string options;
  std::string remedy;  // what else to change besides the backend or the shard count (may be empty)
};

bool any_toys(const FitOptions& o) {
  return std::any_of(o.toys.begin(), o.toys.end(), [](int64_t t) { return t >= 1; });
}

// Frequentist toys throw the BB centres of every entry, masked ones included (docs/user-guide.md "Toys"),
// and β⁰ ≠ 1 on a masked full-mode entry is docs/likelihood.md "BB derivative corner cases" item 3, which
// normal-additive does not reach. An entry is masked when its sumw or sumw2 is 0 or its kstat is below
// --minBBKstat (docs/likelihood.md "Per-entry BB statistics"). Whether a draw lands on β⁰ ≠ 1 is
// random; the configuration is refused, not the toy.
bool toys_move_masked_full_centres(const FitOptions& o, const FitInputData& input) {
  const ModelOptions& m = o.model;
  if (!any_toys(o) || o.toys_syst_randomize != "frequentist" || !m.bin_by_bin_stat ||
      m.bb_mode != BBMode::full || m.bb_type == BBType::normal_additive || input.sumw_per_bin)
    return false;
  const int64_t entries =
      std::min<int64_t>(input.nbins * input.nproc, static_cast<int64_t>(input.sumw.size()));
  for (int64_t i = 0; i < entries && i < static_cast<int64_t>(input.sumw2.size()); ++i) {
    const double w = input.sumw[i], w2 = input.sumw2[i];
    if (w2 == 0.0 || w == 0.0 || (m.min_bb_kstat > 0.0 && w * w / w2 < m.min_bb_kstat)) return true;
  }
  return false;
}

std::vector<Requested> requested_features(const FitOptions& o, const FitInputData& input) {
  std::vector<Requested> out;
  const ModelOptions& m = o.model;
  if (m.likelihood == DataLikelihood::covariance)
    out.push_back({FitFeature::covariance_likelihood, "--covarianceFit", ""});
  if (!m.regularization.empty()) {
    // Every regulariser rabbit_fit can name (SVD) reads the predicted yields (docs/model.md "Regularisers").
    std::vector<std::string> names;
    for (const auto& r : m.regularization) names.push_back(r.name);
    out.push_back(
        {FitFeature::observable_regularizers, fmt::format("--regularization {}", fmt::join(names, ",")), ""});
  }
  for (const auto& spec : m.param_models)
    if (param_model_depends_on_bin(spec.name)) {
      out.push_back({FitFeature::bin_dependent_rates, fmt::format("--paramModel {}", spec.name), ""});
      break;
    }
  if (o.diagnostics && m.bin_by_bin_stat)
    out.push_back({FitFeature::beta_space_diagnostics, "--diagnostics with bin-by-bin statistics",
                   "or add --noBinByBinStat"});
  if (toys_move_masked_full_centres(o, input))
    out.push_back(
        {FitFeature::bb_centres_on_masked_full_entries,
         "toys (-t N) with --toysSystRandomize frequentist and --binByBinStatMode full on an input with "
         "masked BB entries",
         "or --binByBinStatType normal-additive"});
  return out;
}

std::string with_reason(const Requested& r, const FeatureLimit& limit) {
  return fmt::format("{} ({}{})", r.options, limit.reason, r.remedy.empty() ? "" : "; " + r.remedy);
}

// docs/sharding-and-gpu.md "Refused in multi-device mode": one message naming every offending option.
void check_multi_device(const FitOptions& o, const std::vector<Requested>& requested,
                        const RunCapabilities& caps) {
  if (o.n_devices <= 1) return;
  std::vector<std::string> offending;
  for (const auto& r : requested)
    if (const FeatureLimit* l = caps.sharded_limit(r.feature)) offending.push_back(with_reason(r, *l));
  if (offending.empty()) return;
  throw OptionError(
      fmt::format("--nDevices {} (multi-device mode) is incompatible with: {}. These need all bins on one "
                  "device, which is what "
                  "sharding exists to avoid. Drop --nDevices (run single-device), or rerun the step "
                  "single-device from the fit "
                  "output.",
                  o.n_devices, fmt::join(offending, "; ")));
}

// docs/sharding-and-gpu.md "What a fit runs on": --backend cuda, or --devices under --backend auto, asks for
// the CUDA backend; --backend auto alone runs what the CUDA backend refuses on the CPU.
void check_backend(const FitOptions& o, const std::vector<Requested>& requested,
                   const RunCapabilities& caps) {
  const bool by_backend = o.backend == "cuda";
  const bool by_devices = o.backend == "auto" && !o.devices.empty();
  if (!by_backend && !by_devices) return;
  const std::string devices = fmt::format("{}", fmt::join(o.devices, ","));
  if (!caps.cuda.built) {
    if (by_backend)
      throw ResourceError("--backend cuda: this build has no CUDA backend (configure with -DRABBIT_CUDA=ON)");
    throw ResourceError(fmt::format("--devices {}: this build has no CUDA backend", devices));
  }
  for (const auto& r : requested) {
    const FeatureLimit* l = caps.cuda.limit(r.feature);
    if (!l) continue;
    if (by_backend)
      throw OptionError(
          fmt::format("--backend cuda does not support {}; use --backend cpu", with_reason(r, *l)));
    throw OptionError(
        fmt::format("--devices {} selects the CUDA backend, which does not support {}; drop --devices or use "
                    "--backend cpu",
                    devices, with_reason(r, *l)));
  }
}

// docs/model.md "Data likelihoods": without hdata_cov_inv the covariance χ² inverts the data variances.
void check_covariance_input(const FitOptions& o, const FitInputData& input) {
  if (o.model.likelihood != DataLikelihood::covariance || input.data_cov_inv) return;
  const Eigen::VectorXd var = input.data_var.value_or(input.data_obs);
  for (int64_t b = 0; b < var.size(); ++b)
    if (!(var[b] > 0.0))
      throw OptionError(
          fmt::format("--covarianceFit: {} has no hdata_cov_inv and the fallback diag(1/variance) needs "
                      "positive variances "
                      "(bin {} has {})",
                      input.filename, b, var[b]));
}

// docs/user-guide.md "Rules across options": the diagonal χ² divides by the counts of the fitted data set
// (-t 0: the data, or each --pseudoData set); toys are checked when drawn.
void check_chisq_input(const FitOptions& o, const FitInputData& input) {
  if (o.model.likelihood != DataLikelihood::chisq) return;
  if (std::find(o.toys.begin(), o.toys.end(), 0) == o.toys.end()) return;
  auto check = [&](const Eigen::VectorXd& counts, const std::string& what) {
    for (int64_t b = 0; b < counts.size(); ++b)
      if (!(counts[b] > 0.0))
        throw OptionError(
            fmt::format("--chisqFit requires all observed counts to be > 0, but {} of {} has {} in bin {} "
                        "(the fit of -t 0)",
                        what, input.filename, counts[b], b));
  };
  if (!o.pseudo_data) {
    check(input.data_obs, "hdata_obs");
    return;
  }
  std::vector<int64_t> columns;
  for (const auto& name : *o.pseudo_data) columns.push_back(input.pseudodata_index(name));
  if (o.pseudo_data->empty())
    for (int64_t j = 0; j < input.pseudodata.cols(); ++j) columns.push_back(j);
  for (auto j : columns)
    check(input.pseudodata.col(j), fmt::format("pseudodata set '{}'", input.pseudodatanames[j]));
}

// docs/user-guide.md "Inputs no fit can use": a tensor whose likelihood cannot be finite is refused before
// the fit, naming the dataset, instead of ending in a non-finite objective.
void check_fittable_input(const FitOptions& o, const FitInputData& input) {
  if (input.nproc == 0)
    throw InputError(
        fmt::format("{}: dataset 'hprocs': lists no processes, there is nothing to fit", input.filename));
  const std::string norm = input.sparse ? "hnorm_sparse/values" : "hnorm";
  // A sparse tensor stores only non-zero yields (an empty list is all zero); a dense one all of them.
  const bool all_zero =
      input.sparse ? std::all_of(input.norm.begin(), input.norm.end(), [](double v) { return v == 0.0; })
                   : !input.norm.empty() &&
                         std::all_of(input.norm.begin(), input.norm.end(), [](double v) { return v == 0.0; });
  if (all_zero)
    throw InputError(
        fmt::format("{}: dataset '{}': every yield is zero, there is nothing to fit", input.filename, norm));
  // The Poisson likelihood of a negative count is undefined (docs/likelihood.md); -t 0 fits the data or the
  // --pseudoData sets, toys are checked when drawn.
  if (o.model.likelihood != DataLikelihood::poisson) return;
  if (std::find(o.toys.begin(), o.toys.end(), 0) == o.toys.end()) return;
  auto check = [&](const Eigen::VectorXd& counts, const std::string& dataset) {
    for (int64_t b = 0; b < counts.size(); ++b)
      if (counts[b] < 0.0)
        throw InputError(fmt::format(
            "{}: dataset {}: bin {} has the negative count {}, which a Poisson fit of -t 0 cannot use "
            "(--chisqFit or --covarianceFit can)",
            input.filename, dataset, b, counts[b]));
  };
  if (!o.pseudo_data) {
    check(input.data_obs, "'hdata_obs'");
    return;
  }
  for (int64_t j = 0; j < input.pseudodata.cols(); ++j) {
    const std::string& name = input.pseudodatanames[j];
    if (o.pseudo_data->empty() ||
        std::find(o.pseudo_data->begin(), o.pseudo_data->end(), name) != o.pseudo_data->end())
      check(input.pseudodata.col(j), fmt::format("'hpseudodata' (set '{}')", name));
  }
}

}  // namespace

RunCapabilities known_capabilities() {
  const std::string yields_of_all_bins = "the regularizers read the predicted yields of all bins";
  RunCapabilities caps;
  caps.cpu.name = "cpu";
  caps.cuda.name = "cuda";
  caps.cuda.built = built_with_cuda();
  caps.cuda.unsupported = {
      {FitFeature::covariance_likelihood, "the dense data covariance is evaluated on the CPU only"},
      {FitFeature::observable_regularizers, yields_of_all_bins + ", which only the CPU backend evaluates"},
      {FitFeature::bb_centres_on_masked_full_entries,
       "the GPU pipeline does not differentiate BB centres beta0 != 1 on masked full-mode entries"},
      {FitFeature::bin_dependent_rates, "the GPU kernels take one rate per process, not per bin"},
  };
  caps.unsupported_sharded = {
      {FitFeature::covariance_likelihood, "the dense data covariance couples all bins"},
      // (observable regularisers run on CPU shards: the first adds the penalty of all bins)
      {FitFeature::beta_space_diagnostics, "the β-space EDM needs the full-length β Hessian"},
  };
  return caps;
}

void validate_run(const FitOptions& o, const FitInputData& input, const RunCapabilities& capabilities) {
  check_option_rules(o);
  const auto requested = requested_features(o, input);
  check_multi_device(o, requested, capabilities);
  check_backend(o, requested, capabilities);
  check_fittable_input(o, input);
  check_covariance_input(o, input);
  check_chisq_input(o, input);
}

}  // namespace rabbit::cli
