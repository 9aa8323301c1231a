#include "rabbit/minimize/spd_inverse.hpp"

#include <Eigen/Cholesky>

namespace rabbit {
namespace {

using Eigen::Index;
using Eigen::MatrixXd;

// Below this order the recursions stop and the blocks are done directly (small triangular solves
// and products, where Eigen's kernels do not gain from further splitting).
constexpr Index kLeafOrder = 64;

// X ← X⁻¹ for the lower-triangular X (its strict upper part is not touched). With
// X = [X11 0; X21 X22]: X⁻¹ = [X11⁻¹ 0; −X22⁻¹ X21 X11⁻¹  X22⁻¹] (LAPACK's trtri).
void invert_lower(Eigen::Ref<MatrixXd> X) {
  const Index n = X.rows();
  if (n <= kLeafOrder) {
    MatrixXd inv = MatrixXd::Identity(n, n);
    X.triangularView<Eigen::Lower>().solveInPlace(inv);
    X.triangularView<Eigen::Lower>() = inv;
    return;
  }
  const Index h = n / 2;
  auto X11 = X.topLeftCorner(h, h);
  auto X21 = X.bottomLeftCorner(n - h, h);
  auto X22 = X.bottomRightCorner(n - h, n - h);
  invert_lower(X11);
  MatrixXd t = X21 * X11.triangularView<Eigen::Lower>();
  X22.triangularView<Eigen::Lower>().solveInPlace(t);
  X21 = -t;
  invert_lower(X22);
}

// lower(X) ← lower(Xᵀ X) for the lower-triangular X. With X = [X11 0; X21 X22]:
// XᵀX = [X11ᵀX11 + X21ᵀX21, ·; X22ᵀX21, X22ᵀX22] (LAPACK's lauum).
void lower_gram(Eigen::Ref<MatrixXd> X) {
  const Index n = X.rows();
  if (n <= kLeafOrder) {
    const MatrixXd T = X.triangularView<Eigen::Lower>();
    const MatrixXd G = T.transpose() * T;
    X.triangularView<Eigen::Lower>() = G;
    return;
  }
  const Index h = n / 2;
  auto X11 = X.topLeftCorner(h, h);
  auto X21 = X.bottomLeftCorner(n - h, h);
  auto X22 = X.bottomRightCorner(n - h, n - h);
  lower_gram(X11);
  X11.selfadjointView<Eigen::Lower>().rankUpdate(X21.transpose(), 1.0);
  MatrixXd t = X22.triangularView<Eigen::Lower>().transpose() * X21;
  X21 = t;
  lower_gram(X22);
}

}  // namespace

bool spd_inverse(const MatrixXd& A, MatrixXd& inverse, Eigen::VectorXd* whiten) {
  inverse = A;
  // the factorisation Eigen::LLT runs (blocked, lower), so L is the one an LLT of A gives
  if (Eigen::internal::llt_inplace<double, Eigen::Lower>::blocked(inverse) >= 0) return false;
  if (!inverse.diagonal().allFinite()) return false;
  if (whiten) inverse.triangularView<Eigen::Lower>().solveInPlace(*whiten);
  invert_lower(inverse);
  lower_gram(inverse);
  inverse.triangularView<Eigen::StrictlyUpper>() = inverse.transpose();
  return true;
}

}  // namespace rabbit
