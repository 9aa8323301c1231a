// Device memory bandwidth by a plain copy kernel: the roofline the shard's loss+grad is compared
// with in bench/sharding_bench and scripts/gpu-check.
#include <cuda_runtime.h>

#include "cuda_check.hpp"
#include "rabbit/backend/cuda/cuda_shard.hpp"

namespace rabbit {
namespace {

__global__ void copy_kernel(const double* __restrict__ in, double* __restrict__ out, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    out[i] = in[i];
}

}  // namespace

double cuda_copy_bandwidth(int ordinal, size_t bytes) {
  cuda_check::cuda(cudaSetDevice(ordinal), ordinal, "selecting the device");
  const size_t n = bytes / sizeof(double);
  double *a = nullptr, *b = nullptr;
  cuda_check::cuda(cudaMalloc(&a, n * sizeof(double)), ordinal, "allocating the bandwidth buffers");
  if (cudaError_t e = cudaMalloc(&b, n * sizeof(double)); e != cudaSuccess) {
    cudaFree(a);
    cuda_check::cuda(e, ordinal, "allocating the bandwidth buffers");
  }
  cudaMemset(a, 0, n * sizeof(double));
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  const int reps = 20;
  copy_kernel<<<2048, 256>>>(a, b, n);  // warm-up
  cudaEventRecord(start);
  for (int r = 0; r < reps; ++r) copy_kernel<<<2048, 256>>>(a, b, n);
  cudaEventRecord(stop);
  const cudaError_t e = cudaEventSynchronize(stop);
  float ms = 0;
  cudaEventElapsedTime(&ms, start, stop);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cudaFree(a);
  cudaFree(b);
  cuda_check::cuda(e, ordinal, "the copy kernel");
  // Each element is read once and written once.
  return 2.0 * n * sizeof(double) * reps / (ms * 1e-3) / 1e9;
}

}  // namespace rabbit
