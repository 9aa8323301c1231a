#pragma once
// The fused loss+grad pass of the CUDA shard over a dense tensor (docs/sharding-and-gpu.md "Fused
// loss+grad pass"): the tiling plan and the per-element bodies, __host__ __device__ so that the
// kernel (src/backend/cuda/fused_kernels.cu) and the host policy of the tests run the same code.
//
// Bins are cut into tiles of whole bins (a bin's profile needs all its processes). A block takes
// tiles g, g + G, g + 2G, … in that order; per tile it computes Λ = K2_tile·m, the entry yields, the
// bins' profiles, the gradient weights gw and adds K2_tileᵀ gw into its own W-wide partial gradient,
// reading the tile's rows the second time while they are still in L2. The G partials are summed
// afterwards in block order. No atomics: the result depends only on the tiling, which depends only
// on the shard and the device (bitwise identical run to run).
#include <cstdint>

#include "rabbit/backend/cuda/pipeline_elements.hpp"

namespace rabbit::pipeline {

/// Bins per tile, tile count and blocks (each block runs tiles g, g + blocks, …). blocks == 0: no
/// tiling fits the cache budget, the shard takes the two-pass path.
struct FusedTiles {
  int64_t bins_per_tile = 0, tiles = 0;
  int blocks = 0;
  bool fused() const { return blocks > 0; }
};

/// The tiles of `nbins` bins of `nproc` rows of `width` doubles, for a device with `cache_bytes` of
/// L2 and `max_blocks` concurrently resident blocks. The tiles in flight (one per block) may fill
/// half of L2, leaving the rest to m, the per-entry arrays and the partial gradients; below half the
/// device's blocks a single pass cannot pull the bandwidth the two cuBLAS passes do, so the shard
/// keeps those (docs/sharding-and-gpu.md "Fused loss+grad pass").
inline FusedTiles plan_fused_tiles(int64_t nbins, int nproc, int64_t width, uint64_t cache_bytes,
                                   int max_blocks) {
  FusedTiles t;
  if (nbins <= 0 || nproc <= 0 || width <= 0 || max_blocks <= 0) return t;
  const uint64_t budget = cache_bytes / 2, bin_bytes = uint64_t(nproc) * uint64_t(width) * sizeof(double);
  const int64_t fitting = static_cast<int64_t>(budget / bin_bytes);  // bins in flight over all blocks
  int64_t blocks = max_blocks < fitting ? max_blocks : fitting;
  if (blocks < (max_blocks + 1) / 2) return t;
  if (blocks > nbins) blocks = nbins;
  int64_t per_tile = fitting / blocks;
  const int64_t even = (nbins + blocks - 1) / blocks;  // small shards: every block gets a tile
  if (per_tile > even) per_tile = even;
  t.bins_per_tile = per_tile;
  t.tiles = (nbins + per_tile - 1) / per_tile;
  t.blocks = static_cast<int>(blocks < t.tiles ? blocks : t.tiles);
  return t;
}

/// Everything one fused pass reads and writes (device pointers; dense layout e = b·P + p).
struct FusedPass {
  FusedTiles tiles;
  bin_math::BinConfig cfg;
  EntryArrays entries;
  BinArrays bins;
  bool log_normal = true;
  int64_t width = 0;
  const double* K2 = nullptr;  // [E × W] row-major
  const double* m = nullptr;   // [W]
  const double* rates = nullptr;
  const double* rho = nullptr;
  double *lambda = nullptr, *q = nullptr, *N = nullptr, *Nbp = nullptr, *beta = nullptr, *phi = nullptr;
  double *u1 = nullptr, *u2 = nullptr, *d = nullptr, *schur = nullptr, *value = nullptr;
  double *gw = nullptr, *pw = nullptr;
  double* partial = nullptr;  // [blocks × W]: block g's K2ᵀ gw over its tiles
};

/// Rows [row0, row1) and bins [bin0, bin1) of tile `tile`; the last tile may be shorter.
RABBIT_HD inline void fused_tile(const FusedPass& a, int64_t tile, int64_t& bin0, int64_t& bin1,
                                 int64_t& row0, int64_t& row1) {
  bin0 = tile * a.tiles.bins_per_tile;
  bin1 = bin0 + a.tiles.bins_per_tile < a.bins.nbins ? bin0 + a.tiles.bins_per_tile : a.bins.nbins;
  row0 = bin0 * a.bins.nproc;
  row1 = bin1 * a.bins.nproc;
}

/// One lane's share of Λ_row = Σ_c K2[row, c] m[c]: columns lane, lane + lanes, … (the kernel sums
/// the 32 lanes with a butterfly, `fused_butterfly_sum` on the host).
RABBIT_HD inline double fused_lambda_lane(const FusedPass& a, int64_t row, int lane, int lanes) {
  const double* k = a.K2 + row * a.width;
  double acc = 0;
  for (int64_t c = lane; c < a.width; c += lanes) acc += k[c] * a.m[c];
  return acc;
}

constexpr int kFusedLanes = 32;

/// The warp's xor-shuffle reduction (offsets 16, 8, 4, 2, 1) as the kernel runs it, lane 0's result.
inline double fused_butterfly_sum(double (&v)[kFusedLanes]) {
  for (int off = kFusedLanes / 2; off > 0; off /= 2) {
    double next[kFusedLanes];
    for (int l = 0; l < kFusedLanes; ++l) next[l] = v[l] + v[l ^ off];
    for (int l = 0; l < kFusedLanes; ++l) v[l] = next[l];
  }
  return v[0];
}

/// Block `block`'s partial gradient, column c, over rows [row0, row1) in row order: the second read
/// of the tile's rows.
RABBIT_HD inline void fused_gradient_column(const FusedPass& a, int block, int64_t row0, int64_t row1,
                                            int64_t c) {
  double* y = a.partial + int64_t(block) * a.width + c;
  double acc = *y;
  for (int64_t r = row0; r < row1; ++r) acc += a.gw[r] * a.K2[r * a.width + c];
  *y = acc;
}

/// y[c] = Σ_g partial[g, c], g = 0, 1, … (the fixed-order reduction of the blocks' partials).
RABBIT_HD inline void fused_reduce_column(int64_t c, const double* partial, int blocks, int64_t width,
                                          double* y) {
  double acc = 0;
  for (int g = 0; g < blocks; ++g) acc += partial[int64_t(g) * width + c];
  y[c] = acc;
}

}  // namespace rabbit::pipeline
