#pragma once
// The per-element bodies of the CUDA shard's kernels, __host__ __device__ so that the kernels
// (kernels.cu) and the host emulation used by the tests run the same code. Layouts: entries e
// (stored (bin, process) pairs of the shard; dense: e = b·P + p); per (bin, process) arrays [B·P]
// row-major; batched arrays column-major with k columns (leading dimension = rows).
#include <cstdint>

#include "rabbit/backend/cuda/bin_math.hpp"

namespace rabbit::pipeline {

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
/// N also scattered into Nbp.
RABBIT_HD inline void entry_yields(int64_t i, const EntryArrays& e, bool log_normal, const double* lambda,
                                   const double* rates, const double* rho, double* q, double* N, double* Nbp,
                                   int nproc) {
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

/// Bin i: profiled β, value, φ and the Ψ form (bin_math::profile_bin); m holds [m11, m12, m22].
RABBIT_HD inline void profile_bin_at(int64_t i, const bin_math::BinConfig& cfg, const BinArrays& b,
                                     const double* Nbp, double* beta, double* phi, double* u1, double* u2,
                                     double* d, double* m, double* value) {
  const int64_t o = i * b.nproc;
  bin_math::BinStats st;
  const bool full = cfg.mode == BBMode::full;
  if (cfg.bb != bin_math::BBKind::none && !full) {
    st.kstat = b.kstat + i;
    st.beta0 = b.beta0 + i;
    st.masked = b.masked + i;
    st.sigma2 = b.sigma2 + i;
    st.zero_var = b.zero_var ? b.zero_var + o : nullptr;
  } else if (cfg.bb != bin_math::BBKind::none) {
    st.kstat = b.kstat + o;
    st.beta0 = b.beta0 + o;
    st.masked = b.masked + o;
    st.sigma2 = b.sigma2 + o;
  }
  double dummy = 0;
  double* bi = beta ? beta + (full ? o : i) : &dummy;
  bin_math::BinResult r;
  bin_math::profile_bin(cfg, b.nobs[i], b.varnobs ? b.varnobs[i] : 1.0, b.lognobs[i], Nbp + o, st, bi,
                        phi + o, u1 + o, u2 + o, d + o, r);
  m[3 * i] = r.m11;
  m[3 * i + 1] = r.m12;
  m[3 * i + 2] = r.m22;
  value[i] = r.value;
}

/// gw_e = φ N (log_normal) or φ ρ_p (normal); pw_bp = φ q (q = n⁰ for the normal type).
RABBIT_HD inline void gradient_weights(int64_t i, const EntryArrays& e, bool log_normal, const double* phi_bp,
                                       const double* q, const double* N, const double* rho, double* gw,
                                       double* pw, int nproc) {
  const int p = e.proc[i];
  const int64_t bp = int64_t(e.bin[i]) * nproc + p;
  const double phi = phi_bp[bp];
  gw[i] = log_normal ? phi * N[i] : phi * rho[p];
  pw[bp] = phi * q[i];
}

/// t = i + E·j: δN_e,j = q δr_{p,j} + N δΛ_e,j (log_normal) or n⁰ δr + ρ_p δΛ (normal) into dNbp.
RABBIT_HD inline void delta_yields(int64_t t, const EntryArrays& e, bool log_normal, const double* q,
                                   const double* N, const double* rho, const double* dlambda,
                                   const double* dr, double* dNbp, int64_t nbp, int nproc) {
  const int64_t i = t % e.nentries, j = t / e.nentries;
  const int p = e.proc[i];
  const double dl = dlambda[i + e.nentries * j], drr = dr[p + int64_t(nproc) * j];
  const double v = log_normal ? q[i] * drr + N[i] * dl : q[i] * drr + rho[p] * dl;
  dNbp[int64_t(e.bin[i]) * nproc + p + nbp * j] = v;
}

/// t = b + B·j: z = (U M Uᵀ + diag(d)) δN for bin b, column j.
RABBIT_HD inline void apply_psi(int64_t t, int64_t nbins, int nproc, const double* u1, const double* u2,
                                const double* d, const double* m, const double* dNbp, double* z) {
  const int64_t nbp = nbins * nproc;
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

/// t = i + E·j: ω_e,j = z N + φ (N δΛ + q δr) (log_normal) or ρ_p z (normal); t_bp,j = (z + φ δΛ) q
/// (log_normal) or z n⁰ (normal).
RABBIT_HD inline void hvp_weights(int64_t t, const EntryArrays& e, bool log_normal, const double* z,
                                  const double* phi_bp, const double* q, const double* N, const double* rho,
                                  const double* dlambda, const double* dr, double* omega, double* tbp,
                                  int64_t nbp, int nproc) {
  const int64_t i = t % e.nentries, j = t / e.nentries;
  const int p = e.proc[i];
  const int64_t bp0 = int64_t(e.bin[i]) * nproc + p;
  const int64_t bp = bp0 + nbp * j;
  const double zz = z[bp], phi = phi_bp[bp0], dl = dlambda[i + e.nentries * j];
  if (log_normal) {
    omega[i + e.nentries * j] = zz * N[i] + phi * (N[i] * dl + q[i] * dr[p + int64_t(nproc) * j]);
    tbp[bp] = (zz + phi * dl) * q[i];
  } else {
    omega[i + e.nentries * j] = rho[p] * zz;
    tbp[bp] = zz * q[i];
  }
}

/// t = r + rows·j: y[r, j] = Σ_a vals[a] x[cols[a], j] over CSR row r.
RABBIT_HD inline void csr_row(int64_t t, int64_t rows, int64_t width, const int64_t* rowptr,
                              const int32_t* cols, const double* vals, const double* x, double* y) {
  const int64_t r = t % rows, j = t / rows;
  double acc = 0;
  for (int64_t a = rowptr[r]; a < rowptr[r + 1]; ++a) acc += vals[a] * x[cols[a] + width * j];
  y[r + rows * j] = acc;
}

}  // namespace rabbit::pipeline
