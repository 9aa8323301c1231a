#pragma once
// What the minimizers and the postfit code see: a smooth function of the parameter vector with
// its gradient, Hessian-vector products and (directly or assembled from HVPs) dense Hessian.
// Every call takes its point explicitly, so an HVP is always taken at the caller's own point
// (docs/minimizers.md "Entry point"); implementations may cache per-point state keyed by x.
#include <Eigen/Core>
#include <cstdint>

namespace rabbit {

class Objective {
 public:
  virtual ~Objective() = default;

  /// Length of the parameter vector.
  virtual int64_t size() const = 0;

  virtual double value(const Eigen::VectorXd& x) = 0;

  /// Returns f(x) and writes ∇f(x) into grad (resized as needed).
  virtual double value_grad(const Eigen::VectorXd& x, Eigen::VectorXd& grad) = 0;

  /// Returns f(x), writes ∇f(x) into grad and H(x)·V into HV, column by column (V is n × k).
  virtual double value_grad_hvp(const Eigen::VectorXd& x, const Eigen::MatrixXd& V, Eigen::VectorXd& grad,
                                Eigen::MatrixXd& HV) = 0;

  /// H(x)·V without the value and gradient. The default calls value_grad_hvp; backends that can
  /// skip the gradient override it (the Krylov solvers call this once per inner step).
  virtual void hvp(const Eigen::VectorXd& x, const Eigen::MatrixXd& V, Eigen::MatrixXd& HV);

  /// Returns f(x), writes ∇f(x) and the dense Hessian. The default assembles it from batched
  /// HVPs (docs/minimizers.md "Dense Hessian from HVPs"); backends with a direct Hessian override it.
  virtual double value_grad_hess(const Eigen::VectorXd& x, Eigen::VectorXd& grad, Eigen::MatrixXd& hess);

  /// Batch width used by the default value_grad_hess (--hvpBatch).
  void set_hvp_batch(int64_t batch) { hvp_batch_ = batch; }
  int64_t hvp_batch() const { return hvp_batch_; }

 protected:
  int64_t hvp_batch_ = 256;
};

}  // namespace rabbit
