#pragma once
// One evaluation of a fitter at a point, as the pipeline tests (fused_pass_test.cpp,
// pipeline_scale_test.cpp) compare the emulated CUDA shard's with the CPU shard's: value, gradient,
// HVP, the Hessian and profiled β, to 1e-10 of each output's scale (scaled_max_error).
#include <gtest/gtest.h>

#include <Eigen/Core>
#include <algorithm>
#include <cmath>

#include "rabbit/fit/fitter.hpp"
#include "support/model_fixtures.hpp"

namespace rabbit::fixtures {

struct Evaluation {
  double f = 0;
  Eigen::VectorXd g, beta;
  Eigen::MatrixXd hv, h, h_fixed;  // h_fixed: empty unless EvaluationCalls::fixed_beta_hessian
};

/// The calls evaluate() makes besides the HVP along V, the Hessian with β profiled and profiled β.
struct EvaluationCalls {
  /// value_grad first, giving f and g (the fused pass; the HVP is then at the last point), instead of
  /// taking them from the HVP call.
  bool loss_grad_first = false;
  /// The Hessian with β held fixed as well (h_fixed).
  bool fixed_beta_hessian = false;
};

/// In this order: value_grad (with loss_grad_first), the HVP along V, the Hessian with β profiled,
/// the Hessian with β fixed (with fixed_beta_hessian), profiled β.
inline Evaluation evaluate(Fitter& fitter, const Eigen::VectorXd& x, const Eigen::MatrixXd& V,
                           EvaluationCalls calls = {}) {
  Evaluation e;
  Eigen::VectorXd g;
  if (calls.loss_grad_first) {
    e.f = fitter.value_grad(x, e.g);
    fitter.value_grad_hvp(x, V, g, e.hv);
  } else {
    e.f = fitter.value_grad_hvp(x, V, e.g, e.hv);
  }
  fitter.value_grad_hess(x, g, e.h, true);
  if (calls.fixed_beta_hessian) fitter.value_grad_hess(x, g, e.h_fixed, false);
  e.beta = fitter.profiled_beta(x);
  return e;
}

inline void expect_close(const Evaluation& got, const Evaluation& ref) {
  ASSERT_TRUE(std::isfinite(ref.f));
  EXPECT_NEAR(got.f, ref.f, 1e-10 * std::max(1.0, std::abs(ref.f)));
  EXPECT_LE(scaled_max_error(got.g, ref.g), 1e-10);
  EXPECT_LE(scaled_max_error(got.hv, ref.hv), 1e-10);
  EXPECT_LE(scaled_max_error(got.h, ref.h), 1e-10);
  EXPECT_LE(scaled_max_error(got.h_fixed, ref.h_fixed), 1e-10);
  EXPECT_LE(scaled_max_error(got.beta, ref.beta), 1e-10);
}

}  // namespace rabbit::fixtures
