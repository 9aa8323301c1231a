#pragma once
// BinScratch: the per-entry and per-bin workspace of phase A (yields), the bin profile and phase B
// (accumulation) for a set of bins (docs/likelihood.md "Profiles and their derivatives"): per entry
// the yield N, its π- and θ-weights a and c, the profile gradient φ, the diagonal d and the
// ncol columns of U; per bin the ncol × ncol block M of Ψ = U M Uᵀ + diag(d) and the final yield ν.
#include <cstdint>
#include <vector>

namespace rabbit::cpu_detail {

struct BinScratch {
  std::vector<double> N, a, c, phi, d, U, dN, dLam;
  std::vector<double> M;    // per bin ncol × ncol
  std::vector<double> nu;   // per bin final yield
  std::vector<double> aux;  // per bin: gamma-full 1/(1 + q t)
  int ncol = 1;
  int64_t k = 0;  // HVP directions (dN, dLam per entry × k)
  void resize(int64_t entries, int64_t bins, int ncols, int64_t kk) {
    ncol = ncols;
    k = kk;
    N.assign(entries, 0.0);
    a.assign(entries, 0.0);
    c.assign(entries, 0.0);
    phi.assign(entries, 0.0);
    d.assign(entries, 0.0);
    U.assign(entries * ncols, 0.0);
    dN.assign(entries * kk, 0.0);
    dLam.assign(entries * kk, 0.0);
    M.assign(bins * ncols * ncols, 0.0);
    nu.assign(bins, 0.0);
    aux.assign(bins, 1.0);
  }
};

}  // namespace rabbit::cpu_detail
