#pragma once
// Which GPUs one MPI rank's local shards run on (docs/mpi.md "GPUs per rank"). A pure rule, apart from
// MPI and CUDA, so that it is tested on machines without either.
#include <vector>

namespace rabbit {

/// What a rank knows when it places its `n_devices` local shards on GPUs: `visible` GPUs are visible
/// to it, and `peers` ranks of its node see the same ones (the same CUDA_VISIBLE_DEVICES), of which it
/// is number `peer` (0-based, in rank order).
struct RankGpuRequest {
  int peer = 0;
  int peers = 1;
  int visible = 0;
  int n_devices = 1;
  std::vector<int> devices;  // --devices of this rank: positions in its visible list (empty: none)
};

/// Positions, in the rank's visible GPUs ordered by PCI bus id (as --devices indexes them), of the
/// GPU of each local shard, in shard order:
/// - --devices: the listed positions (each must be < visible);
/// - else, when the peers' shards fit (peers · n_devices ≤ visible): peer p takes the n_devices
///   consecutive positions from p · n_devices, so ranks sharing a node's GPUs never share one;
/// - else a rank alone on its GPUs (peers == 1) places its shards round-robin, as a single process does;
/// - else ResourceError in one line: the peers would share GPUs.
/// --nDevices/--devices themselves are checked first (OptionError, validate_device_options).
std::vector<int> rank_gpu_positions(const RankGpuRequest& request);

}  // namespace rabbit
