#pragma once
// Launchers of the CUDA shard's kernels (kernels.cu): grid-stride loops over the per-element bodies
// of pipeline_elements.hpp. Plain host signatures over device pointers.
#include <cuda_runtime.h>

#include <cstdint>

#include "rabbit/backend/cuda/pipeline_elements.hpp"

namespace rabbit::cuda_kernels {

using pipeline::BinArrays;
using pipeline::EntryArrays;

void entry_yields(const EntryArrays& e, bool log_normal, const double* lambda, const double* rates,
                  const double* rho, double* q, double* N, double* Nbp, int nproc, cudaStream_t s);
void profile_bins(const bin_math::BinConfig& cfg, const BinArrays& b, const double* Nbp, double* beta,
                  double* phi, double* u1, double* u2, double* d, double* m, double* value, cudaStream_t s);
void gradient_weights(const EntryArrays& e, bool log_normal, const double* phi_bp, const double* q,
                      const double* N, const double* rho, double* gw, double* pw, int nproc, cudaStream_t s);
void delta_yields(const EntryArrays& e, bool log_normal, const double* q, const double* N, const double* rho,
                  const double* dlambda, const double* dr, double* dNbp, int64_t nbp, int nproc, int k,
                  cudaStream_t s);
void apply_psi(int64_t nbins, int nproc, int k, const double* u1, const double* u2, const double* d,
               const double* m, const double* dNbp, double* z, cudaStream_t s);
void hvp_weights(const EntryArrays& e, bool log_normal, const double* z, const double* phi_bp,
                 const double* q, const double* N, const double* rho, const double* dlambda, const double* dr,
                 double* omega, double* tbp, int64_t nbp, int nproc, int k, cudaStream_t s);
// sum_over_bins and csr_multiply: reduce_kernels.hpp.
void fill(double* x, int64_t n, double value, cudaStream_t s);

}  // namespace rabbit::cuda_kernels
