// The fused loss+grad kernel (fused_kernels.hpp): a block per group of tiles, one warp per row for
// Λ (coalesced along the row, butterfly sum), then the tile's yields, profiles and gradient weights
// with one thread per entry or bin, then one thread per tensor column adding the tile's K2ᵀ gw to
// the block's partial (coalesced across the warp). The tile's rows are read from device memory for
// Λ and found again in L2 for the gradient (plan_fused_tiles sizes the tiles for that).
#include "fused_kernels.hpp"
#include "grid_stride.hpp"

namespace rabbit::cuda_kernels {
namespace {

constexpr int kFusedThreads = 256;
constexpr unsigned kFullWarp = 0xffffffffu;

__global__ void __launch_bounds__(kFusedThreads) fused_loss_grad_kernel(pipeline::FusedPass a) {
  const int g = blockIdx.x;
  const int lane = threadIdx.x % pipeline::kFusedLanes, warp = threadIdx.x / pipeline::kFusedLanes;
  const int warps = blockDim.x / pipeline::kFusedLanes;
  for (int64_t c = threadIdx.x; c < a.width; c += blockDim.x) a.partial[int64_t(g) * a.width + c] = 0.0;
  for (int64_t tile = g; tile < a.tiles.tiles; tile += gridDim.x) {
    int64_t bin0, bin1, row0, row1;
    pipeline::fused_tile(a, tile, bin0, bin1, row0, row1);
    for (int64_t r = row0 + warp; r < row1; r += warps) {
      double v = pipeline::fused_lambda_lane(a, r, lane, pipeline::kFusedLanes);
      for (int off = pipeline::kFusedLanes / 2; off > 0; off /= 2) v += __shfl_xor_sync(kFullWarp, v, off);
      if (lane == 0) a.lambda[r] = v;
    }
    __syncthreads();
    for (int64_t i = row0 + threadIdx.x; i < row1; i += blockDim.x)
      pipeline::entry_yields(i, a.entries, a.log_normal, a.lambda, a.rates, a.rho, a.q, a.N, a.Nbp,
                             a.bins.nproc);
    __syncthreads();
    for (int64_t b = bin0 + threadIdx.x; b < bin1; b += blockDim.x)
      pipeline::profile_bin_at(b, a.cfg, a.bins, a.Nbp, a.beta, a.phi, a.u1, a.u2, a.d, a.schur, a.value);
    __syncthreads();
    for (int64_t i = row0 + threadIdx.x; i < row1; i += blockDim.x)
      pipeline::gradient_weights(i, a.entries, a.log_normal, a.phi, a.q, a.N, a.rho, a.gw, a.pw,
                                 a.bins.nproc);
    __syncthreads();
    for (int64_t c = threadIdx.x; c < a.width; c += blockDim.x)
      pipeline::fused_gradient_column(a, g, row0, row1, c);
    // Each thread adds only to its own columns and the next tile writes other rows: no barrier here.
  }
}

__global__ void reduce_partials_kernel(const double* partial, int blocks, int64_t width, double* y) {
  RABBIT_GRID_STRIDE(c, width) pipeline::fused_reduce_column(c, partial, blocks, width, y);
}

}  // namespace

void fused_loss_grad(const pipeline::FusedPass& a, cudaStream_t s) {
  if (a.tiles.blocks == 0 || a.tiles.tiles == 0) return;
  fused_loss_grad_kernel<<<static_cast<unsigned>(a.tiles.blocks), kFusedThreads, 0, s>>>(a);
}

int fused_blocks_per_multiprocessor() {
  int n = 0;
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, fused_loss_grad_kernel, kFusedThreads, 0) !=
      cudaSuccess)
    return 1;
  return n < 1 ? 1 : n;
}

void reduce_partials(const double* partial, int blocks, int64_t width, double* y, cudaStream_t s) {
  if (width == 0) return;
  const int64_t grid = (width + kFusedThreads - 1) / kFusedThreads;
  reduce_partials_kernel<<<static_cast<unsigned>(grid), kFusedThreads, 0, s>>>(partial, blocks, width, y);
}

}  // namespace rabbit::cuda_kernels
