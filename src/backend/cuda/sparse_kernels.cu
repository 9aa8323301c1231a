// The load-balanced sparse products (csr_segments.hpp; docs/sharding-and-gpu.md "Sparse products"):
// one thread per (segment, column), then one per (long row, column) adding its pieces in order.
#include "grid_stride.hpp"
#include "reduce_kernels.hpp"

namespace rabbit::cuda_kernels {
namespace {

__global__ void csr_segment_kernel(pipeline::CsrSegments g, int64_t width, const int64_t* rowptr,
                                   const int32_t* cols, const double* vals, const double* x, double* y,
                                   double* partial, int64_t total) {
  RABBIT_GRID_STRIDE(t, total) pipeline::csr_segment(t, g, width, rowptr, cols, vals, x, y, partial);
}
__global__ void csr_combine_kernel(pipeline::CsrSegments g, const double* partial, double* y, int64_t total) {
  RABBIT_GRID_STRIDE(t, total) pipeline::csr_combine(t, g, partial, y);
}

}  // namespace

void csr_multiply(const pipeline::CsrSegments& plan, int64_t width, const int64_t* rowptr,
                  const int32_t* cols, const double* vals, const double* x, double* y, double* partial, int k,
                  cudaStream_t s) {
  const int64_t segments = plan.nseg * k, long_rows = plan.nlong * k;
  if (segments > 0)
    csr_segment_kernel<<<blocks_for(segments), kThreads, 0, s>>>(plan, width, rowptr, cols, vals, x, y,
                                                                 partial, segments);
  if (long_rows > 0)
    csr_combine_kernel<<<blocks_for(long_rows), kThreads, 0, s>>>(plan, partial, y, long_rows);
}

}  // namespace rabbit::cuda_kernels
