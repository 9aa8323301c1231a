#include "parallel_products.hpp"

#include <algorithm>
#include <atomic>

namespace rabbit::postfit {

using Eigen::MatrixXd;

namespace {

// Rows per block: a multiple of 24, the rows of Eigen's widest register block for double with AVX-512
// (3 packets of 8), so that every row of a block is computed by the same kernel as in one product.
constexpr int64_t kBlockRows = 192;
// Below this many multiply-adds a product is not worth the threads.
constexpr double kMinParallelWork = 4.0e6;

}  // namespace

ParallelProducts::ParallelProducts(int threads)
    : threads_(std::max(threads, 1)), eigen_threads_(Eigen::nbThreads()) {
  Eigen::setNbThreads(1);
  if (threads_ > 1) pool_ = std::make_unique<WorkerPool>(threads_);
}

ParallelProducts::~ParallelProducts() {
  pool_.reset();
  Eigen::setNbThreads(eigen_threads_);
}

template <class Lhs, class Rhs>
MatrixXd ParallelProducts::rows_in_blocks(const Lhs& A, const Rhs& B, bool lower) {
  const int64_t m = A.rows();
  MatrixXd out(m, B.cols());
  const int64_t blocks = (m + kBlockRows - 1) / kBlockRows;
  auto block = [&](int64_t i) {
    const int64_t r0 = i * kBlockRows, nr = std::min(kBlockRows, m - r0);
    if (lower)
      out.block(r0, 0, nr, r0 + nr).noalias() = A.middleRows(r0, nr) * B.leftCols(r0 + nr);
    else
      out.middleRows(r0, nr).noalias() = A.middleRows(r0, nr) * B;
  };
  const double work = static_cast<double>(m) * static_cast<double>(B.rows()) * static_cast<double>(B.cols()) /
                      (lower ? 2.0 : 1.0);
  if (!pool_ || blocks < 2 || work < kMinParallelWork) {
    for (int64_t i = 0; i < blocks; ++i) block(i);
    return out;
  }
  std::atomic<int64_t> next{0};
  pool_->share(threads_, [&](int) {
    for (int64_t i = next.fetch_add(1); i < blocks; i = next.fetch_add(1)) block(i);
  });
  return out;
}

MatrixXd ParallelProducts::product(const MatrixXd& A, const MatrixXd& B) { return rows_in_blocks(A, B); }

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
  return mirror_lower(d.size() ? rows_in_blocks(A.transpose(), MatrixXd(d.asDiagonal() * A), true)
                               : rows_in_blocks(A.transpose(), A, true));
}

MatrixXd ParallelProducts::times_covariance(const MatrixXd& X, const MatrixXd& C) {
  const int64_t n = C.rows();
  bool diagonal = true;
  for (int64_t j = 0; j < n && diagonal; ++j)
    for (int64_t i = 0; i < n; ++i)
      if (i != j && C(i, j) != 0.0) {
        diagonal = false;
        break;
      }
  if (!diagonal) return product(X, C);
  return (X * C.diagonal().asDiagonal()).array() + 0.0;
}

}  // namespace rabbit::postfit
