#include "rabbit/fit/make_fitter.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "rabbit/core/cpu_budget.hpp"
#include "rabbit/core/error.hpp"
#include "rabbit/core/logging.hpp"
#include "rabbit/fit/cuda_plugin_loader.hpp"
#include "rabbit/fit/devices.hpp"
#include "rabbit/fit/multi_device_fitter.hpp"
#include "rabbit/fit/shard_registry.hpp"
#include "rabbit/model/regularizer.hpp"

namespace rabbit {

Backend parse_backend(const std::string& name) {
  if (name == "auto") return Backend::automatic;
  if (name == "cpu") return Backend::cpu;
  if (name == "cuda") return Backend::cuda;
  throw OptionError(fmt::format("--backend must be one of auto, cpu, cuda; got '{}'", name));
}

std::string backend_name(Backend backend) {
  switch (backend) {
    case Backend::automatic:
      return "auto";
    case Backend::cpu:
      return "cpu";
    case Backend::cuda:
      return "cuda";
  }
  return "?";
}

namespace {

const char* kRemedy =
    "These need all bins on one device, which is what sharding exists to avoid. Drop --nDevices (run "
    "single-device), or rerun the step single-device from the fit output.";

// The features of the model itself that cannot be evaluated shard by shard.
// (-r runs sharded on CPU shards: the first shard adds the penalty on the yields of all bins, which every CPU
// shard can compute; the CUDA shard refuses it, docs/sharding-and-gpu.md "Regularisers and shards".)
std::vector<std::string> unshardable_model_features(DataLikelihood likelihood) {
  std::vector<std::string> out;
  if (likelihood == DataLikelihood::covariance)
    out.push_back("--covarianceFit (the dense data covariance couples all bins)");
  return out;
}

void refuse(const std::vector<std::string>& offending, int n_devices) {
  if (offending.empty()) return;
  throw OptionError(fmt::format("--nDevices {} (multi-device mode) is incompatible with: {}. {}", n_devices,
                                fmt::join(offending, "; "), kRemedy));
}

}  // namespace

void check_sharding_supported(const ShardingRequest& request) {
  validate_device_options(request.fitter.n_devices, request.fitter.devices);
  if (request.fitter.hvp_batch < 1)
    throw OptionError(fmt::format("--hvpBatch must be >= 1, got {}", request.fitter.hvp_batch));
  if (request.fitter.n_devices == 1) return;
  std::vector<std::string> offending;
  for (auto& s : unshardable_model_features(request.likelihood)) offending.push_back(s);
  if (request.bin_by_bin_stat) {
    // Global impacts with BB run sharded: the postfit code takes dβ̂/dx from the fitter's
    // concatenated profiled β (tests/cli TwoShardsGiveTheSameResult checks them against one shard).
    if (request.diagnostics)
      offending.push_back(
          "--diagnostics with bin-by-bin statistics (the β-space EDM needs the full-length β Hessian; "
          "or add --noBinByBinStat)");
  }
  refuse(offending, request.fitter.n_devices);
}

void refuse_cuda_without_build(Backend backend, const std::vector<int>& devices) {
  if (built_with_cuda()) return;
  if (backend == Backend::cuda)
    throw ResourceError("--backend cuda: this build has no CUDA backend (configure with -DRABBIT_CUDA=ON)");
  if (backend != Backend::cpu && !devices.empty())
    throw ResourceError(fmt::format("--devices {}: this build has no CUDA backend", fmt::join(devices, ",")));
}

std::vector<std::pair<int64_t, int64_t>> partition_bins(const FitInputData& input, int n) {
  if (n < 1) throw OptionError(fmt::format("--nDevices must be >= 1, got {}", n));
  const int64_t nbins = input.nbins;
  // cost[b]: stored numbers of observed bin b, prefix[b] = Σ_{b' < b} cost[b'].
  std::vector<int64_t> prefix(nbins + 1, 0);
  if (!input.sparse) {
    const int64_t per_bin = std::max<int64_t>(1, input.nproc * (input.logk_width() + 3));
    for (int64_t b = 0; b < nbins; ++b) prefix[b + 1] = prefix[b] + per_bin;
  } else {
    std::vector<int64_t> cost(nbins, 2 * input.nproc + 1);  // sumw, sumw2, nobs
    const int64_t nproc = std::max<int64_t>(1, input.nproc);
    const bool have_rowptr = input.logk_sparse.rowptr.size() == input.norm_index.size() + 1;
    for (size_t i = 0; i < input.norm_index.size(); ++i) {
      const int64_t b = input.norm_index[i] / nproc;
      if (b >= nbins) break;  // sorted: the rest is masked
      cost[b] += 1 + (have_rowptr ? input.logk_sparse.rowptr[i + 1] - input.logk_sparse.rowptr[i] : 0);
    }
    for (int64_t b = 0; b < nbins; ++b) prefix[b + 1] = prefix[b] + cost[b];
  }
  const int64_t total = prefix[nbins];
  std::vector<std::pair<int64_t, int64_t>> out;
  int64_t begin = 0;
  for (int s = 1; s <= n; ++s) {
    // Largest edge e with prefix[e]·n <= s·total (integer, exact): uniform costs give floor(s·nbins/n).
    int64_t end = nbins;
    if (s < n) {
      const auto it = std::upper_bound(prefix.begin(), prefix.end(), 0, [&](int, int64_t p) {
        return static_cast<__int128>(p) * n > static_cast<__int128>(s) * total;
      });
      end = std::max<int64_t>(begin, static_cast<int64_t>(it - prefix.begin()) - 1);
    }
    out.emplace_back(begin, end);
    begin = end;
  }
  return out;
}

std::unique_ptr<Fitter> make_fitter(std::shared_ptr<Model> model, const FitterOptions& options) {
  validate_device_options(options.n_devices, options.devices);
  const int n = options.n_devices;
  const FitInputData& input = *model->input;
  if (n > 1) refuse(unshardable_model_features(model->options.likelihood), n);

  // Devices: chosen before any CUDA context exists; only the chosen ordinals are ever touched.
  std::vector<GpuInfo> gpus;
  bool use_cuda = false;
  // What the CUDA shard refuses (shard_pipeline.hpp): with --backend auto such a fit runs on the CPU.
  std::string cuda_unsupported;
  if (model->options.likelihood == DataLikelihood::covariance)
    cuda_unsupported = "--covarianceFit";
  else if (!model->regularizers.empty() && needs_observables(*model))
    cuda_unsupported = "-r/--regularization on predicted yields";
  if (options.backend == Backend::automatic && built_with_cuda() && !cuda_unsupported.empty() &&
      options.devices.empty()) {
    log().info("{} is not supported by the CUDA backend: the fit runs on the CPU", cuda_unsupported);
  } else if (options.backend != Backend::cpu) {
    // The CUDA plugin is opened only when a CUDA fit is asked for (--backend cuda, --devices) or
    // possible: under --backend auto a machine without an NVIDIA driver never loads a CUDA library
    // (docs/sharding-and-gpu.md "The CUDA plugin").
    const bool cuda_asked = options.backend == Backend::cuda || !options.devices.empty();
    std::string why;
    if (!built_with_cuda()) {
      refuse_cuda_without_build(options.backend, options.devices);
    } else if (!cuda_asked && !nvidia_driver_present(&why)) {
      log().info("{}: the fit runs on the CPU", why);
    } else if (!cuda_plugin(&why) && (options.backend == Backend::cuda || options.devices.empty())) {
      // (with --devices under auto, select_gpus below names --devices and this reason)
      if (options.backend == Backend::cuda) throw ResourceError(fmt::format("--backend cuda: {}", why));
      log().info("{}: the fit runs on the CPU", why);
    } else {
      GpuSelection sel = select_gpus(n, options.devices);
      for (const auto& m : sel.info) log().info("{}", m);
      for (const auto& m : sel.warnings) log().warn("{}", m);
      gpus = sel.gpus;
      if (gpus.empty()) {
        if (options.backend == Backend::cuda)
          throw ResourceError(fmt::format("--backend cuda: no GPU is visible ({})", sel.unavailable));
        log().warn("This build has CUDA but no GPU is visible: the fit runs on the CPU{}",
                   n > 1 ? fmt::format(" with {} CPU shards (correct, but no GPU speed-up)", n) : "");
      } else {
        use_cuda = true;
        if (static_cast<int>(gpus.size()) < n)
          log().warn("Only {} GPU(s) are visible for {} shards; placing shards round-robin", gpus.size(), n);
      }
    }
  }

  const auto ranges = partition_bins(input, n);
  int threads = options.threads;
  if (threads > 0) {
    log().debug("{} CPU thread(s) (--nThreads)", threads);
  } else {
    const cpus::Budget budget = cpus::detect();  // docs/architecture.md "Threads"
    threads = budget.threads;
    log().debug("{} CPU thread(s), from {}", threads, budget.source);
  }
  const int threads_per_shard = std::max(1, threads / n);

  // Shards come from the registry of shard kinds: "cpu" is built in, "cuda" was registered when
  // select_gpus loaded the plugin (docs/architecture.md "How to add a shard kind").
  const ShardKind& kind = shard_kind(use_cuda ? "cuda" : "cpu");
  auto device_of_shard = [&](int s) { return use_cuda ? gpus[s % gpus.size()].ordinal : 0; };
  std::vector<std::unique_ptr<ShardEvaluator>> shards;
  std::vector<std::string> layout;
  for (int s = 0; s < n; ++s) {
    const auto [a, b] = ranges[s];
    ShardSpec spec;
    spec.model = model;
    spec.bin_begin = a;
    spec.bin_end = b;
    spec.device = device_of_shard(s);
    spec.threads = threads_per_shard;
    shards.push_back(kind.create(spec));
    layout.push_back(fmt::format("{}:[{},{})", shards.back()->device(), a, b));
  }
  log().info("Sharding {} bins over {} device(s): [{}]", input.nbins, n, fmt::join(layout, ", "));
  if (!use_cuda && n > 1) log().info("{} CPU shards with {} thread(s) each", n, threads_per_shard);

  std::unique_ptr<Fitter> fitter;
  if (n == 1)
    fitter = std::make_unique<Fitter>(std::move(model), std::move(shards));
  else
    fitter = std::make_unique<MultiDeviceFitter>(std::move(model), std::move(shards));
  fitter->set_hvp_batch(options.hvp_batch);
  fitter->set_postfit_threads(threads);
  if (kind.dense_linalg) {
    // The minimizers' Cholesky factorisations run where shard 0 runs (the calling thread's device).
    fitter->set_dense_linalg(kind.dense_linalg(device_of_shard(0)));
    log().info("Dense Cholesky factorisations on {} ({})", fitter->shards().front()->device(),
               kind.dense_linalg_name);
  }
  return fitter;
}

}  // namespace rabbit
