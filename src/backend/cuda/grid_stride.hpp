#pragma once
// The launch shape of the CUDA shard's grid-stride kernels (kernels.cu, hessian_kernels.cu,
// sparse_kernels.cu, fused_kernels.cu): blocks of kThreads threads, enough blocks to cover n elements
// (at least one, at most 65535·32; the loop's stride covers the rest), and the loop itself. For .cu
// files only: the loop reads blockIdx, blockDim and gridDim.
#include <cstdint>

namespace rabbit::cuda_kernels {

inline constexpr int kThreads = 256;

inline unsigned blocks_for(int64_t n) {
  const int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b < 1 ? 1 : (b > int64_t(65535) * 32 ? int64_t(65535) * 32 : b));
}

}  // namespace rabbit::cuda_kernels

// for (i over [0, n)) with a stride of the whole grid, i an int64_t.
#define RABBIT_GRID_STRIDE(i, n)                                            \
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < (n); \
       i += int64_t(gridDim.x) * blockDim.x)
