#pragma once
// Launchers of the CUDA shard's kernels (kernels.cu); plain host signatures over device pointers.
// Layouts: entries e (stored (bin, process) pairs of the shard, dense: e = b·P + p); per (bin,
// process) arrays [B·P] row-major; batched arrays column-major with k columns (leading dimension
// = rows).
#include <cstdint>

#include <cuda_runtime.h>

#include "rabbit/backend/cuda/bin_math.hpp"

namespace rabbit::cuda_kernels {

struct EntryArrays {
  int64_t nentries = 0;
  const int32_t* bin = nullptr;   // local bin of entry e
  const int32_t* proc = nullptr;  // process of entry e
  const double* norm = nullptr;   // n⁰_e
};

struct BinArrays {
  int64_t nbins = 0;
  int nproc = 0;
  const double* nobs = nullptr;
  const double* varnobs = nullptr;
  const double* lognobs = nullptr;
  // BB statistics: lite → [B] (zero_var [B·P]); full → [B·P]
  const double* kstat = nullptr;
  const double* beta0 = nullptr;
  const unsigned char* masked = nullptr;
  const double* sigma2 = nullptr;
  const unsigned char* zero_var = nullptr;
};

/// q_e and N_e from Λ_e (log_normal: q = n⁰ e^Λ, N = r_p q; normal: q = n⁰, N = r_p n⁰ + ρ_p Λ);
/// N scattered into Nbp (which must be zeroed first when entries are sparse).
void entry_yields(const EntryArrays& e, bool log_normal, const double* lambda, const double* rates, const double* rho,
                  double* q, double* N, double* Nbp, int nproc, cudaStream_t s);

/// Per bin: profiled β, value, φ and the Ψ form (bin_math::profile_bin).
void profile_bins(const bin_math::BinConfig& cfg, const BinArrays& b, const double* Nbp, double* beta, double* phi,
                  double* u1, double* u2, double* d, double* m /* [B·3] */, double* value /* [B] */,
                  cudaStream_t s);

/// Gradient weights per entry: gw_e = φ N (log_normal) or φ ρ_p (normal); pw_bp = φ q (log_normal)
/// or φ n⁰ (normal), scattered into the [B·P] array pw (zeroed first for sparse).
void gradient_weights(const EntryArrays& e, bool log_normal, const double* phi_bp, const double* q, const double* N,
                      const double* rho, double* gw, double* pw, int nproc, cudaStream_t s);

/// δN_e,j = q δr_{p,j} + N δΛ_e,j (log_normal) or n⁰ δr + ρ_p δΛ (normal), scattered into dNbp
/// [B·P × k] (zeroed first for sparse). dr is [P × k].
void delta_yields(const EntryArrays& e, bool log_normal, const double* q, const double* N, const double* rho,
                  const double* dlambda, const double* dr, double* dNbp, int64_t nbp, int nproc, int k,
                  cudaStream_t s);

/// z = Ψ δN per bin and column (the U M Uᵀ + diag(d) form).
void apply_psi(int64_t nbins, int nproc, int k, const double* u1, const double* u2, const double* d, const double* m,
               const double* dNbp, double* z, cudaStream_t s);

/// ω_e,j = z N + φ (N δΛ + q δr) (log_normal) or ρ_p z (normal); t_bp,j = (z + φ δΛ) q (log_normal)
/// or z n⁰ (normal) into tbp [B·P × k] (zeroed first for sparse).
void hvp_weights(const EntryArrays& e, bool log_normal, const double* z, const double* phi_bp, const double* q,
                 const double* N, const double* rho, const double* dlambda, const double* dr, double* omega,
                 double* tbp, int64_t nbp, int nproc, int k, cudaStream_t s);

/// out[p + P·j] = Σ_b in[b·P + p + ld·j] for p < P, j < k (fixed-order tree reduction).
void sum_over_bins(const double* in, int64_t nbins, int nproc, int64_t ld, int k, double* out, cudaStream_t s);

/// y = A x for a CSR matrix (rows × W) applied to k columns: y[r + rows·j] = Σ A[r,c] x[c + W·j].
void csr_multiply(int64_t rows, int64_t width, const int64_t* rowptr, const int32_t* cols, const double* vals,
                  const double* x, double* y, int k, cudaStream_t s);

/// Fills a device array with a value.
void fill(double* x, int64_t n, double value, cudaStream_t s);

}  // namespace rabbit::cuda_kernels
