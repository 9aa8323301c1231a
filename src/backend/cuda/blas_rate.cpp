// The device's measured DGEMM and DSYRK rates (cuBLAS, CUDA events): the roofline the dense Hessian
// is compared with in bench/gpu_hardware_bench.cpp (docs/sharding-and-gpu.md "Benchmarks against
// the hardware").
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "cuda_check.hpp"
#include "rabbit/backend/cuda/cuda_shard.hpp"

namespace rabbit {

double cuda_blas_rate(int ordinal, int64_t n, int64_t k, bool syrk) {
  cuda_check::cuda(cudaSetDevice(ordinal), ordinal, "selecting the device");
  double *A = nullptr, *C = nullptr;
  cuda_check::cuda(cudaMalloc(&A, sizeof(double) * n * k), ordinal, "allocating the BLAS-rate buffers");
  if (cudaError_t e = cudaMalloc(&C, sizeof(double) * n * n); e != cudaSuccess) {
    cudaFree(A);
    cuda_check::cuda(e, ordinal, "allocating the BLAS-rate buffers");
  }
  cudaMemset(A, 0, sizeof(double) * n * k);
  cublasHandle_t h = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  float ms = 0;
  const int reps = 5;
  cublasStatus_t status = cublasCreate(&h);
  if (status == CUBLAS_STATUS_SUCCESS) {
    const double one = 1.0, zero = 0.0;
    // C = Aᵀ A with A of k rows × n columns (column-major, lda = k): the shape of K2ᵀ·W·K2 over a
    // block of k entries.
    auto once = [&] {
      return syrk ? cublasDsyrk_64(h, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_T, n, k, &one, A, k, &zero, C, n)
                  : cublasDgemm_64(h, CUBLAS_OP_T, CUBLAS_OP_N, n, n, k, &one, A, k, A, k, &zero, C, n);
    };
    status = once();  // warm-up
    cudaEventCreate(&start);
    cudaEventCreate(&stop);
    cudaEventRecord(start);
    for (int r = 0; r < reps && status == CUBLAS_STATUS_SUCCESS; ++r) status = once();
    cudaEventRecord(stop);
    cudaEventSynchronize(stop);
    cudaEventElapsedTime(&ms, start, stop);
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    cublasDestroy(h);
  }
  const cudaError_t e = cudaGetLastError();
  cudaFree(A);
  cudaFree(C);
  cuda_check::cublas(status, ordinal, syrk ? "DSYRK rate" : "DGEMM rate");
  cuda_check::cuda(e, ordinal, syrk ? "DSYRK rate" : "DGEMM rate");
  // GEMM: 2·n²·k flops; SYRK: one triangle, n·(n+1)·k.
  const double flops = syrk ? double(n) * (n + 1) * k : 2.0 * n * n * k;
  return flops * reps / (ms * 1e-3) / 1e9;
}

}  // namespace rabbit
