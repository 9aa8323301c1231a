// The whole-GPU two-stage sums over bins (fixed_order_sum.hpp; docs/sharding-and-gpu.md
// "Deterministic reductions"). Every block runs the same lane + halving-tree order as the host mirror.
#include "reduce_kernels.hpp"

namespace rabbit::cuda_kernels {
namespace {

using pipeline::kSumChunk;
using pipeline::kSumLanes;

// The lane sums in buf, added by the fixed halving tree; the total in buf[0].
__device__ void block_tree(double* buf) {
  __syncthreads();
  for (int w = kSumLanes / 2; w > 0; w /= 2) {
    if (threadIdx.x < w) buf[threadIdx.x] += buf[threadIdx.x + w];
    __syncthreads();
  }
}

// Stage 1: block = (chunk c, output o = p + P·j); writes out[o] directly when there is one chunk.
__global__ void sum_chunks_kernel(const double* in, int64_t nbins, int nproc, int64_t ld, int64_t chunks,
                                  double* partial, double* out) {
  __shared__ double buf[kSumLanes];
  const int64_t c = blockIdx.x % chunks, o = blockIdx.x / chunks;
  const int64_t p = o % nproc, j = o / nproc;
  const int64_t b0 = c * kSumChunk, b1 = min(nbins, b0 + kSumChunk);
  const double* col = in + p + ld * j;
  double acc = 0;
  for (int64_t b = b0 + threadIdx.x; b < b1; b += kSumLanes) acc += col[b * nproc];
  buf[threadIdx.x] = acc;
  block_tree(buf);
  if (threadIdx.x == 0) (chunks == 1 ? out[o] : partial[o * chunks + c]) = buf[0];
}

// Stage 2: one block per output over its chunk partials, same order.
__global__ void sum_partials_kernel(const double* partial, int64_t chunks, double* out) {
  __shared__ double buf[kSumLanes];
  const double* row = partial + blockIdx.x * chunks;
  double acc = 0;
  for (int64_t c = threadIdx.x; c < chunks; c += kSumLanes) acc += row[c];
  buf[threadIdx.x] = acc;
  block_tree(buf);
  if (threadIdx.x == 0) out[blockIdx.x] = buf[0];
}

}  // namespace

int64_t sum_over_bins_scratch(int64_t nbins, int nproc, int k) {
  const int64_t chunks = pipeline::sum_chunks(nbins);
  return chunks == 1 ? 0 : chunks * nproc * k;
}

void sum_over_bins(const double* in, int64_t nbins, int nproc, int64_t ld, int k, double* out,
                   double* scratch, cudaStream_t s) {
  const int64_t outputs = int64_t(nproc) * k;
  if (outputs == 0) return;
  const int64_t chunks = pipeline::sum_chunks(nbins);
  sum_chunks_kernel<<<static_cast<unsigned>(chunks * outputs), kSumLanes, 0, s>>>(in, nbins, nproc, ld,
                                                                                  chunks, scratch, out);
  if (chunks > 1)
    sum_partials_kernel<<<static_cast<unsigned>(outputs), kSumLanes, 0, s>>>(scratch, chunks, out);
}

}  // namespace rabbit::cuda_kernels
