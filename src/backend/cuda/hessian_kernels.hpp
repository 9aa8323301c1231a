#pragma once
// Launchers of the dense Hessian's SYRK-path kernels (hessian_kernels.cu, hessian_elements.hpp).
#include <cuda_runtime.h>

#include <cstdint>

#include "rabbit/backend/cuda/hessian_elements.hpp"

namespace rabbit::cuda_kernels {

void process_indicator(const pipeline::EntryArrays& e, int nproc, double* dl, cudaStream_t s);
void theta_tile(const double* K2, int64_t W, int64_t S, bool symmetric, const double* h1, int64_t e0,
                int64_t rows, double* G, cudaStream_t s);
void mix_tile(int64_t E, int nproc, int64_t S, const double* omega, const double* G, int64_t e0, int64_t rows,
              double* B, cudaStream_t s);

}  // namespace rabbit::cuda_kernels
