#pragma once
// Launchers of the whole-GPU fixed-order reductions (reduce_kernels.cu, fixed_order_sum.hpp) and of
// the load-balanced sparse products (sparse_kernels.cu, csr_segments.hpp).
#include <cuda_runtime.h>

#include <cstdint>

#include "rabbit/backend/cuda/csr_segments.hpp"
#include "rabbit/backend/cuda/fixed_order_sum.hpp"

namespace rabbit::cuda_kernels {

/// Doubles of scratch sum_over_bins needs for these sizes (the stage-1 partials).
int64_t sum_over_bins_scratch(int64_t nbins, int nproc, int k);
/// out[p + P·j] = Σ_b in[b·P + p + ld·j] in the order of fixed_order_sum.hpp; `scratch` holds
/// sum_over_bins_scratch() doubles.
void sum_over_bins(const double* in, int64_t nbins, int nproc, int64_t ld, int k, double* out,
                   double* scratch, cudaStream_t s);
/// y (rows × k) = A·x (width × k) for the CSR matrix A by its segment plan; `partial` holds
/// plan.nslots × k doubles.
void csr_multiply(const pipeline::CsrSegments& plan, int64_t width, const int64_t* rowptr,
                  const int32_t* cols, const double* vals, const double* x, double* y, double* partial, int k,
                  cudaStream_t s);

}  // namespace rabbit::cuda_kernels
