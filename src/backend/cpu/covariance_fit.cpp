// The covariance fit of a CPU shard (docs/likelihood.md "Profiled β" covariance table): the data
// term ½ rᵀC⁻¹r couples all observed bins, so phase A runs for all bins, β is profiled by one global
// linear solve and phase B follows; the normal-multiplicative and the normal-additive lite cases
// are differentiated literally, as rabbit's autodiff does.
#include "covariance_fit.hpp"

#include <Eigen/Cholesky>
#include <Eigen/LU>
#include <algorithm>

#include "shard_evaluation.hpp"

namespace rabbit::cpu_detail {

using cpu::BBKind;
using cpu::BinObservation;
using cpu::HyperDual;
using Eigen::MatrixXd;
using Eigen::VectorXd;

void build_covariance_matrices(ShardState& s) {
  const FitInputData& in = s.in;
  // covariance-fit matrices
  if (s.coupled) {
    if (in.data_cov_inv) {
      s.cov_inv = *in.data_cov_inv;
    } else {
      // rabbit's intended fallback (its code path is broken, docs/differences-from-rabbit.md)
      const VectorXd var = in.data_var.value_or(in.data_obs);
      s.cov_inv = var.cwiseInverse().asDiagonal();
    }
    if (s.bb_ == BBKind::normal_additive) {
      s.additive_V.resize(s.nbins_);
      for (int64_t b = 0; b < s.nbins_; ++b) {
        if (s.bb_full_) {
          double V = 0.0;
          for (int64_t p = 0; p < s.nproc_; ++p) V += s.sigma2_[b * s.nproc_ + p];
          s.additive_V[b] = V;
        } else {
          s.additive_V[b] = s.sigma2_[b];
        }
      }
      const MatrixXd Id = MatrixXd::Identity(s.nbins_, s.nbins_);
      if (s.bb_full_) {
        s.additive_lu.compute(s.additive_V.asDiagonal() * s.cov_inv + Id);
      } else {
        const VectorXd sv = s.sqrt_sigma2_.head(s.nbins_);
        s.additive_lu.compute(sv.asDiagonal() * s.cov_inv * sv.asDiagonal() + Id);
      }
      // (C + diag V)⁻¹ = C⁻¹ − C⁻¹ Vh (I + Vh C⁻¹ Vh)⁻¹ Vh C⁻¹ with Vh = diag(√V)
      const VectorXd vh = s.additive_V.cwiseSqrt();
      const MatrixXd inner = vh.asDiagonal() * s.cov_inv * vh.asDiagonal() + Id;
      const MatrixXd CiVh = s.cov_inv * vh.asDiagonal();
      s.cov_profiled_weight = s.cov_inv - CiVh * inner.partialPivLu().solve(CiVh.transpose());
    }
  }
}

// Covariance fit, normal-multiplicative, lite: gradient and Hessian of F(x) = ½ rᵀC⁻¹r + Σ_unmasked
// ½k(β̂ − β⁰)² in x = [A; Z] (2B) with β̂ = 𝔄⁻¹𝔟, 𝔄 = D'C⁻¹D' + diag(k), 𝔟 = D'C⁻¹(n − Z) + k∘β⁰,
// D' = diag(A'), differentiated literally as rabbit's autodiff does (masked bins solved as free and
// then replaced by β⁰; A' = 1 with zero derivative for A ≤ 0). With L_β the partial gradient in β
// (0 at a true profile): ∇F = L_x + Qᵀ L_β, Q = ∂β̂/∂x, and the Hessian adds to the Gauss-Newton
// and mixed terms the adjoint term λᵀ ∂²β̂ (λ = 𝔄⁻¹ L_β). Returns ∇F; H into Hx.
inline VectorXd ShardEvaluation::lite_multiplicative_exact(int64_t B, const VectorXd& xval, const VectorXd& g,
                                                           const MatrixXd& R,
                                                           const Eigen::PartialPivLU<MatrixXd>& lu,
                                                           const VectorXd& Ap, const VectorXd& bhat,
                                                           MatrixXd& Hx) const {
  const MatrixXd& Ci = s.cov_inv;
  const VectorXd A = xval.head(B), Z = xval.tail(B);
  const int64_t nv = 2 * B;
  VectorXd delta(B), kfree = VectorXd::Zero(B), freeb = VectorXd::Zero(B);
  for (int64_t b = 0; b < B; ++b) {
    delta[b] = A[b] > 0.0 ? 1.0 : 0.0;
    if (!s.bbmask_[b]) {
      freeb[b] = 1.0;
      kfree[b] = s.kstat_[b];
    }
  }
  // partial derivatives with β independent (β of masked bins enters nothing)
  VectorXd Lbeta(B);
  for (int64_t b = 0; b < B; ++b) Lbeta[b] = freeb[b] * (g[b] * A[b] + s.kstat_[b] * (bhat[b] - s.beta0_[b]));
  const VectorXd Lx = R.transpose() * g;
  MatrixXd DA = MatrixXd::Zero(B, B);  // ∂ν/∂β
  for (int64_t b = 0; b < B; ++b) DA(b, b) = freeb[b] * A[b];
  MatrixXd Lxb = R.transpose() * Ci * DA;  // nv × B
  for (int64_t b = 0; b < B; ++b) Lxb(b, b) += freeb[b] * g[b];
  MatrixXd Lbb = DA * Ci * DA;
  Lbb.diagonal() += kfree;
  // Q = ∂β̂/∂x = 𝔄⁻¹ [diag(δ∘w) − D'C⁻¹diag(δ∘β̂) , −D'C⁻¹], w = C⁻¹(n − Z − D'β̂)
  const VectorXd w = Ci * (s.nobs_ - Z - Ap.cwiseProduct(bhat));
  MatrixXd rhs(B, nv);
  const MatrixXd DCi = Ap.asDiagonal() * Ci;
  rhs.leftCols(B) = -(DCi * (delta.cwiseProduct(bhat)).asDiagonal());
  rhs.leftCols(B).diagonal() += delta.cwiseProduct(w);
  rhs.rightCols(B) = -DCi;
  const MatrixXd Q = lu.solve(rhs);
  const VectorXd grad = Lx + Q.transpose() * Lbeta;
  const MatrixXd LxbQ = Lxb * Q;
  Hx = R.transpose() * Ci * R + LxbQ + LxbQ.transpose() + Q.transpose() * Lbb * Q;
  // adjoint term Σ_j L_β_j ∂²β̂_j/∂x∂x = λᵀ(𝔟'' − 𝔄'Q − (𝔄'Q)ᵀ − 𝔄''β̂), 𝔄 symmetric
  const VectorXd lambda = lu.transpose().solve(Lbeta);
  if (lambda.cwiseAbs().maxCoeff() > 0.0) {
    const MatrixXd CQ = Ci * Ap.asDiagonal() * Q;      // C⁻¹D'Q  (B × nv)
    const VectorXd cl = Ci * Ap.cwiseProduct(lambda);  // C⁻¹D'λ
    MatrixXd Y = MatrixXd::Zero(nv, nv);               // rows A_i: λᵀ 𝔄_{A_i} Q
    for (int64_t i = 0; i < B; ++i)
      if (delta[i] != 0.0) Y.row(i) = lambda[i] * CQ.row(i) + cl[i] * Q.row(i);
    MatrixXd T = -(Y + Y.transpose());
    for (int64_t i = 0; i < B; ++i) {
      if (delta[i] == 0.0) continue;
      for (int64_t j = 0; j < B; ++j) {
        // 𝔟_{A_i Z_j} = −δ_i e_i C⁻¹_ij
        T(i, B + j) -= lambda[i] * Ci(i, j);
        T(B + j, i) -= lambda[i] * Ci(i, j);
        // 𝔄_{A_i A_j} β̂ = δ_iδ_j (e_i C⁻¹_ij β̂_j + e_j C⁻¹_ji β̂_i)
        if (delta[j] != 0.0) T(i, j) -= Ci(i, j) * (lambda[i] * bhat[j] + lambda[j] * bhat[i]);
      }
    }
    Hx += T;
  }
  Hx = 0.5 * (Hx + Hx.transpose()).eval();
  return grad;
}

// Covariance fit, normal-additive lite (per-process sumw2): F(ν⁰, A) = ½ rᵀC⁻¹r + ½|β̂ − β⁰|² with
// β̂ = 𝔏⁻¹(s∘C⁻¹(n − ν⁰) + β⁰) (𝔏 = diag(s)C⁻¹diag(s) + I) and ν = ν⁰ + s∘f∘β̂, f_b = 1 for A_b > 0
// and A_b otherwise (rabbit's A' = 1), differentiated literally in x = [ν⁰; A] (2B; the A_b
// variables act only where A_b ≤ 0). profile = false: β̂ held fixed. Returns ∇F; the Hessian into Hx.
inline VectorXd ShardEvaluation::additive_lite_exact(int64_t B, const VectorXd& g, const VectorXd& bhat,
                                                     const VectorXd& A, const VectorXd& special, bool profile,
                                                     MatrixXd& Hx) const {
  const MatrixXd& Ci = s.cov_inv;
  const VectorXd sv = s.sqrt_sigma2_.head(B);
  VectorXd f = VectorXd::Ones(B);
  for (int64_t b = 0; b < B; ++b)
    if (special[b] != 0.0) f[b] = A[b];
  const VectorXd sbA = special.cwiseProduct(sv).cwiseProduct(bhat);  // ∂ν_b/∂A_b
  MatrixXd Rb = MatrixXd::Zero(B, B);                                // −∂β̂/∂ν⁰
  if (profile) Rb = s.additive_lu.solve(MatrixXd(sv.asDiagonal() * Ci));
  const MatrixXd Gm = MatrixXd::Identity(B, B) - sv.cwiseProduct(f).asDiagonal() * Rb;  // ∂ν/∂ν⁰
  const MatrixXd CiGm = Ci * Gm;
  VectorXd grad(2 * B);
  grad.head(B) = Gm.transpose() * g;
  if (profile) grad.head(B) -= Rb.transpose() * (bhat - s.beta0_.head(B));
  grad.tail(B) = sbA.cwiseProduct(g);
  Hx.resize(2 * B, 2 * B);
  Hx.topLeftCorner(B, B) = Gm.transpose() * CiGm;
  if (profile) Hx.topLeftCorner(B, B) += Rb.transpose() * Rb;
  MatrixXd HAn = sbA.asDiagonal() * CiGm;  // ∂²F/∂A_b∂ν⁰_j
  if (profile) HAn -= (special.cwiseProduct(sv).cwiseProduct(g)).asDiagonal() * Rb;
  Hx.bottomLeftCorner(B, B) = HAn;
  Hx.topRightCorner(B, B) = HAn.transpose();
  Hx.bottomRightCorner(B, B) = sbA.asDiagonal() * Ci * sbA.asDiagonal();
  return grad;
}

inline void ShardEvaluation::run_coupled(Request& req, std::vector<Accum>& accs, const BinChunks& chunks,
                                         int T, bool derivs) {
  const int64_t k = pt.k;
  const int64_t B = s.nbins_;  // coupled shards cover all observed bins
  const int64_t E = L.bin_ptr[B];
  const bool mult = s.bb_ == BBKind::normal_multiplicative;
  // coupled variables: v = a·B + b with a = 0 (ν⁰), a ∈ {active, zero-variance} (lite mult.),
  // or a = process (full mult.)
  // normal-additive lite: variables [ν⁰; A] (ν = ν⁰ + sβA/A' depends on A itself where A ≤ 0)
  const bool additive_lite = s.bb_ == BBKind::normal_additive && !s.bb_full_ && !s.legacy_sumw_;
  const int nc = !mult ? (additive_lite ? 2 : 1) : (s.bb_full_ ? static_cast<int>(P) : 2);
  const int64_t nvar = nc * B;
  BinScratch sc;
  sc.resize(E, B, nc, k);
  s.pool->run(T, [&](int t) {  // each bin writes its own slots: any split gives the same numbers
    for (int64_t b = B * t / T; b < B * (t + 1) / T; ++b) yields(b, sc, L.bin_ptr[b]);
  });
  VectorXd nu0 = VectorXd::Zero(B);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t e = L.bin_ptr[b]; e < L.bin_ptr[b + 1]; ++e) nu0[b] += sc.N[e];
  const VectorXd& nobs = s.nobs_;
  const MatrixXd& Ci = s.cov_inv;
  VectorXd nu = nu0, beta_b;
  double Lb = 0.0;
  // per-entry multiplicative factor μ̃ (mult.), variable column a of each entry
  std::vector<double> mu(E, 1.0);
  std::vector<int> col(E, 0), col2(E, -1);  // col2: a second variable of the entry (normal-additive lite)
  VectorXd additive_A, additive_special;    // normal-additive lite: A_b, [A_b ≤ 0]
  if (s.bb_ == BBKind::normal_additive) {
    if (!s.bb_full_) {
      const VectorXd sv = s.sqrt_sigma2_.head(B);
      const VectorXd rhs = sv.cwiseProduct(Ci * (nobs - nu0)) + s.beta0_.head(B);
      beta_b = s.additive_lu.solve(rhs);
      additive_A = VectorXd::Zero(B);
      additive_special = VectorXd::Zero(B);
      for (int64_t b = 0; b < B; ++b) {
        double A = 0.0;
        for (int64_t e = L.bin_ptr[b]; e < L.bin_ptr[b + 1]; ++e)
          if (prof.active(e)) A += sc.N[e];
        const double f = s.legacy_sumw_ ? 1.0 : (A > 0.0 ? 1.0 : A);
        nu[b] = nu0[b] + sv[b] * beta_b[b] * f;
        additive_A[b] = A;
        if (additive_lite && !(A > 0.0)) {
          additive_special[b] = 1.0;
          for (int64_t e = L.bin_ptr[b]; e < L.bin_ptr[b + 1]; ++e)
            if (prof.active(e)) col2[e] = 1;
        }
      }
      Lb = 0.5 * (beta_b - s.beta0_.head(B)).squaredNorm();
    } else {
      VectorXd W0 = VectorXd::Zero(B);
      for (int64_t b = 0; b < B; ++b)
        for (int64_t p = 0; p < P; ++p) W0[b] += s.sqrt_sigma2_[b * P + p] * s.beta0_[b * P + p];
      const VectorXd Tt = s.additive_lu.solve(s.additive_V.cwiseProduct(Ci * (nobs - nu0)) + W0);
      const VectorXd u = Ci * (Tt + nu0 - nobs);
      nu = nu0 + W0 - s.additive_V.cwiseProduct(u);
      Lb = 0.5 * s.additive_V.dot(u.cwiseProduct(u));
      beta_b.resize(B * P);
      for (int64_t b = 0; b < B; ++b)
        for (int64_t p = 0; p < P; ++p)
          beta_b[b * P + p] = s.beta0_[b * P + p] - s.sqrt_sigma2_[b * P + p] * u[b];
    }
  }
  // normal-multiplicative (docs/likelihood.md "Profiled β" covariance table): general linear solves
  VectorXd xval;  // the coupled variables' values (A/Z per bin, or N per (bin, process))
  Eigen::PartialPivLU<MatrixXd> lite_mult_lu;  // lite: the solve of rabbit's closed form, its A', all β̂
  VectorXd lite_mult_Ap, lite_mult_beta;
  std::vector<int64_t> free_index;  // β entries that are free (unmasked)
  if (mult) {
    xval = VectorXd::Zero(nvar);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t e = L.bin_ptr[b]; e < L.bin_ptr[b + 1]; ++e) {
        col[e] = s.bb_full_ ? L.entry_proc[e] : (prof.active(e) ? 0 : 1);
        xval[col[e] * B + b] += sc.N[e];
      }
    if (!s.bb_full_) {
      VectorXd A = xval.head(B), Z = xval.tail(B), Ap = A;
      for (int64_t b = 0; b < B; ++b)
        if (!(A[b] > 0.0)) Ap[b] = 1.0;
      const VectorXd kv = s.kstat_.head(B);
      MatrixXd mat = Ap.asDiagonal() * Ci * Ap.asDiagonal();
      mat.diagonal() += kv;
      lite_mult_lu.compute(mat);
      lite_mult_Ap = Ap;
      beta_b = lite_mult_lu.solve(Ap.cwiseProduct(Ci * (nobs - Z)) + kv.cwiseProduct(s.beta0_.head(B)));
      lite_mult_beta = beta_b;
      for (int64_t b = 0; b < B; ++b) {
        if (s.bbmask_[b]) {
          beta_b[b] = s.beta0_[b];
          nu[b] = A[b] + Z[b];
        } else {
          nu[b] = beta_b[b] * A[b] + Z[b];
          Lb += 0.5 * kv[b] * (beta_b[b] - s.beta0_[b]) * (beta_b[b] - s.beta0_[b]);
          free_index.push_back(b);
        }
        for (int64_t e = L.bin_ptr[b]; e < L.bin_ptr[b + 1]; ++e)
          mu[e] = (!s.bbmask_[b] && prof.active(e)) ? beta_b[b] : 1.0;
      }
    } else {
      VectorXd Sb = VectorXd::Zero(B), Tb = VectorXd::Zero(B);
      for (int64_t b = 0; b < B; ++b)
        for (int64_t e = L.bin_ptr[b]; e < L.bin_ptr[b + 1]; ++e) {
          const int64_t f = L.entry_flat[e];
          if (!s.bbmask_[f]) Sb[b] += sc.N[e] * sc.N[e] / s.kstat_[f];
          Tb[b] += sc.N[e] * s.beta0_[f];
        }
      MatrixXd mat = Sb.asDiagonal() * Ci;
      mat.diagonal().array() += 1.0;
      const VectorXd nuhat = mat.partialPivLu().solve(Sb.cwiseProduct(Ci * nobs) + Tb);
      const VectorXd u = Ci * (nuhat - nobs);
      beta_b = s.beta0_.head(B * P);
      nu.setZero();
      for (int64_t b = 0; b < B; ++b)
        for (int64_t e = L.bin_ptr[b]; e < L.bin_ptr[b + 1]; ++e) {
          const int64_t f = L.entry_flat[e];
          if (!s.bbmask_[f]) {
            beta_b[f] = s.beta0_[f] - sc.N[e] / s.kstat_[f] * u[b];
            Lb += 0.5 * s.kstat_[f] * (beta_b[f] - s.beta0_[f]) * (beta_b[f] - s.beta0_[f]);
            mu[e] = beta_b[f];
            free_index.push_back(e);
          }
          nu[b] += mu[e] * sc.N[e];
        }
    }
  }
  const VectorXd r = nu - nobs;
  const VectorXd g = Ci * r;
  if (req.beta_out && beta_b.size() > 0) *req.beta_out = beta_b;
  for (auto& acc : accs) init_accum(acc, req, k);
  accs[0].f = 0.5 * r.dot(g) + Lb;
  if (!derivs) return;
  // Ψ over the coupled variables
  MatrixXd Wmat;
  VectorXd gradx;  // ∂F/∂x when it is not the envelope g∘μ
  if (additive_lite) {
    gradx = additive_lite_exact(B, g, beta_b, additive_A, additive_special, req.profiled(), Wmat);
  } else if (!mult) {
    Wmat = (s.bb_ == BBKind::normal_additive && req.profiled()) ? s.cov_profiled_weight : s.cov_inv;
  } else {
    // R (B × nvar): ∂ν/∂x at fixed β; D (B × nβ): ∂ν/∂β; G (nvar × nβ): g_b where x is scaled by β_j
    MatrixXd R = MatrixXd::Zero(B, nvar);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t e = L.bin_ptr[b]; e < L.bin_ptr[b + 1]; ++e) R(b, col[e] * B + b) = mu[e];
    Wmat = R.transpose() * Ci * R;
    const int64_t nbeta = static_cast<int64_t>(free_index.size());
    if (req.profiled() && !s.bb_full_) {
      // rabbit's derivatives of its own closed form (covers the BB-masked bins solved as free and
      // A' = 1 for A ≤ 0, where β̂ is not the profile, docs/likelihood.md "BB derivative corner cases" item 2)
      gradx = lite_multiplicative_exact(B, xval, g, R, lite_mult_lu, lite_mult_Ap, lite_mult_beta, Wmat);
    } else if (req.profiled() && nbeta > 0) {
      MatrixXd D = MatrixXd::Zero(B, nbeta), G = MatrixXd::Zero(nvar, nbeta);
      VectorXd c2(nbeta);
      for (int64_t j = 0; j < nbeta; ++j) {
        if (!s.bb_full_) {
          const int64_t b = free_index[j];
          D(b, j) = xval[b];  // A_b
          G(b, j) = g[b];     // variable A_b is scaled by β_b
          c2[j] = s.kstat_[b];
        } else {
          const int64_t e = free_index[j];
          const int64_t b = L.entry_flat[e] / P;
          D(b, j) = sc.N[e];
          G(col[e] * B + b, j) = g[b];
          c2[j] = s.kstat_[L.entry_flat[e]];
        }
      }
      const MatrixXd fxb = R.transpose() * Ci * D + G;
      MatrixXd fbb = D.transpose() * Ci * D;
      fbb.diagonal() += c2;
      Wmat -= fxb * fbb.ldlt().solve(fxb.transpose());
      Wmat = 0.5 * (Wmat + Wmat.transpose()).eval();
    }
  }
  for (int64_t b = 0; b < B; ++b)
    for (int64_t e = L.bin_ptr[b]; e < L.bin_ptr[b + 1]; ++e) {
      sc.phi[e] = gradx.size() ? gradx[col[e] * B + b] : g[b] * mu[e];
      for (int a = 0; a < nc; ++a) sc.U[e * nc + a] = 0.0;
      sc.U[e * nc + col[e]] = 1.0;
      if (col2[e] >= 0) {
        sc.phi[e] += gradx[col2[e] * B + b];
        sc.U[e * nc + col2[e]] = 1.0;
      }
      sc.d[e] = 0.0;
    }
  std::vector<double> zbuf;
  if (k > 0) {
    MatrixXd tb = MatrixXd::Zero(nvar, k);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t e = L.bin_ptr[b]; e < L.bin_ptr[b + 1]; ++e)
        for (int64_t j = 0; j < k; ++j) {
          tb(col[e] * B + b, j) += sc.dN[e * k + j];
          if (col2[e] >= 0) tb(col2[e] * B + b, j) += sc.dN[e * k + j];
        }
    const MatrixXd zc = Wmat * tb;
    zbuf.assign(B * k * nc, 0.0);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t j = 0; j < k; ++j)
        for (int a = 0; a < nc; ++a) zbuf[(b * k + j) * nc + a] = zc(a * B + b, j);
  }
  auto one_bin = [&](int64_t b, Accum& acc) {
    accumulate(b, sc, L.bin_ptr[b], b, req, acc, k > 0 ? zbuf.data() + b * k * nc : nullptr);
  };
  if (req.hess) {  // per thread over fixed bin ranges, as in run()
    s.pool->run(T, [&](int t) {
      for (int64_t b = B * t / T; b < B * (t + 1) / T; ++b) one_bin(b, accs[t]);
      flush_E(accs[t]);
    });
  } else {
    // backup execution as in run_uncoupled (docs/architecture.md "Threads"): this evaluation's
    // per-entry quantities and z move into a block that the threads' calls own jointly, so that a
    // worker still inside a chunk after the caller has returned reads nothing the caller frees
    struct PhaseB {
      BinScratch sc;
      std::vector<double> zbuf;
    };
    auto shared = std::make_shared<const PhaseB>(PhaseB{std::move(sc), std::move(zbuf)});
    const double f = accs[0].f;
    auto job = run_backed_up(
        req, chunks, T, nc,
        [chunks, k, nc, shared](const ShardEvaluation& ev, const Request& inputs, int64_t c, BinScratch&,
                                ChunkResult& r, const BackedUpChunks<ChunkResult>& job) {
          ev.init_accum(r.acc, inputs, k);
          for (int64_t b = chunks.first(c); b < chunks.last(c); ++b) {
            if (job.done(c)) return false;
            ev.accumulate(b, shared->sc, ev.L.bin_ptr[b], b, inputs, r.acc,
                          k > 0 ? shared->zbuf.data() + b * k * nc : nullptr);
          }
          return true;
        });
    for (int64_t c = 0; c < job->count(); ++c) accs[c] = std::move(job->result(c).acc);
    accs[0].f += f;
  }
  if (req.hess) {
    MatrixXd J = MatrixXd::Zero(n, nvar);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t e = L.bin_ptr[b]; e < L.bin_ptr[b + 1]; ++e) {
        const int p = L.entry_proc[e];
        for (int which = 0; which < 2; ++which) {
          const int a = which == 0 ? col[e] : col2[e];
          if (a < 0) continue;
          const int64_t v = a * B + b;
          if (M > 0 && pt.bin_dependent) {
            pt.add_rate_gradient(b, p, sc.a[e], J.col(v).data());
          } else if (M > 0) {
            J.col(v).head(M) += sc.a[e] * pt.jr.row(p).transpose();
          }
          L.row_E_axpy(e, sc.c[e], pt.hp.data(), J.col(v).data() + M);
        }
      }
    accs[0].H.triangularView<Eigen::Lower>() += J * (Wmat * J.transpose());
  }
}

}  // namespace rabbit::cpu_detail
