#pragma once
// The host policy for the CUDA shard's pipeline (shard_pipeline.hpp): host memory, loops over the
// same element bodies as the kernels (pipeline_elements.hpp) and Eigen for the dense tensor products,
// so that the whole orchestration runs and is compared with the CPU shard without a GPU.
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "rabbit/backend/cuda/fixed_order_sum.hpp"
#include "rabbit/backend/cuda/hessian_elements.hpp"
#include "src/backend/cuda/shard_pipeline.hpp"

namespace rabbit::testing {

using pipeline::BinArrays;
using pipeline::EntryArrays;

struct HostOps {
  int64_t live_buffers = 0;
  int device = 0;  // an emulated ordinal: select() makes it current, release() checks it is

  void select() const { current_device() = device; }
  std::string name() const { return "host-emulation"; }
  // 1 TiB free unless a test sets less (the memory check at construction, shard_memory.hpp).
  uint64_t free_bytes = uint64_t(1) << 40;
  uint64_t free_memory(uint64_t* total) const {
    *total = uint64_t(1) << 40;
    return free_bytes;
  }
  // A fixed HVP batch budget (the GPU's is a share of its free memory): 8 MiB splits the 20,000-bin
  // scale models' HVPs and Hessians into several batches.
  uint64_t batch_budget_bytes = uint64_t(8) << 20;
  uint64_t batch_budget() const { return batch_budget_bytes; }
  // Filled with 0xFF bytes (NaN as double, -1 as an index) rather than zeros, as fresh device memory
  // is garbage: a read before the first write then shows as a NaN result instead of passing silently.
  void* alloc(size_t bytes, const char*) {
    ++live_buffers;
    ++allocations();
    void* p = std::malloc(bytes);
    std::memset(p, 0xFF, bytes);
    return p;
  }
  void release(void* p) {
    --live_buffers;
    if (current_device() != device) ++frees_on_wrong_device();
    std::free(p);
  }
  void to_device(void* d, const void* s, size_t b, const char*) { std::memcpy(d, s, b); }
  void to_host(void* d, const void* s, size_t b, const char*) { std::memcpy(d, s, b); }
  // The pinned staging, NaN-filled like device memory; copies are immediate, synchronisations counted.
  void* alloc_pinned(size_t bytes, const char* what) { return alloc(bytes, what); }
  void release_pinned(void* p) { release(p); }
  void to_device_async(void* d, const void* s, size_t b, const char*) { std::memcpy(d, s, b); }
  void to_host_async(void* d, const void* s, size_t b, const char*) { std::memcpy(d, s, b); }
  void synchronize(const char*) { ++synchronizations(); }
  void zero(void* p, size_t b) { std::memset(p, 0, b); }
  void check(const char*) {}
  void k2_dense(bool transpose, const double* K2, int64_t E, int64_t W, const double* X, double* Y, int k) {
    using RowMajor = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    Eigen::Map<const RowMajor> K(K2, E, W);
    Eigen::Map<const Eigen::MatrixXd> Xm(X, transpose ? E : W, k);
    Eigen::Map<Eigen::MatrixXd> Ym(Y, transpose ? W : E, k);
    if (transpose)
      Ym = K.transpose() * Xm;
    else
      Ym = K * Xm;
  }
  void entry_yields(const EntryArrays& e, bool ln, const double* lambda, const double* rates,
                    const double* rho, double* q, double* N, double* Nbp, int nproc) {
    for (int64_t i = 0; i < e.nentries; ++i)
      pipeline::entry_yields(i, e, ln, lambda, rates, rho, q, N, Nbp, nproc);
  }
  void profile_bins(const bin_math::BinConfig& cfg, const BinArrays& b, const double* Nbp, double* beta,
                    double* phi, double* u1, double* u2, double* d, double* m, double* value) {
    for (int64_t i = 0; i < b.nbins; ++i)
      pipeline::profile_bin_at(i, cfg, b, Nbp, beta, phi, u1, u2, d, m, value);
  }
  void gradient_weights(const EntryArrays& e, bool ln, const double* phi, const double* q, const double* N,
                        const double* rho, double* gw, double* pw, int nproc) {
    for (int64_t i = 0; i < e.nentries; ++i)
      pipeline::gradient_weights(i, e, ln, phi, q, N, rho, gw, pw, nproc);
  }
  void delta_yields(const EntryArrays& e, bool ln, const double* q, const double* N, const double* rho,
                    const double* dl, const double* dr, double* dN, int64_t nbp, int nproc, int k) {
    for (int64_t t = 0; t < e.nentries * k; ++t)
      pipeline::delta_yields(t, e, ln, q, N, rho, dl, dr, dN, nbp, nproc);
  }
  void apply_psi(int64_t nbins, int nproc, int k, const double* u1, const double* u2, const double* d,
                 const double* m, const double* dN, double* z) {
    for (int64_t t = 0; t < nbins * k; ++t) pipeline::apply_psi(t, nbins, nproc, u1, u2, d, m, dN, z);
  }
  void hvp_weights(const EntryArrays& e, bool ln, const double* z, const double* phi, const double* q,
                   const double* N, const double* rho, const double* dl, const double* dr, double* omega,
                   double* t, int64_t nbp, int nproc, int k) {
    for (int64_t i = 0; i < e.nentries * k; ++i)
      pipeline::hvp_weights(i, e, ln, z, phi, q, N, rho, dl, dr, omega, t, nbp, nproc);
  }
  // The device's fixed order (fixed_order_sum.hpp), so that host and GPU sums agree bitwise.
  void sum_over_bins(const double* in, int64_t nbins, int nproc, int64_t ld, int k, double* out) {
    pipeline::fixed_order_sum_over_bins(in, nbins, nproc, ld, k, out);
  }
  // The two passes of sparse_kernels.cu over the segment plan (csr_segments.hpp).
  void csr_multiply(const pipeline::CsrSegments& plan, int64_t width, const int64_t* rowptr,
                    const int32_t* cols, const double* vals, const double* x, double* y, double* partial,
                    int k) {
    for (int64_t t = 0; t < plan.nseg * k; ++t)
      pipeline::csr_segment(t, plan, width, rowptr, cols, vals, x, y, partial);
    for (int64_t t = 0; t < plan.nlong * k; ++t) pipeline::csr_combine(t, plan, partial, y);
  }
  void fill(double* x, int64_t n, double value) { std::fill(x, x + n, value); }
  // The dense Hessian's SYRK path: the element bodies of hessian_kernels.cu and an Eigen SYRKX.
  void process_indicator(const EntryArrays& e, int nproc, double* dl) {
    for (int64_t t = 0; t < e.nentries * nproc; ++t) pipeline::process_indicator(t, e, dl);
  }
  void theta_tile(const double* K2, int64_t W, int64_t S, bool symmetric, const double* h1, int64_t e0,
                  int64_t rows, double* G) {
    for (int64_t t = 0; t < rows * S; ++t) pipeline::theta_tile(t, K2, W, S, symmetric, h1, e0, G);
  }
  void mix_tile(int64_t E, int nproc, int64_t S, const double* omega, const double* G, int64_t e0,
                int64_t rows, double* B) {
    for (int64_t t = 0; t < rows * S; ++t) pipeline::mix_tile(t, E, nproc, S, omega, G, e0, B);
  }
  void syrkx_lower(int64_t n, int64_t k, const double* A, const double* B, double* C, bool accumulate) {
    Eigen::Map<const Eigen::MatrixXd> Am(A, n, k), Bm(B, n, k);
    Eigen::Map<Eigen::MatrixXd> Cm(C, n, n);
    if (!accumulate) Cm.triangularView<Eigen::Lower>().setZero();
    Cm.triangularView<Eigen::Lower>() += Am * Bm.transpose();
  }

  // The fused loss+grad pass (fused_elements.hpp) with the kernel's loops in order: blocks one after
  // the other, each over its tiles; Λ from 32 lane partials summed in the warp's butterfly order. The
  // emulated L2 (64 KiB) and block count (5) cut the test models into several tiles with an uneven
  // last one; tests set other values.
  uint64_t l2_bytes = uint64_t(64) << 10;
  int max_blocks = 5;
  uint64_t l2_cache_bytes() const { return l2_bytes; }
  int fused_max_blocks() const { return max_blocks; }
  void fused_loss_grad(const pipeline::FusedPass& a) {
    const int P = a.bins.nproc;
    for (int g = 0; g < a.tiles.blocks; ++g) {
      std::fill(a.partial + int64_t(g) * a.width, a.partial + int64_t(g + 1) * a.width, 0.0);
      for (int64_t tile = g; tile < a.tiles.tiles; tile += a.tiles.blocks) {
        int64_t bin0, bin1, row0, row1;
        pipeline::fused_tile(a, tile, bin0, bin1, row0, row1);
        for (int64_t r = row0; r < row1; ++r) {
          double lanes[pipeline::kFusedLanes];
          for (int l = 0; l < pipeline::kFusedLanes; ++l)
            lanes[l] = pipeline::fused_lambda_lane(a, r, l, pipeline::kFusedLanes);
          a.lambda[r] = pipeline::fused_butterfly_sum(lanes);
        }
        for (int64_t i = row0; i < row1; ++i)
          pipeline::entry_yields(i, a.entries, a.log_normal, a.lambda, a.rates, a.rho, a.q, a.N, a.Nbp, P);
        for (int64_t b = bin0; b < bin1; ++b)
          pipeline::profile_bin_at(b, a.cfg, a.bins, a.Nbp, a.beta, a.phi, a.u1, a.u2, a.d, a.schur, a.value);
        for (int64_t i = row0; i < row1; ++i)
          pipeline::gradient_weights(i, a.entries, a.log_normal, a.phi, a.q, a.N, a.rho, a.gw, a.pw, P);
        for (int64_t c = 0; c < a.width; ++c) pipeline::fused_gradient_column(a, g, row0, row1, c);
      }
    }
  }
  void reduce_partials(const double* partial, int blocks, int64_t width, double* y) {
    for (int64_t c = 0; c < width; ++c) pipeline::fused_reduce_column(c, partial, blocks, width, y);
  }

  // The emulated "current device" of this thread and the frees made while another was current (a
  // multi-GPU bug: cudaFree needs the owning device selected).
  static int& current_device() {
    static thread_local int d = 0;
    return d;
  }
  static int64_t& frees_on_wrong_device() {
    static thread_local int64_t n = 0;
    return n;
  }
  // Allocations made by every host-policy shard (the fitter may run shards on other threads): the
  // HVP batch is allocated once, not per batch or per call.
  static std::atomic<int64_t>& allocations() {
    static std::atomic<int64_t> n{0};
    return n;
  }
  // Waits for the device by every host-policy shard: one per call, one more per extra HVP batch.
  static std::atomic<int64_t>& synchronizations() {
    static std::atomic<int64_t> n{0};
    return n;
  }
};

inline std::unique_ptr<ShardEvaluator> host_shard(std::shared_ptr<const Model> model, int64_t a, int64_t b,
                                                  int device = 0, uint64_t batch_budget = uint64_t(8) << 20) {
  auto ops = std::make_unique<HostOps>();
  ops->device = device;
  ops->batch_budget_bytes = batch_budget;
  return std::make_unique<pipeline::ShardPipeline<HostOps>>(std::move(model), a, b, std::move(ops));
}

}  // namespace rabbit::testing
