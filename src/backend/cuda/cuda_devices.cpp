// Enumerates the visible CUDA devices without creating a context: cudaGetDeviceCount,
// cudaDeviceGetPCIBusId and cudaGetDeviceProperties only initialise the runtime.
#include <cuda_runtime.h>
#include <fmt/format.h>

#include <array>

#include "rabbit/backend/cuda/cuda_shard.hpp"

namespace rabbit {

std::vector<CudaDeviceEntry> cuda_visible_devices(std::string* failure) {
  std::vector<CudaDeviceEntry> out;
  int count = 0;
  if (cudaError_t e = cudaGetDeviceCount(&count); e != cudaSuccess) {
    if (failure) *failure = fmt::format("CUDA reports no usable device: {}", cudaGetErrorString(e));
    cudaGetLastError();  // clear the sticky-free error so later calls start clean
    return out;
  }
  for (int i = 0; i < count; ++i) {
    CudaDeviceEntry d;
    d.ordinal = i;
    std::array<char, 64> bus{};
    if (cudaDeviceGetPCIBusId(bus.data(), static_cast<int>(bus.size()), i) == cudaSuccess)
      d.pci_bus_id = bus.data();
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, i) == cudaSuccess) {
      d.name = prop.name;
      d.total_bytes = prop.totalGlobalMem;
    }
    cudaGetLastError();
    out.push_back(std::move(d));
  }
  if (out.empty() && failure) *failure = "no CUDA device is visible";
  return out;
}

}  // namespace rabbit
