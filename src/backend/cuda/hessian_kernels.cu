// Grid-stride kernels over the dense Hessian's SYRK-path element bodies (hessian_elements.hpp).
#include "grid_stride.hpp"
#include "hessian_kernels.hpp"

namespace rabbit::cuda_kernels {
namespace {

__global__ void process_indicator_kernel(pipeline::EntryArrays e, double* dl, int64_t total) {
  RABBIT_GRID_STRIDE(t, total) pipeline::process_indicator(t, e, dl);
}
__global__ void theta_tile_kernel(const double* K2, int64_t W, int64_t S, bool symmetric, const double* h1,
                                  int64_t e0, double* G, int64_t total) {
  RABBIT_GRID_STRIDE(t, total) pipeline::theta_tile(t, K2, W, S, symmetric, h1, e0, G);
}
__global__ void mix_tile_kernel(int64_t E, int nproc, int64_t S, const double* omega, const double* G,
                                int64_t e0, double* B, int64_t total) {
  RABBIT_GRID_STRIDE(t, total) pipeline::mix_tile(t, E, nproc, S, omega, G, e0, B);
}

}  // namespace

void process_indicator(const pipeline::EntryArrays& e, int nproc, double* dl, cudaStream_t s) {
  const int64_t total = e.nentries * nproc;
  if (total > 0) process_indicator_kernel<<<blocks_for(total), kThreads, 0, s>>>(e, dl, total);
}
void theta_tile(const double* K2, int64_t W, int64_t S, bool symmetric, const double* h1, int64_t e0,
                int64_t rows, double* G, cudaStream_t s) {
  const int64_t total = rows * S;
  if (total > 0)
    theta_tile_kernel<<<blocks_for(total), kThreads, 0, s>>>(K2, W, S, symmetric, h1, e0, G, total);
}
void mix_tile(int64_t E, int nproc, int64_t S, const double* omega, const double* G, int64_t e0, int64_t rows,
              double* B, cudaStream_t s) {
  const int64_t total = rows * S;
  if (total > 0) mix_tile_kernel<<<blocks_for(total), kThreads, 0, s>>>(E, nproc, S, omega, G, e0, B, total);
}

}  // namespace rabbit::cuda_kernels
