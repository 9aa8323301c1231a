#pragma once
// The CUDA plugin's one entry point (docs/sharding-and-gpu.md "The CUDA plugin"). The CUDA backend
// is a shared library, rabbit_cuda_plugin.so, that the fit module opens at run time only when a CUDA
// fit is asked for or possible; it exports one C function, rabbit_cuda_plugin_v1, which returns this
// table. Everything the fit module needs from the CUDA backend goes through it, so no executable
// links a CUDA library.
//
// The table passes C++ types (std::string, std::shared_ptr, Model): plugin and loader must come
// from the same build, which the loader checks with `abi`, the table's size, the compiler and the
// sizes of the model types before it uses any function pointer.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "rabbit/backend/cuda/cuda_shard.hpp"
#include "rabbit/minimize/dense_linalg.hpp"
#include "rabbit/model/model.hpp"

namespace rabbit {

/// Raised whenever the table or the meaning of an entry changes (then the entry point's name
/// changes with it: rabbit_cuda_plugin_v<abi>).
inline constexpr uint32_t kCudaPluginAbi = 1;
inline constexpr const char* kCudaPluginEntryPoint = "rabbit_cuda_plugin_v1";

struct CudaPluginV1 {
  uint32_t abi = kCudaPluginAbi;
  uint32_t table_size = sizeof(CudaPluginV1);
  const char* compiler = __VERSION__;  // the C++ compiler that built the plugin's host code
  uint32_t model_size = sizeof(Model);
  uint32_t input_size = sizeof(FitInputData);
  /// The address of the plugin's rabbit::log(): equal to the loader's when the plugin shares the
  /// process's one copy of rabbit_core (logger, exception types), as it must.
  const void* (*core_identity)() = nullptr;

  std::vector<CudaDeviceEntry> (*visible_devices)(std::string* failure) = nullptr;
  std::unique_ptr<ShardEvaluator> (*make_shard)(std::shared_ptr<const Model> model, int64_t bin_begin,
                                                int64_t bin_end, int ordinal) = nullptr;
  uint64_t (*shard_bytes)(const Model& model, int64_t bin_begin, int64_t bin_end) = nullptr;
  std::shared_ptr<const DenseLinalg> (*make_dense_linalg)(int ordinal) = nullptr;
  double (*copy_bandwidth)(int ordinal, size_t bytes) = nullptr;
  // Appended (benchmarks only): table_size, checked by the loader, refuses a plugin without it.
  double (*blas_rate)(int ordinal, int64_t n, int64_t k, bool syrk) = nullptr;
};

}  // namespace rabbit

extern "C" {
/// The plugin's entry point: its table, valid for the life of the process.
const rabbit::CudaPluginV1* rabbit_cuda_plugin_v1();
using RabbitCudaPluginEntry = const rabbit::CudaPluginV1* (*)();
}
