#pragma once
// GPU enumeration and selection (docs/sharding-and-gpu.md "Device selection").
//
// Selection happens before any CUDA context exists: the visible CUDA devices are enumerated
// (cudaGetDeviceCount / cudaDeviceGetPCIBusId create no context), their memory in use is asked
// from NVML (loaded at run time with dlopen, it creates no context either) or, failing that,
// from `nvidia-smi --query-gpu=pci.bus_id,memory.used`, and the two lists are matched by PCI bus
// id, so a preset CUDA_VISIBLE_DEVICES is respected (NVML indices are absolute, CUDA ordinals are
// relative to the visible list). The fit then sets only the chosen ordinals as current device.
//
// `--devices` indices are positions in the visible list ordered by PCI bus id; without
// CUDA_VISIBLE_DEVICES they are therefore nvidia-smi's indices.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rabbit {

/// A PCI address domain:bus:device.function, the key shared by NVML, nvidia-smi and CUDA.
struct PciAddress {
  uint32_t domain = 0, bus = 0, device = 0, function = 0;
  auto operator<=>(const PciAddress&) const = default;
  std::string str() const;
};

/// Parses "0000:17:00.0" or nvidia-smi's "00000000:17:00.0" (hex fields); nullopt otherwise.
std::optional<PciAddress> parse_pci_bus_id(std::string_view text);

/// One CUDA device visible to this process.
struct GpuInfo {
  int ordinal = 0;  // CUDA runtime ordinal (relative to CUDA_VISIBLE_DEVICES)
  PciAddress pci;
  std::string name;
  uint64_t total_bytes = 0;
};

/// Memory in use on one GPU as reported by NVML or nvidia-smi.
struct GpuOccupancy {
  PciAddress pci;
  uint64_t used_bytes = 0;
};

/// The outcome of device selection: CUDA ordinals to run on (in ascending order, possibly empty
/// for a CPU run) and the messages to log once the logger exists.
struct GpuSelection {
  std::vector<GpuInfo> gpus;
  std::string unavailable;  // select_gpus: why no GPU is visible (one line) when gpus is empty
  std::vector<std::string> info;
  std::vector<std::string> warnings;
};

/// Checks --nDevices / --devices on their own (OptionError naming the option): n >= 1, indices
/// >= 0, and as many indices as devices when indices are given.
void validate_device_options(int n_devices, const std::vector<int>& explicit_indices);

/// The pure selection rule of docs/sharding-and-gpu.md "Device selection". `visible` in CUDA ordinal order;
/// `occupancy` nullopt when the query failed (then `query_failure` says why). Explicit indices index
/// `visible` sorted by PCI bus id; out of range → ResourceError. Returns at most n GPUs (all visible when
/// fewer).
GpuSelection choose_gpus(int n_devices, const std::vector<int>& explicit_indices,
                         const std::vector<GpuInfo>& visible,
                         const std::optional<std::vector<GpuOccupancy>>& occupancy,
                         const std::string& query_failure = {});

/// Parses `nvidia-smi --query-gpu=pci.bus_id,memory.used --format=csv,noheader,nounits` output
/// (MiB). Lines that do not parse are skipped.
std::vector<GpuOccupancy> parse_nvidia_smi_memory(std::string_view csv);

/// Memory in use per GPU from NVML (dlopen "libnvidia-ml.so.1"), else nvidia-smi; nullopt with
/// *failure set when neither works.
std::optional<std::vector<GpuOccupancy>> query_gpu_occupancy(std::string* failure);

/// Its two routes on their own (query_gpu_occupancy only asks when more GPUs are visible than
/// needed; a GPU test compares both with the CUDA enumeration on a one-GPU machine).
std::optional<std::vector<GpuOccupancy>> query_nvml_occupancy(std::string* failure);
std::optional<std::vector<GpuOccupancy>> query_nvidia_smi_occupancy(std::string* failure);

/// The CUDA devices visible to this process, without creating a context, through the CUDA plugin
/// (loaded on the first call, cuda_plugin_loader.hpp). Empty in a build without CUDA, when the
/// plugin cannot be loaded or when the runtime reports no usable device (then *failure says why,
/// e.g. dlerror's text or "CUDA driver version is insufficient").
std::vector<GpuInfo> visible_gpus(std::string* failure);

/// Whether this build made the CUDA backend (rabbit_cuda_plugin.so).
bool built_with_cuda();

/// Enumerates, queries and chooses (the whole of docs/sharding-and-gpu.md "Device selection").
GpuSelection select_gpus(int n_devices, const std::vector<int>& explicit_indices);

}  // namespace rabbit
