// CudaShardEvaluator = the shard pipeline (shard_pipeline.hpp) over CudaOps: cudart memory and
// copies on one stream per shard, cuBLAS GEMV/GEMM for the dense tensor products and the kernels of
// kernels.cu. Every CUDA / cuBLAS failure becomes a one-line ResourceError naming the device and the
// step.
#include "rabbit/backend/cuda/cuda_shard.hpp"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include "cuda_check.hpp"
#include "fused_kernels.hpp"
#include "hessian_kernels.hpp"
#include "kernels.hpp"
#include "rabbit/core/error.hpp"
#include "reduce_kernels.hpp"
#include "shard_pipeline.hpp"
#include "stage_timer.hpp"

namespace rabbit {
namespace {

namespace ck = cuda_kernels;

bool sync_after_each_kernel() {
  const char* v = std::getenv("RABBIT_CUDA_SYNC");
  return v && std::string(v) == "1";
}

// Every CUDA / cuBLAS failure becomes one ResourceError line (cuda_check.hpp).
void check_cuda(cudaError_t e, int ordinal, const char* what) {
  cuda_check::cuda(e, ordinal, what);
}
void check_cublas(cublasStatus_t s, int ordinal, const char* what) {
  cuda_check::cublas(s, ordinal, what);
}

class CudaOps {
 public:
  explicit CudaOps(int ordinal) : ordinal_(ordinal) {
    check_cuda(cudaSetDevice(ordinal_), ordinal_, "selecting the device");
    check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), ordinal_, "creating a stream");
    check_cublas(cublasCreate(&blas_), ordinal_, "creating the cuBLAS handle");
    check_cublas(cublasSetStream(blas_, stream_), ordinal_, "binding the cuBLAS stream");
  }
  CudaOps(const CudaOps&) = delete;
  CudaOps& operator=(const CudaOps&) = delete;
  ~CudaOps() {
    cudaSetDevice(ordinal_);
    if (sum_scratch_) cudaFree(sum_scratch_);
    if (blas_) cublasDestroy(blas_);
    if (stream_) cudaStreamDestroy(stream_);
  }

  void select() const { check_cuda(cudaSetDevice(ordinal_), ordinal_, "selecting the device"); }
  std::string name() const { return fmt::format("cuda:{}", ordinal_); }
  uint64_t free_memory(uint64_t* total) const {
    size_t f = 0, t = 0;
    check_cuda(cudaMemGetInfo(&f, &t), ordinal_, "querying device memory");
    *total = t;
    return f;
  }
  // The HVP batch's share of the free device memory (shard_memory.hpp batch_budget_of_free).
  uint64_t batch_budget() const {
    uint64_t total = 0;
    return pipeline::batch_budget_of_free(free_memory(&total));
  }
  void* alloc(size_t bytes, const char* what) {
    void* p = nullptr;
    check_cuda(cudaMalloc(&p, bytes), ordinal_, what);
    return p;
  }
  void release(void* p) { cudaFree(p); }
  void to_device(void* dst, const void* src, size_t bytes, const char* what) {
    // Synchronous: the host source may be a temporary.
    check_cuda(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream_), ordinal_, what);
    check_cuda(cudaStreamSynchronize(stream_), ordinal_, what);
  }
  void to_host(void* dst, const void* src, size_t bytes, const char* what) {
    check_cuda(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream_), ordinal_, what);
    check_cuda(cudaStreamSynchronize(stream_), ordinal_, what);
  }
  // Page-locked staging for the per-call copies: cudaMemcpyAsync from pageable memory is staged and
  // synchronous in effect; from pinned memory it is a DMA ordered on the stream, and the call waits
  // once (docs/sharding-and-gpu.md "Pinned copies, one synchronisation").
  void* alloc_pinned(size_t bytes, const char* what) {
    void* p = nullptr;
    check_cuda(cudaHostAlloc(&p, bytes, cudaHostAllocDefault), ordinal_, what);
    return p;
  }
  void release_pinned(void* p) { cudaFreeHost(p); }
  void to_device_async(void* dst, const void* src, size_t bytes, const char* what) {
    timer_.begin(stream_);
    check_cuda(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream_), ordinal_, what);
    timer_.end("copy host to device", stream_);
  }
  void to_host_async(void* dst, const void* src, size_t bytes, const char* what) {
    timer_.begin(stream_);
    check_cuda(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream_), ordinal_, what);
    timer_.end("copy device to host", stream_);
  }
  void synchronize(const char* what) {
    check_cuda(cudaStreamSynchronize(stream_), ordinal_, what);
    timer_.collect();
  }
  void zero(void* p, size_t bytes) {
    timer_.begin(stream_);
    check_cuda(cudaMemsetAsync(p, 0, bytes, stream_), ordinal_, "clearing a buffer");
    timer_.end("memset", stream_);
  }
  void check(const char* what) { check_cuda(cudaGetLastError(), ordinal_, what); }

  // Debug mode (RABBIT_CUDA_SYNC=1, docs/sharding-and-gpu.md "Debugging a GPU fault"): wait for each
  // kernel or cuBLAS call, so that a fault is reported at the kernel that caused it instead of at the
  // next copy. Off by default: it serialises host and device.
  void launched(const char* kernel) {
    timer_.end(kernel, stream_);
    if (!sync_each_) return;
    const std::string what = fmt::format("kernel {} (RABBIT_CUDA_SYNC=1)", kernel);
    check_cuda(cudaGetLastError(), ordinal_, what.c_str());
    check_cuda(cudaStreamSynchronize(stream_), ordinal_, what.c_str());
  }

  // The row-major [E × W] tensor is a column-major [W × E] matrix with leading dimension W. The
  // 64-bit cuBLAS entry points take E and W as they are: a shard may hold more than 2³¹ entries
  // (rows), which the int API would see as a negative size.
  void k2_dense(bool transpose, const double* K2, int64_t E, int64_t W, const double* X, double* Y, int k) {
    timer_.begin(stream_);
    const double one = 1.0, zero = 0.0;
    if (k == 1)
      check_cublas(
          cublasDgemv_64(blas_, transpose ? CUBLAS_OP_N : CUBLAS_OP_T, W, E, &one, K2, W, X, 1, &zero, Y, 1),
          ordinal_, "GEMV");
    else if (transpose)
      check_cublas(cublasDgemm_64(blas_, CUBLAS_OP_N, CUBLAS_OP_N, W, k, E, &one, K2, W, X, E, &zero, Y, W),
                   ordinal_, "GEMM");
    else
      check_cublas(cublasDgemm_64(blas_, CUBLAS_OP_T, CUBLAS_OP_N, E, k, W, &one, K2, W, X, W, &zero, Y, E),
                   ordinal_, "GEMM");
    launched(k == 1 ? "GEMV (tensor product)" : "GEMM (tensor product)");
  }

  void entry_yields(const pipeline::EntryArrays& e, bool ln, const double* lambda, const double* rates,
                    const double* rho, double* q, double* N, double* Nbp, int nproc) {
    timer_.begin(stream_);
    ck::entry_yields(e, ln, lambda, rates, rho, q, N, Nbp, nproc, stream_);
    launched("entry_yields");
  }
  void profile_bins(const bin_math::BinConfig& cfg, const pipeline::BinArrays& b, const double* Nbp,
                    double* beta, double* phi, double* u1, double* u2, double* d, double* m, double* value) {
    timer_.begin(stream_);
    ck::profile_bins(cfg, b, Nbp, beta, phi, u1, u2, d, m, value, stream_);
    launched("profile_bins");
  }
  void gradient_weights(const pipeline::EntryArrays& e, bool ln, const double* phi, const double* q,
                        const double* N, const double* rho, double* gw, double* pw, int nproc) {
    timer_.begin(stream_);
    ck::gradient_weights(e, ln, phi, q, N, rho, gw, pw, nproc, stream_);
    launched("gradient_weights");
  }
  void delta_yields(const pipeline::EntryArrays& e, bool ln, const double* q, const double* N,
                    const double* rho, const double* dl, const double* dr, double* dN, int64_t nbp, int nproc,
                    int k) {
    timer_.begin(stream_);
    ck::delta_yields(e, ln, q, N, rho, dl, dr, dN, nbp, nproc, k, stream_);
    launched("delta_yields");
  }
  void apply_psi(int64_t nbins, int nproc, int k, const double* u1, const double* u2, const double* d,
                 const double* m, const double* dN, double* z) {
    timer_.begin(stream_);
    ck::apply_psi(nbins, nproc, k, u1, u2, d, m, dN, z, stream_);
    launched("apply_psi");
  }
  void hvp_weights(const pipeline::EntryArrays& e, bool ln, const double* z, const double* phi,
                   const double* q, const double* N, const double* rho, const double* dl, const double* dr,
                   double* omega, double* t, int64_t nbp, int nproc, int k) {
    timer_.begin(stream_);
    ck::hvp_weights(e, ln, z, phi, q, N, rho, dl, dr, omega, t, nbp, nproc, k, stream_);
    launched("hvp_weights");
  }
  // The stage-1 partials live in a scratch buffer that only grows (the first gradient and the first
  // HVP batch size it; cudaMalloc waits for the device, so it is not done per call).
  void sum_over_bins(const double* in, int64_t nbins, int nproc, int64_t ld, int k, double* out) {
    const int64_t need = ck::sum_over_bins_scratch(nbins, nproc, k);
    if (need > sum_scratch_size_) {
      if (sum_scratch_) cudaFree(sum_scratch_);
      sum_scratch_ = nullptr;
      sum_scratch_size_ = 0;
      sum_scratch_ = static_cast<double*>(alloc(need * sizeof(double), "allocating the reduction partials"));
      sum_scratch_size_ = need;
    }
    timer_.begin(stream_);
    ck::sum_over_bins(in, nbins, nproc, ld, k, out, sum_scratch_, stream_);
    launched("sum_over_bins");
  }
  void csr_multiply(const pipeline::CsrSegments& plan, int64_t width, const int64_t* rowptr,
                    const int32_t* cols, const double* vals, const double* x, double* y, double* partial,
                    int k) {
    timer_.begin(stream_);
    ck::csr_multiply(plan, width, rowptr, cols, vals, x, y, partial, k, stream_);
    launched("csr_multiply");
  }
  // The dense Hessian's SYRK path (shard_pipeline.hpp hessian_by_syrk).
  void process_indicator(const pipeline::EntryArrays& e, int nproc, double* dl) {
    timer_.begin(stream_);
    ck::process_indicator(e, nproc, dl, stream_);
    launched("process_indicator");
  }
  void theta_tile(const double* K2, int64_t W, int64_t S, bool symmetric, const double* h1, int64_t e0,
                  int64_t rows, double* G) {
    timer_.begin(stream_);
    ck::theta_tile(K2, W, S, symmetric, h1, e0, rows, G, stream_);
    launched("theta_tile");
  }
  void mix_tile(int64_t E, int nproc, int64_t S, const double* omega, const double* G, int64_t e0,
                int64_t rows, double* B) {
    timer_.begin(stream_);
    ck::mix_tile(E, nproc, S, omega, G, e0, rows, B, stream_);
    launched("mix_tile");
  }
  // C's lower triangle (n × n) = A·Bᵀ (+ C when accumulating) for column-major n × k tiles whose
  // product is symmetric (B = A·𝒲 with 𝒲 symmetric): cuBLAS DSYRKX, 64-bit sizes.
  void syrkx_lower(int64_t n, int64_t k, const double* A, const double* B, double* C, bool accumulate) {
    const double one = 1.0, beta = accumulate ? 1.0 : 0.0;
    timer_.begin(stream_);
    check_cublas(
        cublasDsyrkx_64(blas_, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N, n, k, &one, A, n, B, n, &beta, C, n),
        ordinal_, "DSYRKX");
    launched("DSYRKX (dense Hessian)");
  }
  void fill(double* x, int64_t n, double value) {
    timer_.begin(stream_);
    ck::fill(x, n, value, stream_);
    launched("fill");
  }

  // The fused loss+grad pass (docs/sharding-and-gpu.md "Fused loss+grad pass"): its tiles are sized
  // from the L2 size and the blocks the device holds at once (at most two per multiprocessor: more
  // would shrink the tiles without adding bandwidth).
  uint64_t l2_cache_bytes() const { return static_cast<uint64_t>(attribute(cudaDevAttrL2CacheSize)); }
  int fused_max_blocks() const {
    const int per_sm = std::min(2, ck::fused_blocks_per_multiprocessor());
    return per_sm * attribute(cudaDevAttrMultiProcessorCount);
  }
  void fused_loss_grad(const pipeline::FusedPass& a) {
    ck::fused_loss_grad(a, stream_);
    launched("fused_loss_grad");
  }
  void reduce_partials(const double* partial, int blocks, int64_t width, double* y) {
    ck::reduce_partials(partial, blocks, width, y, stream_);
    launched("reduce_partials");
  }

 private:
  int attribute(cudaDeviceAttr a) const {
    int v = 0;
    check_cuda(cudaDeviceGetAttribute(&v, a, ordinal_), ordinal_, "querying the device");
    return v;
  }

  int ordinal_;
  bool sync_each_ = sync_after_each_kernel();
  cudaStream_t stream_ = nullptr;
  cublasHandle_t blas_ = nullptr;
  double* sum_scratch_ = nullptr;
  int64_t sum_scratch_size_ = 0;
  pipeline::StageTimer timer_{ordinal_};
};

}  // namespace

uint64_t cuda_shard_bytes(const Model& model, int64_t bin_begin, int64_t bin_end) {
  return pipeline::plan_shard_memory(model, bin_begin, bin_end).minimum_bytes();
}

std::unique_ptr<ShardEvaluator> make_cuda_shard(std::shared_ptr<const Model> model, int64_t bin_begin,
                                                int64_t bin_end, int ordinal) {
  return std::make_unique<pipeline::ShardPipeline<CudaOps>>(std::move(model), bin_begin, bin_end,
                                                            std::make_unique<CudaOps>(ordinal));
}

}  // namespace rabbit
