#pragma once
// The host policy for the CUDA shard's pipeline (shard_pipeline.hpp): host memory, loops over the
// same element bodies as the kernels (pipeline_elements.hpp) and Eigen for the dense tensor products,
// so that the whole orchestration runs and is compared with the CPU shard without a GPU.
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "../../../src/backend/cuda/shard_pipeline.hpp"

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
  void sum_over_bins(const double* in, int64_t nbins, int nproc, int64_t ld, int k, double* out) {
    for (int j = 0; j < k; ++j)
      for (int p = 0; p < nproc; ++p) {
        double acc = 0;
        for (int64_t b = 0; b < nbins; ++b) acc += in[b * nproc + p + ld * j];
        out[p + nproc * j] = acc;
      }
  }
  void csr_multiply(int64_t rows, int64_t width, const int64_t* rowptr, const int32_t* cols,
                    const double* vals, const double* x, double* y, int k) {
    for (int64_t t = 0; t < rows * k; ++t) pipeline::csr_row(t, rows, width, rowptr, cols, vals, x, y);
  }
  void fill(double* x, int64_t n, double value) { std::fill(x, x + n, value); }

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
