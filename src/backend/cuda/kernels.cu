#include "grid_stride.hpp"
#include "kernels.hpp"

namespace rabbit::cuda_kernels {
namespace {

__global__ void entry_yields_kernel(EntryArrays e, bool log_normal, const double* lambda, const double* rates,
                                    const double* rho, double* q, double* N, double* Nbp, int nproc) {
  RABBIT_GRID_STRIDE(i, e.nentries)
  pipeline::entry_yields(i, e, log_normal, lambda, rates, rho, q, N, Nbp, nproc);
}
__global__ void profile_bins_kernel(bin_math::BinConfig cfg, BinArrays b, const double* Nbp, double* beta,
                                    double* phi, double* u1, double* u2, double* d, double* m,
                                    double* value) {
  RABBIT_GRID_STRIDE(i, b.nbins) pipeline::profile_bin_at(i, cfg, b, Nbp, beta, phi, u1, u2, d, m, value);
}
__global__ void gradient_weights_kernel(EntryArrays e, bool log_normal, const double* phi_bp, const double* q,
                                        const double* N, const double* rho, double* gw, double* pw,
                                        int nproc) {
  RABBIT_GRID_STRIDE(i, e.nentries)
  pipeline::gradient_weights(i, e, log_normal, phi_bp, q, N, rho, gw, pw, nproc);
}
__global__ void delta_yields_kernel(EntryArrays e, bool log_normal, const double* q, const double* N,
                                    const double* rho, const double* dlambda, const double* dr, double* dNbp,
                                    int64_t nbp, int nproc, int64_t total) {
  RABBIT_GRID_STRIDE(t, total)
  pipeline::delta_yields(t, e, log_normal, q, N, rho, dlambda, dr, dNbp, nbp, nproc);
}
__global__ void apply_psi_kernel(int64_t nbins, int nproc, const double* u1, const double* u2,
                                 const double* d, const double* m, const double* dNbp, double* z,
                                 int64_t total) {
  RABBIT_GRID_STRIDE(t, total) pipeline::apply_psi(t, nbins, nproc, u1, u2, d, m, dNbp, z);
}
__global__ void hvp_weights_kernel(EntryArrays e, bool log_normal, const double* z, const double* phi_bp,
                                   const double* q, const double* N, const double* rho, const double* dlambda,
                                   const double* dr, double* omega, double* tbp, int64_t nbp, int nproc,
                                   int64_t total) {
  RABBIT_GRID_STRIDE(t, total)
  pipeline::hvp_weights(t, e, log_normal, z, phi_bp, q, N, rho, dlambda, dr, omega, tbp, nbp, nproc);
}
__global__ void fill_kernel(double* x, int64_t n, double value) {
  RABBIT_GRID_STRIDE(i, n) x[i] = value;
}

}  // namespace

void entry_yields(const EntryArrays& e, bool log_normal, const double* lambda, const double* rates,
                  const double* rho, double* q, double* N, double* Nbp, int nproc, cudaStream_t s) {
  if (e.nentries == 0) return;
  entry_yields_kernel<<<blocks_for(e.nentries), kThreads, 0, s>>>(e, log_normal, lambda, rates, rho, q, N,
                                                                  Nbp, nproc);
}

void profile_bins(const bin_math::BinConfig& cfg, const BinArrays& b, const double* Nbp, double* beta,
                  double* phi, double* u1, double* u2, double* d, double* m, double* value, cudaStream_t s) {
  if (b.nbins == 0) return;
  profile_bins_kernel<<<blocks_for(b.nbins), kThreads, 0, s>>>(cfg, b, Nbp, beta, phi, u1, u2, d, m, value);
}

void gradient_weights(const EntryArrays& e, bool log_normal, const double* phi_bp, const double* q,
                      const double* N, const double* rho, double* gw, double* pw, int nproc, cudaStream_t s) {
  if (e.nentries == 0) return;
  gradient_weights_kernel<<<blocks_for(e.nentries), kThreads, 0, s>>>(e, log_normal, phi_bp, q, N, rho, gw,
                                                                      pw, nproc);
}

void delta_yields(const EntryArrays& e, bool log_normal, const double* q, const double* N, const double* rho,
                  const double* dlambda, const double* dr, double* dNbp, int64_t nbp, int nproc, int k,
                  cudaStream_t s) {
  const int64_t total = e.nentries * k;
  if (total == 0) return;
  delta_yields_kernel<<<blocks_for(total), kThreads, 0, s>>>(e, log_normal, q, N, rho, dlambda, dr, dNbp, nbp,
                                                             nproc, total);
}

void apply_psi(int64_t nbins, int nproc, int k, const double* u1, const double* u2, const double* d,
               const double* m, const double* dNbp, double* z, cudaStream_t s) {
  const int64_t total = nbins * k;
  if (total == 0) return;
  apply_psi_kernel<<<blocks_for(total), kThreads, 0, s>>>(nbins, nproc, u1, u2, d, m, dNbp, z, total);
}

void hvp_weights(const EntryArrays& e, bool log_normal, const double* z, const double* phi_bp,
                 const double* q, const double* N, const double* rho, const double* dlambda, const double* dr,
                 double* omega, double* tbp, int64_t nbp, int nproc, int k, cudaStream_t s) {
  const int64_t total = e.nentries * k;
  if (total == 0) return;
  hvp_weights_kernel<<<blocks_for(total), kThreads, 0, s>>>(e, log_normal, z, phi_bp, q, N, rho, dlambda, dr,
                                                            omega, tbp, nbp, nproc, total);
}

void fill(double* x, int64_t n, double value, cudaStream_t s) {
  if (n == 0) return;
  fill_kernel<<<blocks_for(n), kThreads, 0, s>>>(x, n, value);
}

}  // namespace rabbit::cuda_kernels
