#pragma once
// Finding and opening the CUDA plugin (docs/sharding-and-gpu.md "The CUDA plugin"). No executable
// links a CUDA library: the CUDA backend is rabbit_cuda_plugin.so, opened with dlopen the first time
// a CUDA fit is asked for (--backend cuda, --devices) or possible (--backend auto on a machine with
// an NVIDIA driver). Opening it registers the shard kind "cuda" (shard_registry.hpp).
#include <string>
#include <vector>

#include "rabbit/backend/cuda/cuda_plugin.hpp"

namespace rabbit {

/// The file name of the plugin.
inline constexpr const char* kCudaPluginFile = "rabbit_cuda_plugin.so";
/// The environment variable that names the plugin file, replacing the search.
inline constexpr const char* kCudaPluginVariable = "RABBIT_CUDA_PLUGIN";

/// Where the plugin is looked for, in order: $RABBIT_CUDA_PLUGIN alone when it is set and not
/// empty; else the directory of the executable, then ../lib/rabbit/ relative to it (an install).
std::vector<std::string> cuda_plugin_candidates();

/// The plugin's table, opening the plugin on the first call (later calls return the same result,
/// also a failure). nullptr with *failure set to one line (dlerror's text, or what does not match)
/// when it cannot be loaded. On success the shard kind "cuda" is registered.
const CudaPluginV1* cuda_plugin(std::string* failure);

/// Cheap check, without loading any library, whether this machine could have an NVIDIA GPU: the
/// driver's device files (/dev/nvidiactl, /dev/nvidia0 …), /proc/driver/nvidia, or WSL2's /dev/dxg.
/// false with *why_not set (one line) when none exists.
bool nvidia_driver_present(std::string* why_not);

}  // namespace rabbit
