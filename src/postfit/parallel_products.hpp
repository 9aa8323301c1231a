#pragma once
// The large dense products of the histogram uncertainties and the linear chi2 on the fit's threads
// (docs/architecture.md "Threads": one threading model). Eigen would run them on OpenMP teams of its own,
// whose threads busy-wait (Eigen's GEMM synchronisation and libgomp's barrier) while the other threads of a
// shared machine wait for a CPU. Here a WorkerPool of the fit's thread count takes fixed row blocks of the
// result from a queue, each a single-threaded Eigen product. Internal to src/postfit (histograms.cpp).
#include <Eigen/Core>
#include <cstdint>
#include <functional>
#include <memory>

#include "rabbit/core/worker_pool.hpp"

namespace rabbit::postfit {

class ParallelProducts {
 public:
  /// `threads` ≥ 1; Eigen's own threads are off (Eigen::setNbThreads(1)) until the destructor.
  explicit ParallelProducts(int threads);
  ~ParallelProducts();
  ParallelProducts(const ParallelProducts&) = delete;
  ParallelProducts& operator=(const ParallelProducts&) = delete;

  /// A B, Aᵀ B and A Bᵀ. The row blocks are multiples of Eigen's register block and do not depend on the
  /// thread count, whose single-threaded GEMM blocks the depth by the depth alone: the values are the same
  /// bits for every thread count.
  Eigen::MatrixXd product(const Eigen::MatrixXd& A, const Eigen::MatrixXd& B);
  Eigen::MatrixXd transpose_product(const Eigen::MatrixXd& A, const Eigen::MatrixXd& B);
  Eigen::MatrixXd product_transpose(const Eigen::MatrixXd& A, const Eigen::MatrixXd& B);
  /// A Bᵀ where it is symmetric (A = B D or B = A D, D symmetric): the blocks on and below the diagonal,
  /// mirrored (half the flops).
  Eigen::MatrixXd symmetric_product_transpose(const Eigen::MatrixXd& A, const Eigen::MatrixXd& B);
  /// Aᵀ diag(d) A (Aᵀ A for an empty d), symmetric: the blocks on and below the diagonal, mirrored (half
  /// the flops).
  Eigen::MatrixXd weighted_gram(const Eigen::MatrixXd& A, const Eigen::VectorXd& d);

  /// X C for the parameter covariance C. A diagonal C (the prefit one without external constraints) scales
  /// X's columns, O(rows·npar) instead of rows·npar², with the values of the product: its sums add exact
  /// zeros, and + 0.0 gives its +0 where a scaled entry is −0.
  Eigen::MatrixXd times_covariance(const Eigen::MatrixXd& X, const Eigen::MatrixXd& C);
  /// diag(X C Xᵀ), one row block at a time, so that no rows × npar product is held whole (the inclusive and
  /// per-process variances: X has up to nbins·nproc rows). A diagonal C scales columns (row sums of
  /// (X C) ∘ X, the values of times_covariance). With at least 2·npar rows, C = S L Lᵀ Sᵀ, L the Cholesky
  /// factor of C on its non-zero diagonal (S selects those parameters; one of zero variance has a zero row),
  /// gives the squared row norms of X S L, a triangular product of half the multiply-adds of X C, plus the
  /// npar³/3 of the factor (docs/output-format.md "Cost of the chi2 with many bins"). Otherwise, and where
  /// C is not of that form (not exactly symmetric, a zero diagonal with its row not zero, not positive
  /// definite on the rest), (X C) ∘ X summed by rows.
  /// `rows` (when > 0) stands for X's rows in that choice, for X a piece of a larger matrix; the factor is
  /// kept for the next call with the same C (compared entry by entry).
  Eigen::VectorXd row_quadratic_forms(const Eigen::MatrixXd& X, const Eigen::MatrixXd& C, int64_t rows = 0);

  /// y with M y = b, by an LU factorisation with partial (row) pivoting of M, which is overwritten: panels
  /// of 64 columns factorised on the calling thread, each panel's row swaps, triangular solve and rank-64
  /// update of the trailing columns in column blocks on the pool. The values do not depend on the thread
  /// count; they equal Eigen's PartialPivLU's to round-off (its trailing updates run on one thread here).
  Eigen::VectorXd lu_solve(Eigen::MatrixXd M, const Eigen::VectorXd& b);

  /// block(r0, nr) for every block [r0, r0 + nr) of 192 of the m indices, on the pool when `work`
  /// multiply-adds are worth it; with `heaviest_last`, blocks are taken from the last, so that the largest
  /// ones (those of a lower triangle) do not end on one thread while the others wait.
  void for_row_blocks(int64_t m, double work, const std::function<void(int64_t r0, int64_t nr)>& block,
                      bool heaviest_last = false);

 private:
  // lower: only the columns up to each row block's end (a symmetric result's lower part)
  template <class Lhs, class Rhs>
  Eigen::MatrixXd rows_in_blocks(const Lhs& A, const Rhs& B, bool lower = false);

  int threads_;
  int eigen_threads_;  // Eigen::nbThreads() before, restored by the destructor
  struct Factor;       // row_quadratic_forms' last Cholesky factor and its C
  std::unique_ptr<Factor> factor_;
  std::unique_ptr<WorkerPool> pool_;
};

}  // namespace rabbit::postfit
