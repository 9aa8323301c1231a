#include "kernels.hpp"

namespace rabbit::cuda_kernels {
namespace {

constexpr int kThreads = 256;

inline unsigned grid_for(int64_t n) {
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 1 ? 1 : (blocks > 2147483647 ? 2147483647 : blocks));
}

__global__ void entry_yields_kernel(EntryArrays e, bool log_normal, const double* lambda, const double* rates,
                                    const double* rho, double* q, double* N, double* Nbp, int nproc) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < e.nentries; i += int64_t(gridDim.x) * blockDim.x) {
    const int p = e.proc[i];
    double qi, ni;
    if (log_normal) {
      qi = e.norm[i] * exp(lambda[i]);
      ni = rates[p] * qi;
    } else {
      qi = e.norm[i];
      ni = rates[p] * qi + rho[p] * lambda[i];
    }
    q[i] = qi;
    N[i] = ni;
    Nbp[int64_t(e.bin[i]) * nproc + p] = ni;
  }
}

__global__ void profile_bins_kernel(bin_math::BinConfig cfg, BinArrays b, const double* Nbp, double* beta, double* phi,
                                    double* u1, double* u2, double* d, double* m, double* value) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < b.nbins; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t o = i * b.nproc;
    bin_math::BinStats st;
    if (cfg.bb == bin_math::kLite) {
      st.kstat = b.kstat + i;
      st.beta0 = b.beta0 + i;
      st.masked = b.masked + i;
      st.sigma2 = b.sigma2 + i;
      st.zero_var = b.zero_var ? b.zero_var + o : nullptr;
    } else if (cfg.bb == bin_math::kFull) {
      st.kstat = b.kstat + o;
      st.beta0 = b.beta0 + o;
      st.masked = b.masked + o;
      st.sigma2 = b.sigma2 + o;
    }
    double* bi = beta ? beta + (cfg.bb == bin_math::kFull ? o : i) : nullptr;
    double dummy = 0;
    bin_math::BinResult r;
    bin_math::profile_bin(cfg, b.nobs[i], b.varnobs ? b.varnobs[i] : 1.0, b.lognobs[i], Nbp + o, st,
                          bi ? bi : &dummy, phi + o, u1 + o, u2 + o, d + o, r);
    m[3 * i] = r.m11;
    m[3 * i + 1] = r.m12;
    m[3 * i + 2] = r.m22;
    value[i] = r.value;
  }
}

__global__ void gradient_weights_kernel(EntryArrays e, bool log_normal, const double* phi_bp, const double* q,
                                        const double* N, const double* rho, double* gw, double* pw, int nproc) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < e.nentries; i += int64_t(gridDim.x) * blockDim.x) {
    const int p = e.proc[i];
    const int64_t bp = int64_t(e.bin[i]) * nproc + p;
    const double phi = phi_bp[bp];
    gw[i] = log_normal ? phi * N[i] : phi * rho[p];
    pw[bp] = phi * q[i];  // q = n⁰ for the normal type
  }
}

__global__ void delta_yields_kernel(EntryArrays e, bool log_normal, const double* q, const double* N,
                                    const double* rho, const double* dlambda, const double* dr, double* dNbp,
                                    int64_t nbp, int nproc, int k) {
  const int64_t total = e.nentries * k;
  for (int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; t < total; t += int64_t(gridDim.x) * blockDim.x) {
    const int64_t i = t % e.nentries, j = t / e.nentries;
    const int p = e.proc[i];
    const double dl = dlambda[i + e.nentries * j], drr = dr[p + int64_t(nproc) * j];
    const double v = log_normal ? q[i] * drr + N[i] * dl : q[i] * drr + rho[p] * dl;
    dNbp[int64_t(e.bin[i]) * nproc + p + nbp * j] = v;
  }
}

__global__ void apply_psi_kernel(int64_t nbins, int nproc, int k, const double* u1, const double* u2, const double* d,
                                 const double* m, const double* dNbp, double* z) {
  const int64_t total = nbins * k;
  const int64_t nbp = nbins * nproc;
  for (int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; t < total; t += int64_t(gridDim.x) * blockDim.x) {
    const int64_t b = t % nbins, j = t / nbins;
    const int64_t o = b * nproc;
    const double* dn = dNbp + nbp * j + o;
    double s1 = 0, s2 = 0;
    for (int p = 0; p < nproc; ++p) {
      s1 += u1[o + p] * dn[p];
      s2 += u2[o + p] * dn[p];
    }
    const double a1 = m[3 * b] * s1 + m[3 * b + 1] * s2, a2 = m[3 * b + 1] * s1 + m[3 * b + 2] * s2;
    double* zo = z + nbp * j + o;
    for (int p = 0; p < nproc; ++p) zo[p] = u1[o + p] * a1 + u2[o + p] * a2 + d[o + p] * dn[p];
  }
}

__global__ void hvp_weights_kernel(EntryArrays e, bool log_normal, const double* z, const double* phi_bp,
                                   const double* q, const double* N, const double* rho, const double* dlambda,
                                   const double* dr, double* omega, double* tbp, int64_t nbp, int nproc, int k) {
  const int64_t total = e.nentries * k;
  for (int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; t < total; t += int64_t(gridDim.x) * blockDim.x) {
    const int64_t i = t % e.nentries, j = t / e.nentries;
    const int p = e.proc[i];
    const int64_t bp = int64_t(e.bin[i]) * nproc + p + nbp * j;
    const int64_t bp0 = int64_t(e.bin[i]) * nproc + p;
    const double zz = z[bp], phi = phi_bp[bp0], dl = dlambda[i + e.nentries * j];
    if (log_normal) {
      omega[i + e.nentries * j] = zz * N[i] + phi * (N[i] * dl + q[i] * dr[p + int64_t(nproc) * j]);
      tbp[bp] = (zz + phi * dl) * q[i];
    } else {
      omega[i + e.nentries * j] = rho[p] * zz;
      tbp[bp] = zz * q[i];
    }
  }
}

// One block per output; each thread strides over the bins, then a fixed tree: deterministic.
__global__ void sum_over_bins_kernel(const double* in, int64_t nbins, int nproc, int64_t ld, double* out) {
  __shared__ double buf[kThreads];
  const int p = blockIdx.x % nproc, j = blockIdx.x / nproc;
  double acc = 0;
  for (int64_t b = threadIdx.x; b < nbins; b += blockDim.x) acc += in[b * nproc + p + ld * j];
  buf[threadIdx.x] = acc;
  __syncthreads();
  for (int w = blockDim.x / 2; w > 0; w /= 2) {
    if (threadIdx.x < w) buf[threadIdx.x] += buf[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[blockIdx.x] = buf[0];
}

__global__ void csr_multiply_kernel(int64_t rows, int64_t width, const int64_t* rowptr, const int32_t* cols,
                                    const double* vals, const double* x, double* y, int k) {
  const int64_t total = rows * k;
  for (int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; t < total; t += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = t % rows, j = t / rows;
    double acc = 0;
    for (int64_t a = rowptr[r]; a < rowptr[r + 1]; ++a) acc += vals[a] * x[cols[a] + width * j];
    y[r + rows * j] = acc;
  }
}

__global__ void fill_kernel(double* x, int64_t n, double value) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    x[i] = value;
}

}  // namespace

void entry_yields(const EntryArrays& e, bool log_normal, const double* lambda, const double* rates, const double* rho,
                  double* q, double* N, double* Nbp, int nproc, cudaStream_t s) {
  if (e.nentries == 0) return;
  entry_yields_kernel<<<grid_for(e.nentries), kThreads, 0, s>>>(e, log_normal, lambda, rates, rho, q, N, Nbp, nproc);
}

void profile_bins(const bin_math::BinConfig& cfg, const BinArrays& b, const double* Nbp, double* beta, double* phi,
                  double* u1, double* u2, double* d, double* m, double* value, cudaStream_t s) {
  if (b.nbins == 0) return;
  profile_bins_kernel<<<grid_for(b.nbins), kThreads, 0, s>>>(cfg, b, Nbp, beta, phi, u1, u2, d, m, value);
}

void gradient_weights(const EntryArrays& e, bool log_normal, const double* phi_bp, const double* q, const double* N,
                      const double* rho, double* gw, double* pw, int nproc, cudaStream_t s) {
  if (e.nentries == 0) return;
  gradient_weights_kernel<<<grid_for(e.nentries), kThreads, 0, s>>>(e, log_normal, phi_bp, q, N, rho, gw, pw, nproc);
}

void delta_yields(const EntryArrays& e, bool log_normal, const double* q, const double* N, const double* rho,
                  const double* dlambda, const double* dr, double* dNbp, int64_t nbp, int nproc, int k,
                  cudaStream_t s) {
  if (e.nentries == 0 || k == 0) return;
  delta_yields_kernel<<<grid_for(e.nentries * k), kThreads, 0, s>>>(e, log_normal, q, N, rho, dlambda, dr, dNbp, nbp,
                                                                    nproc, k);
}

void apply_psi(int64_t nbins, int nproc, int k, const double* u1, const double* u2, const double* d, const double* m,
               const double* dNbp, double* z, cudaStream_t s) {
  if (nbins == 0 || k == 0) return;
  apply_psi_kernel<<<grid_for(nbins * k), kThreads, 0, s>>>(nbins, nproc, k, u1, u2, d, m, dNbp, z);
}

void hvp_weights(const EntryArrays& e, bool log_normal, const double* z, const double* phi_bp, const double* q,
                 const double* N, const double* rho, const double* dlambda, const double* dr, double* omega,
                 double* tbp, int64_t nbp, int nproc, int k, cudaStream_t s) {
  if (e.nentries == 0 || k == 0) return;
  hvp_weights_kernel<<<grid_for(e.nentries * k), kThreads, 0, s>>>(e, log_normal, z, phi_bp, q, N, rho, dlambda, dr,
                                                                   omega, tbp, nbp, nproc, k);
}

void sum_over_bins(const double* in, int64_t nbins, int nproc, int64_t ld, int k, double* out, cudaStream_t s) {
  if (nproc * k == 0) return;
  sum_over_bins_kernel<<<static_cast<unsigned>(nproc * k), kThreads, 0, s>>>(in, nbins, nproc, ld, out);
}

void csr_multiply(int64_t rows, int64_t width, const int64_t* rowptr, const int32_t* cols, const double* vals,
                  const double* x, double* y, int k, cudaStream_t s) {
  if (rows == 0 || k == 0) return;
  csr_multiply_kernel<<<grid_for(rows * k), kThreads, 0, s>>>(rows, width, rowptr, cols, vals, x, y, k);
}

void fill(double* x, int64_t n, double value, cudaStream_t s) {
  if (n == 0) return;
  fill_kernel<<<grid_for(n), kThreads, 0, s>>>(x, n, value);
}

}  // namespace rabbit::cuda_kernels
