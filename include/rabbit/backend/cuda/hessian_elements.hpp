#pragma once
// The element bodies of the dense Hessian's SYRK path (docs/sharding-and-gpu.md "The dense Hessian
// as a SYRK"), __host__ __device__ like pipeline_elements.hpp. For a dense tensor (entry e = b·P + p)
// the θθ block of the shard's Hessian is Γᵀ K2ᵀ 𝒲 K2 Γ (+ h''∘y_d on the diagonal, host), with 𝒲
// block-diagonal per bin: 𝒲_b = diag(c) Ψ_b diag(c) + diag(φN) (docs/likelihood.md "Passes"). The
// HVP element bodies applied to the P process indicators in entry space give 𝒲's rows (ω), so every
// BB mode and systematic type is the HVP's own arithmetic; the Gram sum is then SYRKX of the
// Γ-applied tile G (rows K_eᵀΓ) against its bin-mixed copy 𝒲G, blocked over whole bins.
#include <cstdint>

#include "rabbit/backend/cuda/pipeline_elements.hpp"

namespace rabbit::pipeline {

/// t = i + E·p: dl[i, p] = 1 where entry i belongs to process p, else 0.
RABBIT_HD inline void process_indicator(int64_t t, const EntryArrays& e, double* dl) {
  const int64_t i = t % e.nentries, p = t / e.nentries;
  dl[t] = e.proc[i] == p ? 1.0 : 0.0;
}

/// t = s + S·r: G[s, r] = K2[e0 + r, s] + h'_s K2[e0 + r, S + s] (asymmetric tensors; symmetric:
/// the first term), G column-major S × rows.
RABBIT_HD inline void theta_tile(int64_t t, const double* K2, int64_t W, int64_t S, bool symmetric,
                                 const double* h1, int64_t e0, double* G) {
  const int64_t r = t / S, s = t % S;
  const double* row = K2 + (e0 + r) * W;
  G[t] = symmetric ? row[s] : row[s] + h1[s] * row[S + s];
}

/// t = s + S·r: B[s, r] = Σ_p' ω[e, p'] G[s, r − p + p'] for entry e = e0 + r of process p (the tile
/// starts at a bin boundary): 𝒲_b applied to the bin's rows of G.
RABBIT_HD inline void mix_tile(int64_t t, int64_t E, int nproc, int64_t S, const double* omega,
                               const double* G, int64_t e0, double* B) {
  const int64_t r = t / S, s = t % S, e = e0 + r, base = r - e % nproc;
  double acc = 0;
  for (int q = 0; q < nproc; ++q) acc += omega[e + E * q] * G[s + S * (base + q)];
  B[t] = acc;
}

}  // namespace rabbit::pipeline
