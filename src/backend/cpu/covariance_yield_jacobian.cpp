// Postfit yields of the covariance fit, normal-multiplicative (docs/likelihood.md "Profiled β"
// covariance table): the Jacobian of the observed bins' yields through rabbit's closed-form β̂.
#include <Eigen/LU>

#include "covariance_fit.hpp"

namespace rabbit::cpu_detail {

using cpu::BBKind;
using cpu::BinObservation;
using cpu::HyperDual;
using Eigen::MatrixXd;
using Eigen::VectorXd;

// Covariance fit, normal-multiplicative: dν/dξ [B × n] of the observed bins' yields through rabbit's
// closed-form β̂ (differentiated literally, as its autodiff does; masked bins/entries unscaled).
// Lite, x = [A; Z]: ν_b = Z_b + A_b β̂_b (unmasked) or A_b + Z_b, β̂ = 𝔄⁻¹𝔟 with 𝔄 = D'C⁻¹D' + diag(k),
// 𝔟 = D'C⁻¹(n − Z) + k∘β⁰, D' = diag(A'), ∂β̂/∂x = Q as in lite_multiplicative_exact.
// Full: ν_b = Tu_b + M_b − S_b u_b, u = C⁻¹(ν̂ − n), 𝔐ν̂ = diag(S)C⁻¹n + Tu + Tm, 𝔐 = diag(S)C⁻¹ + I, so
// dν = dTu + dM − u∘dS − S∘K(dTu + dTm − u∘dS) with K = C⁻¹𝔐⁻¹ (S = Σ_unmasked N²/k, Tu/Tm = Σ β⁰N over
// unmasked/masked entries, M = Σ_masked N).
MatrixXd coupled_multiplicative_jacobian(const ShardEvaluation& eng, MatrixXd* beta_jac) {
  const ShardState& s = eng.s;
  const EntryLayout& L = eng.L;
  const int64_t B = s.nbins_, P = s.nproc_, n = s.nx_;
  const bool full = s.bb_full_;
  const std::vector<uint8_t>& mask = s.bbmask_;
  const VectorXd& kstat = s.kstat_;
  const VectorXd& beta0 = s.beta0_;
  const VectorXd& nobs = s.nobs_;
  const MatrixXd& Ci = s.cov_inv;
  BinScratch so;
  int64_t maxo = 1;
  for (int64_t b = 0; b < B; ++b) maxo = std::max(maxo, L.bin_ptr[b + 1] - L.bin_ptr[b]);
  so.resize(maxo, 1, 1, 0);
  // per-bin sums and their Jacobian rows: lite (A, Z); full (S, Tu, Tm, M)
  const int nsum = full ? 4 : 2;
  std::vector<VectorXd> val(nsum, VectorXd::Zero(B));
  std::vector<MatrixXd> jac(nsum, MatrixXd::Zero(B, n));
  MatrixXd entry_rows;  // full with beta_jac: ∂N_f/∂ξ per flat entry b·P + p
  VectorXd entry_N;
  if (beta_jac) {
    entry_rows = MatrixXd::Zero(B * P, n);
    entry_N = VectorXd::Zero(B * P);
  }
  VectorXd r(n);
  for (int64_t b = 0; b < B; ++b) {
    eng.yields(b, so, 0);
    for (int64_t e = L.bin_ptr[b]; e < L.bin_ptr[b + 1]; ++e) {
      const int64_t i = e - L.bin_ptr[b], f = L.entry_flat[e];
      const double N = so.N[i];
      r.setZero();
      eng.add_entry_jacobian(e, so, i, 1.0, r.data());
      if (beta_jac) {
        entry_rows.row(f) = r.transpose();
        entry_N[f] = N;
      }
      auto add = [&](int which, double value, double weight) {
        val[which][b] += value;
        jac[which].row(b) += weight * r.transpose();
      };
      if (!full) {
        add(eng.prof.active(e) ? 0 : 1, N, 1.0);
      } else if (mask[f]) {
        add(2, beta0[f] * N, beta0[f]);
        add(3, N, 1.0);
      } else {
        add(0, N * N / kstat[f], 2.0 * N / kstat[f]);
        add(1, beta0[f] * N, beta0[f]);
      }
    }
  }
  const MatrixXd Id = MatrixXd::Identity(B, B);
  if (!full) {
    const VectorXd& A = val[0];
    const VectorXd& Z = val[1];
    VectorXd Ap = A, delta = VectorXd::Zero(B), k = kstat.head(B);
    for (int64_t b = 0; b < B; ++b) {
      if (A[b] > 0.0)
        delta[b] = 1.0;
      else
        Ap[b] = 1.0;
    }
    MatrixXd mat = Ap.asDiagonal() * Ci * Ap.asDiagonal();
    mat.diagonal() += k;
    const Eigen::PartialPivLU<MatrixXd> lu(mat);
    const VectorXd bhat = lu.solve(Ap.cwiseProduct(Ci * (nobs - Z)) + k.cwiseProduct(beta0.head(B)));
    const VectorXd w = Ci * (nobs - Z - Ap.cwiseProduct(bhat));
    const MatrixXd DCi = Ap.asDiagonal() * Ci;
    MatrixXd QA = -(DCi * delta.cwiseProduct(bhat).asDiagonal());
    QA.diagonal() += delta.cwiseProduct(w);
    QA = lu.solve(QA);                   // ∂β̂/∂A
    const MatrixXd QZ = lu.solve(-DCi);  // ∂β̂/∂Z
    MatrixXd dA = Id, dZ = Id;
    for (int64_t b = 0; b < B; ++b) {
      if (mask[b]) continue;
      dA(b, b) = bhat[b];
      dA.row(b) += A[b] * QA.row(b);
      dZ.row(b) += A[b] * QZ.row(b);
    }
    return dA * jac[0] + dZ * jac[1];
  }
  const VectorXd& S = val[0];
  MatrixXd mat = S.asDiagonal() * Ci;
  mat.diagonal().array() += 1.0;
  const Eigen::PartialPivLU<MatrixXd> lu(mat);
  const VectorXd nuhat = lu.solve(S.cwiseProduct(Ci * nobs) + val[1] + val[2]);
  const VectorXd u = Ci * (nuhat - nobs);
  const MatrixXd SK = S.asDiagonal() * Ci * lu.solve(Id);  // diag(S) C⁻¹ 𝔐⁻¹
  const MatrixXd dS = -MatrixXd(u.asDiagonal()) + SK * u.asDiagonal();
  if (beta_jac) {
    // β̂_f = β⁰_f − (N_f/k_f) u_b (unmasked), du = C⁻¹𝔐⁻¹(dTu + dTm − u∘dS)
    const MatrixXd du = Ci * lu.solve(MatrixXd(jac[1] + jac[2] - u.asDiagonal() * jac[0]));
    beta_jac->setZero(B * P, n);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t p = 0; p < P; ++p) {
        const int64_t f = b * P + p;
        if (mask[f]) continue;
        beta_jac->row(f) = -(u[b] * entry_rows.row(f) + entry_N[f] * du.row(b)) / kstat[f];
      }
  }
  return dS * jac[0] + (Id - SK) * jac[1] - SK * jac[2] + jac[3];
}

}  // namespace rabbit::cpu_detail
