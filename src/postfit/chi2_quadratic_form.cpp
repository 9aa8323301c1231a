#include "chi2_quadratic_form.hpp"

#include <Eigen/Cholesky>
#include <Eigen/Eigenvalues>
#include <Eigen/LU>
#include <cmath>
#include <limits>
#include <vector>

#include "rabbit/core/error.hpp"

namespace rabbit::postfit {

using Eigen::MatrixXd;
using Eigen::VectorXd;

DiagonalPlusLowRank linear_chi2_low_rank(const LinearChi2Terms& t, ParallelProducts& prod) {
  const MatrixXd& J = *t.J;
  const int64_t nobs = J.rows(), npar = J.cols();
  const VectorXd beta_var = t.beta_var.size() ? t.beta_var : VectorXd::Zero(nobs);
  DiagonalPlusLowRank V;
  if (!t.postfit) throw Error("linear_chi2_low_rank: the prefit V goes through prefit_chi2");
  const VectorXd& vn = t.data_var;
  const VectorXd e = beta_var.cwiseProduct(t.w).array() - 1.0;
  V.delta = e.cwiseAbs2().cwiseProduct(vn);
  const VectorXd k1 = t.w.cwiseProduct(vn).cwiseProduct(e);
  // D's entries (bin, entry, value): one bin per entry, in entry order.
  std::vector<Eigen::Triplet<double>> d;
  if (t.B) {
    V.delta += t.D.cwiseAbs2() * t.s;
    for (int64_t col = 0; col < t.D.outerSize(); ++col)
      for (Eigen::SparseMatrix<double>::InnerIterator it(t.D, col); it; ++it)
        d.emplace_back(it.row(), it.col(), it.value());
  }
  // U = [J C, K] with K = diag(k1) J + (D diag(s)) B, filled column by column on the threads in one pass
  // (docs/benchmarks.md "Histogram errors"), with the products of the former Eigen expression.
  V.U.resize(nobs, 2 * npar);
  const MatrixXd& JC = *t.JC;
  auto fill_columns = [&](int64_t j0, int64_t nj) {
    for (int64_t j = j0; j < j0 + nj; ++j) {
      V.U.col(j) = JC.col(j);
      auto k = V.U.col(npar + j);
      k = k1.cwiseProduct(J.col(j));
      for (const auto& x : d) k(x.row()) += (x.value() * t.s(x.col())) * (*t.B)(x.col(), j);
    }
  };
  prod.for_row_blocks(npar, 3.0 * static_cast<double>(nobs) * static_cast<double>(npar), fill_columns);
  const VectorXd wwv = t.w.cwiseAbs2().cwiseProduct(vn);
  V.X = prod.weighted_gram(J, wwv);
  V.X.diagonal() += t.cw;
  if (t.B) V.X += prod.weighted_gram(*t.B, t.s);
  return V;
}

namespace {

// h with B's row b = h_b · J's row b for every bin (to 1e-11 of the row's largest entry), else empty.
// Column by column within row blocks: J and B are column-major.
std::optional<VectorXd> row_multiples(const MatrixXd& B, const MatrixXd& J, ParallelProducts& prod) {
  const int64_t n = J.rows(), p = J.cols();
  if (B.rows() != n || B.cols() != p) return std::nullopt;
  VectorXd h(n);
  std::vector<char> ok(static_cast<size_t>(n), 1);
  prod.for_row_blocks(n, 4.0 * static_cast<double>(n) * static_cast<double>(p), [&](int64_t r0, int64_t nr) {
    Eigen::ArrayXd num = Eigen::ArrayXd::Zero(nr), den = Eigen::ArrayXd::Zero(nr);
    for (int64_t j = 0; j < p; ++j) {
      const auto jc = J.col(j).segment(r0, nr).array();
      num += B.col(j).segment(r0, nr).array() * jc;
      den += jc * jc;
    }
    const Eigen::ArrayXd hb = (den > 0.0).select(num / den, 0.0);
    Eigen::ArrayXd dev = Eigen::ArrayXd::Zero(nr), big = Eigen::ArrayXd::Zero(nr);
    for (int64_t j = 0; j < p; ++j) {
      const auto bc = B.col(j).segment(r0, nr).array();
      dev = dev.max((bc - hb * J.col(j).segment(r0, nr).array()).abs());
      big = big.max(bc.abs());
    }
    h.segment(r0, nr) = hb.matrix();
    for (int64_t i = 0; i < nr; ++i)
      if (!(dev(i) <= 1e-11 * big(i))) ok[static_cast<size_t>(r0 + i)] = 0;
  });
  for (char o : ok)
    if (!o) return std::nullopt;
  return h;
}

}  // namespace

std::optional<double> prefit_chi2(const LinearChi2Terms& t, const VectorXd& r, ParallelProducts& prod) {
  if (t.postfit) return std::nullopt;
  const MatrixXd& J = *t.J;
  const MatrixXd& C = *t.C;
  const VectorXd delta = t.beta_var.size() ? VectorXd(t.beta_var + t.data_var) : t.data_var;
  if (!(delta.array() > 0.0).all()) return std::nullopt;
  // V = Δ + J C Jᵀ: rᵀV⁻¹r = rᵀΔ⁻¹r − zᵀ(1 + C G)⁻¹C z with G = Jᵀ diag(1/Δ) J and z = JᵀΔ⁻¹r, J read
  // in place (no scaled copy of the nobs × npar U); C G by rows when C is diagonal (the prefit one).
  const VectorXd a = delta.cwiseInverse();
  const VectorXd ar = a.cwiseProduct(r);
  const VectorXd z = J.transpose() * ar;
  const MatrixXd G = prod.weighted_gram(J, a);
  MatrixXd M = prod.times_covariance(G.transpose(), C).transpose();  // C G = (G C)ᵀ, G and C symmetric
  M.diagonal().array() += 1.0;
  return r.dot(ar) - z.dot(prod.lu_solve(std::move(M), C * z));
}

std::optional<double> proportional_rows_chi2(const LinearChi2Terms& t, const VectorXd& r,
                                             ParallelProducts& prod) {
  if (!t.postfit) return std::nullopt;
  const MatrixXd& J = *t.J;
  const MatrixXd Ct = t.C->transpose();  // (J C)ᵀ = Cᵀ Jᵀ: the same products for a C that is not symmetric
  const int64_t nobs = J.rows(), p = J.cols();
  // Per bin: h (B = diag(h) J), d (D's one entry per row, on the diagonal) and s.
  VectorXd h = VectorXd::Zero(nobs), d = VectorXd::Zero(nobs), s = VectorXd::Zero(nobs);
  if (t.h.size() || t.B) {
    if (t.h.size()) {
      if (t.h.size() != nobs || t.s.size() != nobs) return std::nullopt;
      h = t.h;
    } else {
      std::optional<VectorXd> hm = row_multiples(*t.B, J, prod);
      if (!hm) return std::nullopt;
      h = std::move(*hm);
    }
    s = t.s;
    for (int64_t col = 0; col < t.D.outerSize(); ++col)
      for (Eigen::SparseMatrix<double>::InnerIterator it(t.D, col); it; ++it) {
        if (it.row() != it.col()) return std::nullopt;
        d(it.row()) += it.value();
      }
  }
  const VectorXd beta_var = t.beta_var.size() ? t.beta_var : VectorXd::Zero(nobs);
  const VectorXd& vn = t.data_var;
  const VectorXd e = beta_var.cwiseProduct(t.w).array() - 1.0;
  const VectorXd delta = e.cwiseAbs2().cwiseProduct(vn) + d.cwiseAbs2().cwiseProduct(s);
  if (!(delta.array() > 0.0).all()) return std::nullopt;
  // With K = diag(κ) J, κ = w v_n e + d s h, and X = diag(cw) + Jᵀ diag(w² v_n + s h²) J, the blocks of
  // S⁻¹ + UᵀΔ⁻¹U for U = [J C, K]: (J C)ᵀΔ⁻¹(J C) = Cᵀ (JᵀΔ⁻¹J) C, whose 1.5·npar³ multiply-adds cost less
  // than J C and its Gram matrix (1.5·nobs·npar²); 1 + C Q with Q = Jᵀ diag(κ/Δ) J (symmetric, so the
  // lower block is 1 + Q C); and Jᵀ diag(κ²/Δ − w² v_n − s h²) J − diag(cw), where X's Gram term and
  // KᵀΔ⁻¹K cancel per bin before any product: κ²/Δ − w² v_n − s h² = −v_n s (w d − h e)²/Δ, written
  // so (no cancellation; exactly 0 without bin-by-bin statistics, s = 0).
  const VectorXd a = delta.cwiseInverse();
  const VectorXd kappa = t.w.cwiseProduct(vn).cwiseProduct(e) + d.cwiseProduct(s).cwiseProduct(h);
  const VectorXd ka = kappa.cwiseProduct(a);
  const VectorXd rest = -(
      vn.cwiseProduct(s).cwiseProduct((t.w.cwiseProduct(d) - h.cwiseProduct(e)).cwiseAbs2()).cwiseProduct(a));
  MatrixXd M(2 * p, 2 * p);
  M.topLeftCorner(p, p) = prod.symmetric_product_transpose(Ct, prod.product(Ct, prod.weighted_gram(J, a)));
  M.bottomLeftCorner(p, p) = prod.product(prod.weighted_gram(J, ka), *t.C);
  M.topRightCorner(p, p) = M.bottomLeftCorner(p, p).transpose();
  M.topRightCorner(p, p).diagonal().array() += 1.0;
  M.bottomLeftCorner(p, p).diagonal().array() += 1.0;
  M.bottomRightCorner(p, p) = prod.weighted_gram(J, rest);
  M.bottomRightCorner(p, p).diagonal() -= t.cw;
  const VectorXd ar = a.cwiseProduct(r);
  VectorXd z(2 * p);
  z.head(p) = Ct * (J.transpose() * ar);
  z.tail(p) = J.transpose() * kappa.cwiseProduct(ar);
  return r.dot(ar) - z.dot(prod.lu_solve(std::move(M), z));
}

bool linear_chi2_low_rank_pays(int64_t nobs, int64_t npar, bool postfit) {
  // Flops, roughly: the dense V costs its products with J (and postfit those of the nobs × nobs R_n) and
  // an LDLT; the low-rank form UᵀΔ⁻¹U and a k × k LU with k = npar or 2·npar.
  const double n = static_cast<double>(nobs), p = static_cast<double>(npar);
  const double k = postfit ? 2.0 * p : p;
  const double dense =
      2.0 * n * n * p + n * n * n / 3.0 + (postfit ? 2.0 * n * n * p + 2.0 * n * n * n : 0.0);
  const double low_rank = 2.0 * n * k * k + 3.0 * k * k * k + (postfit ? 4.0 * n * p * p : 0.0);
  return low_rank < dense;
}

MatrixXd middle(const DiagonalPlusLowRank& V) {
  const int64_t p = V.X.rows();
  MatrixXd S = MatrixXd::Zero(2 * p, 2 * p);
  S.topLeftCorner(p, p) = V.X;
  S.topRightCorner(p, p).setIdentity();
  S.bottomLeftCorner(p, p).setIdentity();
  return S;
}

VectorXd diagonal(const DiagonalPlusLowRank& V) {
  return V.delta + ((V.U * middle(V)).array() * V.U.array()).rowwise().sum().matrix();
}

double quadratic_form(DiagonalPlusLowRank V, const VectorXd& r, ParallelProducts& prod) {
  // With Ũ = Δ^{-1/2} U (U scaled in place) and r̃ = Δ^{-1/2} r: rᵀΔ⁻¹r = r̃ᵀr̃, z = Ũᵀr̃, G = ŨᵀŨ.
  const VectorXd scale = V.delta.cwiseSqrt().cwiseInverse();
  V.U = scale.asDiagonal() * V.U;
  const VectorXd rs = r.cwiseProduct(scale);
  const VectorXd z = V.U.transpose() * rs;
  MatrixXd G = prod.weighted_gram(V.U, VectorXd());
  // S⁻¹ + G with S⁻¹ = [[0, 1], [1, −X]]: symmetric and indefinite, solved by LU with pivoting.
  const int64_t p = V.X.rows();
  G.topRightCorner(p, p).diagonal().array() += 1.0;
  G.bottomLeftCorner(p, p).diagonal().array() += 1.0;
  G.bottomRightCorner(p, p) -= V.X;
  return rs.squaredNorm() - z.dot(prod.lu_solve(std::move(G), z));
}

void dense_chi2(const MatrixXd& V, const VectorXd& r, int64_t ndf_reduction, double& chi2, int64_t& ndf) {
  // A bin with zero variance and zero residual (zero yield for every process and no data) is
  // not a measurement: it is left out of the chi2 and of ndf, where a singular V would
  // otherwise give 0/0. A zero-variance bin with a nonzero residual is infinitely improbable.
  std::vector<int64_t> keep;
  bool impossible = false;
  for (int64_t b = 0; b < r.size(); ++b) {
    if (V(b, b) != 0.0)
      keep.push_back(b);
    else if (r(b) != 0.0)
      impossible = true;
  }
  const auto nk = static_cast<int64_t>(keep.size());
  // The kept bins' V and r: V itself when all are kept (no second bins × bins matrix).
  VectorXd r_kept;
  MatrixXd V_kept;
  if (nk < r.size()) {
    r_kept.resize(nk);
    V_kept.resize(nk, nk);
    for (int64_t i = 0; i < nk; ++i) {
      r_kept(i) = r(keep[i]);
      for (int64_t j = 0; j < nk; ++j) V_kept(i, j) = V(keep[i], keep[j]);
    }
  }
  const VectorXd& rk = nk < r.size() ? r_kept : r;
  const MatrixXd& Vk = nk < r.size() ? V_kept : V;
  double quad = 0.0;
  if (nk && ndf_reduction > 0) {
    // A mapping that reduces the ndf (Normalize) has a singular V by construction: rabbit's _chi2
    // then takes the pseudo-inverse (tf.linalg.pinv: singular values at or below
    // 10·n·ε·max dropped), here from V's eigen-decomposition since V is symmetric.
    Eigen::SelfAdjointEigenSolver<MatrixXd> eig(Vk);
    const VectorXd& lam = eig.eigenvalues();
    const double cut =
        10.0 * static_cast<double>(nk) * std::numeric_limits<double>::epsilon() * lam.cwiseAbs().maxCoeff();
    const VectorXd z = eig.eigenvectors().transpose() * rk;
    for (int64_t i = 0; i < nk; ++i)
      if (std::abs(lam(i)) > cut) quad += z(i) * z(i) / lam(i);
  } else if (nk) {
    quad = rk.dot(Eigen::LDLT<MatrixXd>(Vk).solve(rk));
  }
  chi2 = impossible ? std::numeric_limits<double>::infinity() : quad;
  ndf = nk - ndf_reduction;
}

}  // namespace rabbit::postfit
