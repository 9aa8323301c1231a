#include "parallel_products.hpp"

#include <Eigen/Cholesky>
#include <algorithm>
#include <atomic>
#include <optional>
#include <vector>

namespace rabbit::postfit {

using Eigen::MatrixXd;

namespace {

// Rows per block: a multiple of 24, the rows of Eigen's widest register block for double with AVX-512
// (3 packets of 8), so that every row of a block is computed by the same kernel as in one product.
constexpr int64_t kBlockRows = 192;
// Below this many multiply-adds a product is not worth the threads.
constexpr double kMinParallelWork = 4.0e6;

}  // namespace

namespace {

// C = S L Lᵀ Sᵀ with S the columns of C's non-zero diagonal entries and L lower triangular; empty where C
// is not exactly symmetric, a row of zero diagonal has another entry, or C is not positive definite on the
// others (Eigen's LLT, blocked, reads one triangle).
struct CholeskyOnSupport {
  std::vector<int64_t> index;
  MatrixXd L;
};

std::optional<CholeskyOnSupport> cholesky_on_support(const MatrixXd& C) {
  CholeskyOnSupport f;
  const int64_t n = C.rows();
  if (C != C.transpose()) return std::nullopt;
  for (int64_t i = 0; i < n; ++i) {
    if (C(i, i) != 0.0) {
      f.index.push_back(i);
      continue;
    }
    for (int64_t j = 0; j < n; ++j)
      if (C(i, j) != 0.0 || C(j, i) != 0.0) return std::nullopt;
  }
  const auto k = static_cast<int64_t>(f.index.size());
  MatrixXd Cs(k, k);
  for (int64_t j = 0; j < k; ++j)
    for (int64_t i = 0; i < k; ++i) Cs(i, j) = C(f.index[i], f.index[j]);
  Eigen::LLT<MatrixXd> llt(Cs);
  if (llt.info() != Eigen::Success) return std::nullopt;
  f.L = llt.matrixL();
  return f;
}

}  // namespace

struct ParallelProducts::Factor {
  Eigen::MatrixXd C;
  std::optional<CholeskyOnSupport> f;
};

ParallelProducts::ParallelProducts(int threads)
    : threads_(std::max(threads, 1)), eigen_threads_(Eigen::nbThreads()) {
  Eigen::setNbThreads(1);
  if (threads_ > 1) pool_ = std::make_unique<WorkerPool>(threads_);
}

ParallelProducts::~ParallelProducts() {
  pool_.reset();
  Eigen::setNbThreads(eigen_threads_);
}

void ParallelProducts::for_row_blocks(int64_t m, double work,
                                      const std::function<void(int64_t r0, int64_t nr)>& block,
                                      bool heaviest_last) {
  const int64_t blocks = (m + kBlockRows - 1) / kBlockRows;
  auto run = [&](int64_t i) {
    const int64_t r0 = (heaviest_last ? blocks - 1 - i : i) * kBlockRows;
    block(r0, std::min(kBlockRows, m - r0));
  };
  if (!pool_ || blocks < 2 || work < kMinParallelWork) {
    for (int64_t i = 0; i < blocks; ++i) run(i);
    return;
  }
  std::atomic<int64_t> next{0};
  pool_->share(threads_, [&](int) {
    for (int64_t i = next.fetch_add(1); i < blocks; i = next.fetch_add(1)) run(i);
  });
}

template <class Lhs, class Rhs>
MatrixXd ParallelProducts::rows_in_blocks(const Lhs& A, const Rhs& B, bool lower) {
  const int64_t m = A.rows();
  MatrixXd out(m, B.cols());
  const double work = static_cast<double>(m) * static_cast<double>(B.rows()) * static_cast<double>(B.cols()) /
                      (lower ? 2.0 : 1.0);
  for_row_blocks(
      m, work,
      [&](int64_t r0, int64_t nr) {
        if (lower)
          out.block(r0, 0, nr, r0 + nr).noalias() = A.middleRows(r0, nr) * B.leftCols(r0 + nr);
        else
          out.middleRows(r0, nr).noalias() = A.middleRows(r0, nr) * B;
      },
      lower);
  return out;
}

MatrixXd ParallelProducts::product(const MatrixXd& A, const MatrixXd& B) {
  return rows_in_blocks(A, B);
}

MatrixXd ParallelProducts::transpose_product(const MatrixXd& A, const MatrixXd& B) {
  return rows_in_blocks(A.transpose(), B);
}

MatrixXd ParallelProducts::product_transpose(const MatrixXd& A, const MatrixXd& B) {
  return rows_in_blocks(A, B.transpose());
}

namespace {

MatrixXd mirror_lower(MatrixXd out) {
  for (int64_t j = 1; j < out.cols(); ++j)
    for (int64_t i = 0; i < j; ++i) out(i, j) = out(j, i);
  return out;
}

}  // namespace

MatrixXd ParallelProducts::symmetric_product_transpose(const MatrixXd& A, const MatrixXd& B) {
  return mirror_lower(rows_in_blocks(A, B.transpose(), true));
}

MatrixXd ParallelProducts::weighted_gram(const MatrixXd& A, const Eigen::VectorXd& d) {
  if (!d.size()) return mirror_lower(rows_in_blocks(A.transpose(), A, true));
  // Row block [r0, r0 + nr) of the lower triangle is (diag(d) A_blk)ᵀ A[:, :r0 + nr] with A_blk its nr
  // columns: each block scales only its own columns (rows × 192), never a whole scaled copy of A, whose
  // fresh pages cost more than the scaling where page faults are slow (docs/benchmarks.md).
  const int64_t m = A.cols();
  MatrixXd out(m, m);
  const double work = static_cast<double>(A.rows()) * static_cast<double>(m) * static_cast<double>(m) / 2.0;
  for_row_blocks(
      m, work,
      [&](int64_t r0, int64_t nr) {
        const MatrixXd scaled = d.asDiagonal() * A.middleCols(r0, nr);
        out.block(r0, 0, nr, r0 + nr).noalias() = scaled.transpose() * A.leftCols(r0 + nr);
      },
      true);
  return mirror_lower(std::move(out));
}

namespace {

bool is_diagonal(const MatrixXd& C) {
  for (int64_t j = 0; j < C.cols(); ++j)
    for (int64_t i = 0; i < C.rows(); ++i)
      if (i != j && C(i, j) != 0.0) return false;
  return true;
}

}  // namespace

MatrixXd ParallelProducts::times_covariance(const MatrixXd& X, const MatrixXd& C) {
  if (!is_diagonal(C)) return product(X, C);
  return (X * C.diagonal().asDiagonal()).array() + 0.0;
}

Eigen::VectorXd ParallelProducts::row_quadratic_forms(const MatrixXd& X, const MatrixXd& C, int64_t rows) {
  const bool diagonal = is_diagonal(C);
  // The factor (npar³/3 multiply-adds, on this thread) pays where it saves more: rows·npar²/2 of X C.
  const bool factor = !diagonal && (rows > 0 ? rows : X.rows()) >= 2 * C.rows();
  if (factor &&
      !(factor_ && factor_->C.rows() == C.rows() && factor_->C.cols() == C.cols() && factor_->C == C))
    factor_ = std::make_unique<Factor>(Factor{C, cholesky_on_support(C)});
  const CholeskyOnSupport* f = factor && factor_->f ? &*factor_->f : nullptr;
  Eigen::VectorXd v(X.rows());
  const double work = static_cast<double>(X.rows()) * static_cast<double>(C.rows()) *
                      (diagonal ? 1.0 : static_cast<double>(C.cols()) / (f ? 2.0 : 1.0));
  for_row_blocks(X.rows(), work, [&](int64_t r0, int64_t nr) {
    if (f) {
      const auto k = static_cast<int64_t>(f->index.size());
      MatrixXd XS(nr, k), XL(nr, k);
      for (int64_t j = 0; j < k; ++j) XS.col(j) = X.col(f->index[j]).segment(r0, nr);
      XL.noalias() = XS * f->L.triangularView<Eigen::Lower>();
      v.segment(r0, nr) = XL.rowwise().squaredNorm();
      return;
    }
    MatrixXd XC(nr, C.cols());
    if (diagonal)
      XC = (X.middleRows(r0, nr) * C.diagonal().asDiagonal()).array() + 0.0;
    else
      XC.noalias() = X.middleRows(r0, nr) * C;
    v.segment(r0, nr) = (XC.array() * X.middleRows(r0, nr).array()).rowwise().sum();
  });
  return v;
}

Eigen::VectorXd ParallelProducts::lu_solve(MatrixXd M, const Eigen::VectorXd& b) {
  // Right-looking blocked LU (the order of LAPACK's getrf): per panel of kPanel columns, the panel is
  // factorised with row swaps inside it; then every column block right of it takes the panel's swaps,
  // U12 = L11⁻¹ A12 and A22 −= L21 U12, independently of the other blocks; the columns left of the panel
  // take its swaps last, so that L ends in pivoted row order.
  constexpr int64_t kPanel = 64;
  const int64_t n = M.rows();
  std::vector<int64_t> piv(static_cast<size_t>(n));
  for (int64_t k0 = 0; k0 < n; k0 += kPanel) {
    const int64_t kb = std::min(kPanel, n - k0), k1 = k0 + kb;
    for (int64_t j = k0; j < k1; ++j) {
      int64_t p = 0;
      M.col(j).tail(n - j).cwiseAbs().maxCoeff(&p);
      p += j;
      piv[static_cast<size_t>(j)] = p;
      if (p != j) M.block(j, k0, 1, kb).swap(M.block(p, k0, 1, kb));
      const double d = M(j, j);
      if (d == 0.0) continue;  // singular: left as Eigen leaves it (infinities in the solution)
      M.col(j).tail(n - j - 1) /= d;
      M.block(j + 1, j + 1, n - j - 1, k1 - j - 1).noalias() -=
          M.col(j).tail(n - j - 1) * M.row(j).segment(j + 1, k1 - j - 1);
    }
    const auto swap_rows = [&](int64_t c0, int64_t nc) {
      for (int64_t j = k0; j < k1; ++j)
        if (const int64_t p = piv[static_cast<size_t>(j)]; p != j)
          M.block(j, c0, 1, nc).swap(M.block(p, c0, 1, nc));
    };
    const int64_t right = n - k1;
    if (right > 0) {
      const double work = static_cast<double>(n - k1) * static_cast<double>(kb) * static_cast<double>(right);
      for_row_blocks(right, work, [&](int64_t c0, int64_t nc) {
        const int64_t c = k1 + c0;
        swap_rows(c, nc);
        auto U12 = M.block(k0, c, kb, nc);
        M.block(k0, k0, kb, kb).triangularView<Eigen::UnitLower>().solveInPlace(U12);
        M.block(k1, c, n - k1, nc).noalias() -= M.block(k1, k0, n - k1, kb) * U12;
      });
    }
    if (k0 > 0) swap_rows(0, k0);
  }
  Eigen::VectorXd y = b;
  for (int64_t j = 0; j < n; ++j) std::swap(y(j), y(piv[static_cast<size_t>(j)]));
  M.triangularView<Eigen::UnitLower>().solveInPlace(y);
  M.triangularView<Eigen::Upper>().solveInPlace(y);
  return y;
}

}  // namespace rabbit::postfit
