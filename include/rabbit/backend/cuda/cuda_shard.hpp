#pragma once
// The CUDA (double precision, cuBLAS) implementation of ShardEvaluator. Defined in the CUDA plugin
// (rabbit_cuda_plugin.so) only: the fit module reaches these functions through the plugin's table
// (backend/cuda/cuda_plugin.hpp, docs/sharding-and-gpu.md "The CUDA plugin"); tests that link the
// CUDA sources directly guard their calls with RABBIT_HAVE_CUDA.
#include <Eigen/Core>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "rabbit/model/model.hpp"
#include "rabbit/model/shard_evaluator.hpp"

namespace rabbit {

/// One CUDA device as the runtime sees it (no context is created to find out).
struct CudaDeviceEntry {
  int ordinal = 0;
  std::string pci_bus_id;  // as cudaDeviceGetPCIBusId writes it, "0000:17:00.0"
  std::string name;
  uint64_t total_bytes = 0;
};

/// The visible CUDA devices; empty with *failure set (one line) when the runtime reports none or
/// cannot start ("CUDA driver version is insufficient", "no CUDA-capable device").
std::vector<CudaDeviceEntry> cuda_visible_devices(std::string* failure);

/// A shard over observed bins [bin_begin, bin_end) on CUDA device `ordinal`. Only the slice of
/// the host-resident tensors is copied to the device. Estimates the device memory first and
/// throws ResourceError naming the need and the free memory when it does not fit; every CUDA
/// error becomes a one-line ResourceError.
std::unique_ptr<ShardEvaluator> make_cuda_shard(std::shared_ptr<const Model> model, int64_t bin_begin,
                                                int64_t bin_end, int ordinal);

/// Device memory bandwidth in GB/s (read + write) measured with a copy kernel over two buffers
/// of `bytes` bytes each.
double cuda_copy_bandwidth(int ordinal, size_t bytes = size_t(1) << 30);

/// The least free device memory in bytes with which a shard over [bin_begin, bin_end) runs (the
/// estimate above): its tensor and work arrays plus the free memory that leaves a one-column HVP batch
/// (docs/sharding-and-gpu.md "Memory check first").
uint64_t cuda_shard_bytes(const Model& model, int64_t bin_begin, int64_t bin_end);

}  // namespace rabbit
