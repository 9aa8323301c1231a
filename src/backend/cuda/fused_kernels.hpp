#pragma once
// Launchers of the fused loss+grad pass over a dense tensor (fused_kernels.cu, element bodies in
// fused_elements.hpp, docs/sharding-and-gpu.md "Fused loss+grad pass"). Plain host signatures over
// device pointers.
#include <cuda_runtime.h>

#include <cstdint>

#include "rabbit/backend/cuda/fused_elements.hpp"

namespace rabbit::cuda_kernels {

/// One launch of a.tiles.blocks blocks: Λ, yields, profiles, gw, pw, the bins' values and each
/// block's partial K2ᵀ gw (a.partial), reading each K2 row from device memory once.
void fused_loss_grad(const pipeline::FusedPass& a, cudaStream_t s);
/// Blocks of the fused kernel resident on one multiprocessor at once (its register and thread use).
int fused_blocks_per_multiprocessor();
/// y[c] = Σ_g partial[g·W + c] in block order (one thread per column).
void reduce_partials(const double* partial, int blocks, int64_t width, double* y, cudaStream_t s);

}  // namespace rabbit::cuda_kernels
