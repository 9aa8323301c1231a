#pragma once
// make_fitter: builds the Fitter of a run from the model and the device options — one shard
// (Fitter) or N shards (MultiDeviceFitter), on CPU or CUDA (docs/sharding-and-gpu.md "MultiDeviceFitter").
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "rabbit/fit/fitter.hpp"
#include "rabbit/model/model.hpp"

namespace rabbit {

enum class Backend { automatic, cpu, cuda };

/// "auto" | "cpu" | "cuda" → Backend; OptionError naming --backend otherwise.
Backend parse_backend(const std::string& name);
std::string backend_name(Backend backend);

struct FitterOptions {
  int n_devices = 1;         // --nDevices: number of bin shards
  std::vector<int> devices;  // --devices: explicit GPU indices (count must equal n_devices)
  Backend backend = Backend::automatic;
  int threads = 0;          // CPU threads over all CPU shards together (0: rabbit/core/cpu_budget.hpp)
  int64_t hvp_batch = 256;  // --hvpBatch: upper bound of the dense-Hessian HVP batch
};

/// What a run asks for beyond the model options, for the up-front sharding check. The CLI fills
/// it right after parsing, before the input is read.
struct ShardingRequest {
  FitterOptions fitter;
  DataLikelihood likelihood = DataLikelihood::poisson;  // --covarianceFit / --chisqFit
  bool bin_by_bin_stat = true;                          // false with --noBinByBinStat
  std::vector<std::string> regularizers;                // -r/--regularization names
  bool global_impacts = false;                          // --globalImpacts
  bool gaussian_global_impacts = false;                 // --gaussianGlobalImpacts
  bool diagnostics = false;                             // --diagnostics
};

/// Refuses, before anything is loaded or minimised, every requested feature that cannot run
/// sharded (n_devices > 1): one OptionError naming every offending option and the single-device
/// remedy. Also validates --nDevices / --devices. No-op for n_devices == 1 beyond validation.
void check_sharding_supported(const ShardingRequest& request);

/// In a build without CUDA: the ResourceError of `--backend cuda` or (backend not cpu) `--devices`,
/// one line, the same for make_fitter and the MPI ranks (docs/mpi.md "GPUs per rank"). No-op otherwise.
void refuse_cuda_without_build(Backend backend, const std::vector<int>& devices);

/// Contiguous observed-bin ranges [a, b) for n shards, balanced by the bytes each bin holds
/// (dense: uniform, so edges = floor(s·nbins/n) as upstream's linspace) or by the stored entries
/// (sparse: norm and logk nonzeros of the bin). Masked bins are never part of a shard. Shards may
/// be empty when n > nbins.
std::vector<std::pair<int64_t, int64_t>> partition_bins(const FitInputData& input, int n);

/// Builds the fitter. n_devices == 1 → Fitter with one shard; otherwise MultiDeviceFitter.
/// Backend auto: CUDA when built with it, the machine has an NVIDIA driver, the CUDA plugin loads
/// (cuda_plugin_loader.hpp) and a GPU is visible, else CPU. Shards are built by the registered
/// shard kinds (shard_registry.hpp). With fewer GPUs than
/// shards the shards are placed round-robin (warning); with none they become CPU shards sharing
/// the threads (warning). Refuses model features that cannot be sharded (see
/// check_sharding_supported) with OptionError before any shard is built.
std::unique_ptr<Fitter> make_fitter(std::shared_ptr<Model> model, const FitterOptions& options);

}  // namespace rabbit
