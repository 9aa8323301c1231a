#pragma once
// What an evaluator of the likelihood cannot do, as data (docs/sharding-and-gpu.md "What a fit runs on").
// A backend (or the multi-device fitter) states each limit with its reason in its own words; the
// run's front door (rabbit::cli::validate_run) refuses a request that meets a limit before any shard
// is built, in one message that names the command-line options and the remedy. So the reasons here
// name no command-line option.
#include <string>
#include <vector>

namespace rabbit {

/// A part of a fit that some evaluators refuse.
enum class FitFeature {
  covariance_likelihood,              // the χ² with the full data covariance
  observable_regularizers,            // regularisers on the predicted yields of all bins (SVD)
  bb_centres_on_masked_full_entries,  // BB centres β⁰ ≠ 1 on masked full-mode entries (frequentist toys)
  beta_space_diagnostics,             // the β-space EDM of the diagnostics with BB
  bin_dependent_rates,                // a param model whose rates differ per bin (the ABCD family)
};

/// One limit: the feature and why it cannot be evaluated.
struct FeatureLimit {
  FitFeature feature;
  std::string reason;
};

/// What one backend cannot evaluate, on any number of shards.
struct BackendCapabilities {
  std::string name;   // the backend's name, as the backend choice spells it ("cpu", "cuda")
  bool built = true;  // compiled into this binary
  std::vector<FeatureLimit> unsupported;

  /// The limit on `feature`, or nullptr when the backend supports it.
  const FeatureLimit* limit(FitFeature feature) const {
    for (const auto& l : unsupported)
      if (l.feature == feature) return &l;
    return nullptr;
  }
};

/// The backends of this build and what a fit over more than one shard cannot evaluate on any
/// backend (everything that needs all bins in one place).
struct RunCapabilities {
  BackendCapabilities cpu;
  BackendCapabilities cuda;
  std::vector<FeatureLimit> unsupported_sharded;

  const FeatureLimit* sharded_limit(FitFeature feature) const {
    for (const auto& l : unsupported_sharded)
      if (l.feature == feature) return &l;
    return nullptr;
  }
};

}  // namespace rabbit
