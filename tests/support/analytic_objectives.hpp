#pragma once
// Analytic test objectives with exact derivatives, counting their calls.
#include <Eigen/Dense>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>

#include "rabbit/minimize/objective.hpp"

namespace rabbit::test {

/// Objective with an analytic Hessian; derived classes give value, gradient and Hessian.
class AnalyticObjective : public Objective {
 public:
  int64_t value_calls = 0, grad_calls = 0, hvp_columns = 0, hess_calls = 0;
  virtual Eigen::MatrixXd hessian(const Eigen::VectorXd& x) const = 0;
  virtual double f(const Eigen::VectorXd& x) const = 0;
  virtual Eigen::VectorXd gradient(const Eigen::VectorXd& x) const = 0;

  double value(const Eigen::VectorXd& x) override {
    ++value_calls;
    return f(x);
  }
  double value_grad(const Eigen::VectorXd& x, Eigen::VectorXd& grad) override {
    ++grad_calls;
    grad = gradient(x);
    return f(x);
  }
  double value_grad_hvp(const Eigen::VectorXd& x, const Eigen::MatrixXd& V, Eigen::VectorXd& grad,
                        Eigen::MatrixXd& HV) override {
    ++grad_calls;
    hvp_columns += V.cols();
    grad = gradient(x);
    HV = hessian(x) * V;
    return f(x);
  }
  void hvp(const Eigen::VectorXd& x, const Eigen::MatrixXd& V, Eigen::MatrixXd& HV) override {
    hvp_columns += V.cols();
    HV = hessian(x) * V;
  }
};

/// Direct dense Hessian (overrides the batched-HVP default).
template <class Base>
class WithDirectHessian : public Base {
 public:
  using Base::Base;
  double value_grad_hess(const Eigen::VectorXd& x, Eigen::VectorXd& grad, Eigen::MatrixXd& hess) override {
    ++this->hess_calls;
    grad = this->gradient(x);
    hess = this->hessian(x);
    return this->f(x);
  }
};

class Rosenbrock : public AnalyticObjective {
 public:
  explicit Rosenbrock(int64_t n) : n_(n) {}
  int64_t size() const override { return n_; }
  double f(const Eigen::VectorXd& x) const override {
    double s = 0;
    for (int64_t i = 0; i + 1 < n_; ++i) {
      const double a = x[i + 1] - x[i] * x[i], b = 1 - x[i];
      s += 100 * a * a + b * b;
    }
    return s;
  }
  Eigen::VectorXd gradient(const Eigen::VectorXd& x) const override {
    Eigen::VectorXd g = Eigen::VectorXd::Zero(n_);
    for (int64_t i = 0; i + 1 < n_; ++i) {
      const double a = x[i + 1] - x[i] * x[i];
      g[i] += -400 * x[i] * a - 2 * (1 - x[i]);
      g[i + 1] += 200 * a;
    }
    return g;
  }
  Eigen::MatrixXd hessian(const Eigen::VectorXd& x) const override {
    Eigen::MatrixXd H = Eigen::MatrixXd::Zero(n_, n_);
    for (int64_t i = 0; i + 1 < n_; ++i) {
      H(i, i) += 1200 * x[i] * x[i] - 400 * x[i + 1] + 2;
      H(i, i + 1) += -400 * x[i];
      H(i + 1, i) += -400 * x[i];
      H(i + 1, i + 1) += 200;
    }
    return H;
  }

 private:
  int64_t n_;
};

/// f = ½ xᵀAx + bᵀx, optionally NaN outside the box max|x_i| < nan_box.
class Quadratic : public AnalyticObjective {
 public:
  Quadratic(Eigen::MatrixXd A, Eigen::VectorXd b, double nan_box = std::numeric_limits<double>::infinity())
      : A_(std::move(A)), b_(std::move(b)), nan_box_(nan_box) {
    x_min_ = -A_.ldlt().solve(b_);
    f_min_ = 0.5 * b_.dot(x_min_);
  }
  int64_t size() const override { return b_.size(); }
  // Written about the minimum (f_min + ½dᵀAd), so that values near it carry no cancellation.
  double f(const Eigen::VectorXd& x) const override {
    if (x.cwiseAbs().maxCoeff() >= nan_box_) return std::numeric_limits<double>::quiet_NaN();
    const Eigen::VectorXd d = x - x_min_;
    return f_min_ + 0.5 * d.dot(A_ * d);
  }
  Eigen::VectorXd gradient(const Eigen::VectorXd& x) const override { return A_ * x + b_; }
  Eigen::MatrixXd hessian(const Eigen::VectorXd&) const override { return A_; }
  Eigen::VectorXd minimum() const { return x_min_; }
  /// Shifts f by a constant so that its minimum value is `value` (round-off of f scales with it).
  void set_minimum_value(double value) { f_min_ = value; }

 private:
  Eigen::MatrixXd A_;
  Eigen::VectorXd b_;
  double nan_box_;
  Eigen::VectorXd x_min_;
  double f_min_ = 0.0;
};

/// Random orthogonal matrix (QR of a Gaussian matrix).
inline Eigen::MatrixXd random_orthogonal(int64_t n, std::mt19937& rng) {
  std::normal_distribution<double> normal;
  Eigen::MatrixXd G(n, n);
  for (int64_t i = 0; i < n * n; ++i) G.data()[i] = normal(rng);
  Eigen::HouseholderQR<Eigen::MatrixXd> qr(G);
  return qr.householderQ() * Eigen::MatrixXd::Identity(n, n);
}

/// Symmetric matrix Q diag(eigenvalues) Qᵀ.
inline Eigen::MatrixXd with_spectrum(const Eigen::VectorXd& eigenvalues, std::mt19937& rng) {
  const Eigen::MatrixXd Q = random_orthogonal(eigenvalues.size(), rng);
  Eigen::MatrixXd A = Q * eigenvalues.asDiagonal() * Q.transpose();
  return 0.5 * (A + A.transpose());
}

}  // namespace rabbit::test
