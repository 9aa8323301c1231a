#include "rabbit/fit/rank_devices.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "rabbit/core/error.hpp"
#include "rabbit/fit/devices.hpp"

namespace rabbit {

std::vector<int> rank_gpu_positions(const RankGpuRequest& r) {
  validate_device_options(r.n_devices, r.devices);
  if (r.visible <= 0)
    throw ResourceError(r.devices.empty()
                            ? std::string("--backend cuda: no GPU is visible to this rank (docs/mpi.md)")
                            : fmt::format("--devices {} asks for GPU(s), but no GPU is visible to this rank",
                                          fmt::join(r.devices, ",")));
  if (!r.devices.empty()) {
    for (int i : r.devices)
      if (i >= r.visible)
        throw ResourceError(fmt::format("--devices {}: index {} out of range: {} GPU(s) visible to this rank",
                                        fmt::join(r.devices, ","), i, r.visible));
    return r.devices;
  }
  std::vector<int> positions;
  if (r.peers * r.n_devices <= r.visible) {
    for (int i = 0; i < r.n_devices; ++i) positions.push_back(r.peer * r.n_devices + i);
    return positions;
  }
  if (r.peers == 1) {
    for (int i = 0; i < r.n_devices; ++i) positions.push_back(i % r.visible);
    return positions;
  }
  throw ResourceError(fmt::format(
      "--backend cuda: {} ranks on this node see the same {} GPU(s) and ask for {} each: give each rank its "
      "own GPUs (slurm --gpus-per-task, or CUDA_VISIBLE_DEVICES per rank), start fewer ranks per node, or "
      "pass --devices (docs/mpi.md)",
      r.peers, r.visible, r.n_devices));
}

}  // namespace rabbit
