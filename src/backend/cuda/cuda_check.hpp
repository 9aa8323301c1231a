#pragma once
// One-line ResourceErrors for failed CUDA runtime, cuBLAS and cuSOLVER calls, naming the device
// and the step ("CUDA error on cuda:0 during copying logk: out of memory").
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cusolverDn.h>
#include <fmt/format.h>

#include "rabbit/core/error.hpp"

namespace rabbit::cuda_check {

inline void cuda(cudaError_t e, int ordinal, const char* what) {
  if (e == cudaSuccess) return;
  cudaGetLastError();
  throw ResourceError(
      fmt::format("CUDA error on cuda:{} during {}: {}", ordinal, what, cudaGetErrorString(e)));
}

inline const char* cublas_status_name(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_NOT_INITIALIZED:
      return "cuBLAS not initialised";
    case CUBLAS_STATUS_ALLOC_FAILED:
      return "cuBLAS allocation failed";
    case CUBLAS_STATUS_INVALID_VALUE:
      return "invalid value";
    case CUBLAS_STATUS_ARCH_MISMATCH:
      return "architecture mismatch";
    case CUBLAS_STATUS_EXECUTION_FAILED:
      return "execution failed";
    case CUBLAS_STATUS_INTERNAL_ERROR:
      return "internal error";
    default:
      return "cuBLAS error";
  }
}

inline void cublas(cublasStatus_t s, int ordinal, const char* what) {
  if (s == CUBLAS_STATUS_SUCCESS) return;
  throw ResourceError(fmt::format("cuBLAS error on cuda:{} during {}: {} (status {})", ordinal, what,
                                  cublas_status_name(s), static_cast<int>(s)));
}

inline const char* cusolver_status_name(cusolverStatus_t s) {
  switch (s) {
    case CUSOLVER_STATUS_NOT_INITIALIZED:
      return "cuSOLVER not initialised";
    case CUSOLVER_STATUS_ALLOC_FAILED:
      return "cuSOLVER allocation failed";
    case CUSOLVER_STATUS_INVALID_VALUE:
      return "invalid value";
    case CUSOLVER_STATUS_ARCH_MISMATCH:
      return "architecture mismatch";
    case CUSOLVER_STATUS_EXECUTION_FAILED:
      return "execution failed";
    case CUSOLVER_STATUS_INTERNAL_ERROR:
      return "internal error";
    case CUSOLVER_STATUS_INVALID_WORKSPACE:
      return "invalid workspace";
    default:
      return "cuSOLVER error";
  }
}

inline void cusolver(cusolverStatus_t s, int ordinal, const char* what) {
  if (s == CUSOLVER_STATUS_SUCCESS) return;
  throw ResourceError(fmt::format("cuSOLVER error on cuda:{} during {}: {} (status {})", ordinal, what,
                                  cusolver_status_name(s), static_cast<int>(s)));
}

}  // namespace rabbit::cuda_check
