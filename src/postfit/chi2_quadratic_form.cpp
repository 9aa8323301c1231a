#include "chi2_quadratic_form.hpp"

#include <Eigen/Cholesky>
#include <Eigen/Eigenvalues>
#include <Eigen/LU>
#include <cmath>
#include <limits>
#include <vector>

namespace rabbit::postfit {

using Eigen::MatrixXd;
using Eigen::VectorXd;

DiagonalPlusLowRank linear_chi2_low_rank(const LinearChi2Terms& t, ParallelProducts& prod) {
  const MatrixXd& J = *t.J;
  const int64_t nobs = J.rows(), npar = J.cols();
  const VectorXd beta_var = t.beta_var.size() ? t.beta_var : VectorXd::Zero(nobs);
  DiagonalPlusLowRank V;
  if (!t.postfit) {
    V.delta = beta_var + t.data_var;
    V.U = J;
    V.S = *t.C;
    return V;
  }
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
  if (V.S.size() || !V.X.size()) return V.S;
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
  if (!V.S.size()) {
    // S⁻¹ + G with S⁻¹ = [[0, 1], [1, −X]]: symmetric and indefinite, solved by LU with pivoting.
    const int64_t p = V.X.rows();
    G.topRightCorner(p, p).diagonal().array() += 1.0;
    G.bottomLeftCorner(p, p).diagonal().array() += 1.0;
    G.bottomRightCorner(p, p) -= V.X;
    return rs.squaredNorm() - z.dot(Eigen::PartialPivLU<MatrixXd>(G).solve(z));
  }
  MatrixXd M = prod.product(V.S, G);
  M.diagonal().array() += 1.0;
  const VectorXd y = Eigen::PartialPivLU<MatrixXd>(M).solve(V.S * z);
  return rs.squaredNorm() - z.dot(y);
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
