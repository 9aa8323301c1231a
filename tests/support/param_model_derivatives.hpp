#pragma once
// Finite-difference checks of a param model's bin-range API (include/rabbit/model/param_model.hpp): the
// sparse Jacobian, the vector-Jacobian and Jacobian-vector products and the curvature product.
#include <gtest/gtest.h>

#include "rabbit/model/param_model.hpp"
#include "support/finite_differences.hpp"

namespace rabbit::test {

using Eigen::MatrixXd;
using Eigen::VectorXd;

/// The rates as one vector, rows b·P + p.
inline VectorXd flat_rates(const ParamModel& m, const VectorXd& pi, int64_t b0, int64_t b1) {
  MatrixXd r;
  m.bin_rates(pi, b0, b1, r);
  VectorXd out(r.size());
  for (int64_t b = 0; b < r.rows(); ++b) out.segment(b * r.cols(), r.cols()) = r.row(b).transpose();
  return out;
}

/// Jacobian, vjp, jvp and curvature product against central differences over bins [b0, b1).
inline void check_param_model_derivatives(const ParamModel& m, const VectorXd& pi, int64_t b0, int64_t b1) {
  const int64_t nb = b1 - b0, M = m.nparams();
  MatrixXd r0;
  m.bin_rates(pi, b0, b1, r0);
  const int64_t P = r0.cols();
  const double h = 1e-6;
  const MatrixXd J = MatrixXd(m.rate_jacobian(pi, b0, b1));
  ASSERT_EQ(J.rows(), nb * P);
  ASSERT_EQ(J.cols(), M);
  const MatrixXd J_fd =
      test::central_jacobian([&](const VectorXd& x) { return flat_rates(m, x, b0, b1); }, pi, h);
  EXPECT_LT((J - J_fd).cwiseAbs().maxCoeff(), 1e-7);

  MatrixXd w(nb, P);
  for (int64_t b = 0; b < nb; ++b)
    for (int64_t p = 0; p < P; ++p) w(b, p) = 0.3 + 0.2 * b - 0.4 * p + 0.05 * b * p;
  VectorXd wflat(nb * P);
  for (int64_t b = 0; b < nb; ++b) wflat.segment(b * P, P) = w.row(b).transpose();
  VectorXd g;
  m.rates_vjp(pi, b0, b1, w, g);
  EXPECT_LT((g - J_fd.transpose() * wflat).cwiseAbs().maxCoeff(), 1e-6);

  MatrixXd v(M, 2);
  for (int64_t i = 0; i < M; ++i) {
    v(i, 0) = 0.5 + 0.1 * i;
    v(i, 1) = 1.0 - 0.3 * (i % 4);
  }
  MatrixXd dr;
  m.rates_jvp(pi, b0, b1, v, dr);
  EXPECT_LT((dr - J_fd * v).cwiseAbs().maxCoeff(), 1e-6);

  // curvature product: the derivative of the vjp along each direction
  const MatrixXd cv = m.curvature_product(pi, b0, b1, w, v);
  ASSERT_EQ(cv.rows(), M);
  for (int64_t j = 0; j < 2; ++j) {
    const VectorXd fd = test::central_partial(
        [&](const VectorXd& t) {
          VectorXd gg;
          m.rates_vjp(pi + t[0] * v.col(j), b0, b1, w, gg);
          return gg;
        },
        VectorXd::Zero(1), 0, h);
    EXPECT_LT((cv.col(j) - fd).cwiseAbs().maxCoeff(), 1e-6) << "direction " << j;
  }
}

}  // namespace rabbit::test
