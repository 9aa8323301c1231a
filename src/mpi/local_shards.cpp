// A rank's local shards (docs/mpi.md "Local shards of a rank", "GPUs per rank"): one shard per piece of
// the rank's bins, built by the registered shard kinds as make_fitter builds them.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "rabbit/core/error.hpp"
#include "rabbit/fit/cuda_plugin_loader.hpp"
#include "rabbit/fit/devices.hpp"
#include "rabbit/fit/rank_devices.hpp"
#include "rabbit/fit/shard_registry.hpp"
#include "rabbit/mpi/ranks.hpp"

namespace rabbit::mpi {

namespace {

// The CUDA ordinal of each piece's GPU: the rank's visible GPUs in PCI bus order, as --devices indexes
// them (docs/sharding-and-gpu.md "Device selection"), placed by rank_gpu_positions.
std::vector<int> gpu_ordinals(const LocalDeviceOptions& o, int n) {
  std::string why;
  if (!cuda_plugin(&why)) throw ResourceError(fmt::format("--backend cuda: {}", why));
  std::vector<GpuInfo> visible = visible_gpus(&why);
  // The single process's lines (make_fitter, choose_gpus), with the runtime's reason.
  if (visible.empty() && o.devices.empty())
    throw ResourceError(fmt::format("--backend cuda: no GPU is visible ({})", why));
  if (visible.empty())
    throw ResourceError(fmt::format("--devices {} asks for GPU(s), but no GPU is visible ({})",
                                    fmt::join(o.devices, ","), why));
  std::stable_sort(visible.begin(), visible.end(),
                   [](const GpuInfo& a, const GpuInfo& b) { return a.pci < b.pci; });
  RankGpuRequest request;
  request.peer = o.gpu_peer;
  request.peers = o.gpu_peers;
  request.visible = static_cast<int>(visible.size());
  request.n_devices = n;
  request.devices = o.devices;
  std::vector<int> ordinals;
  for (int position : rank_gpu_positions(request)) ordinals.push_back(visible[position].ordinal);
  return ordinals;
}

}  // namespace

LocalShards make_local_shards(std::shared_ptr<const Model> model,
                              const std::vector<std::pair<int64_t, int64_t>>& pieces,
                              const LocalDeviceOptions& o) {
  if (pieces.empty()) throw Error("a rank needs at least one local shard");
  const int n = static_cast<int>(pieces.size());
  // GPU shards as make_fitter decides for an explicit request: --backend cuda, or --devices unless
  // --backend cpu. Under mpirun --backend auto means CPU shards (docs/mpi.md "GPUs per rank").
  const bool cuda = o.backend == Backend::cuda || (o.backend != Backend::cpu && !o.devices.empty());
  if (cuda) refuse_cuda_without_build(o.backend, o.devices);
  validate_device_options(n, o.devices);
  const std::vector<int> ordinals = cuda ? gpu_ordinals(o, n) : std::vector<int>(n, 0);
  const ShardKind& kind = shard_kind(cuda ? "cuda" : "cpu");
  LocalShards local;
  for (int s = 0; s < n; ++s) {
    ShardSpec spec;
    spec.model = model;
    spec.bin_begin = pieces[s].first;
    spec.bin_end = pieces[s].second;
    spec.device = ordinals[s];
    spec.threads = std::max(1, o.threads / n);
    local.shards.push_back(kind.create(spec));
  }
  // Yields of all the rank's bins come from one CPU shard over them (a CPU shard's yield model is
  // its own bins' for the NLL, the profiled β and the constants): shards[0] where it is that shard.
  if (n > 1 || !local.shards.front()->yield_model()) {
    ShardSpec spec;
    spec.model = model;
    spec.bin_begin = pieces.front().first;
    spec.bin_end = pieces.back().second;
    spec.threads = o.threads;
    local.yield_shard = shard_kind("cpu").create(spec);
  }
  if (kind.dense_linalg) local.dense_linalg = kind.dense_linalg(ordinals[0]);
  local.pool = std::make_unique<ShardPool>(local.shards.size());
  return local;
}

}  // namespace rabbit::mpi
