#pragma once
// Second-order forward-mode number over a run-time number of variables (dense gradient and Hessian,
// Eigen, host only), for the rare per-bin composites whose variables are all the bin's entries
// (docs/likelihood.md "Corner cases chosen": gamma + full with masked beta0 != 1).
#include <Eigen/Core>

#include "rabbit/likelihood/hyper_dual.hpp"

namespace rabbit::likelihood {

struct DynHyperDual {
  double v = 0.0;
  Eigen::VectorXd g;
  Eigen::MatrixXd h;
  DynHyperDual() = default;
  DynHyperDual(double c, int k) : v(c), g(Eigen::VectorXd::Zero(k)), h(Eigen::MatrixXd::Zero(k, k)) {}
  static DynHyperDual variable(double value, int index, int k) {
    DynHyperDual r(value, k);
    r.g[index] = 1.0;
    return r;
  }
};
inline double value_of(const DynHyperDual& x) {
  return x.v;
}
inline DynHyperDual dchain(const DynHyperDual& x, double f, double d1, double d2) {
  DynHyperDual r;
  r.v = f;
  r.g = d1 * x.g;
  r.h = d1 * x.h + d2 * x.g * x.g.transpose();
  return r;
}
inline DynHyperDual operator+(const DynHyperDual& a, const DynHyperDual& b) {
  DynHyperDual r;
  r.v = a.v + b.v;
  r.g = a.g + b.g;
  r.h = a.h + b.h;
  return r;
}
inline DynHyperDual operator-(const DynHyperDual& a) {
  return dchain(a, -a.v, -1.0, 0.0);
}
inline DynHyperDual operator-(const DynHyperDual& a, const DynHyperDual& b) {
  return a + (-b);
}
inline DynHyperDual operator*(const DynHyperDual& a, const DynHyperDual& b) {
  DynHyperDual r;
  r.v = a.v * b.v;
  r.g = a.g * b.v + a.v * b.g;
  r.h = a.h * b.v + a.v * b.h + a.g * b.g.transpose() + b.g * a.g.transpose();
  return r;
}
inline DynHyperDual operator+(const DynHyperDual& a, double b) {
  return dchain(a, a.v + b, 1.0, 0.0);
}
inline DynHyperDual operator+(double a, const DynHyperDual& b) {
  return b + a;
}
inline DynHyperDual operator-(const DynHyperDual& a, double b) {
  return a + (-b);
}
inline DynHyperDual operator-(double a, const DynHyperDual& b) {
  return (-b) + a;
}
inline DynHyperDual operator*(const DynHyperDual& a, double b) {
  return dchain(a, a.v * b, b, 0.0);
}
inline DynHyperDual operator*(double a, const DynHyperDual& b) {
  return b * a;
}
inline DynHyperDual reciprocal(const DynHyperDual& x) {
  const double inv = 1.0 / x.v;
  return dchain(x, inv, -inv * inv, 2.0 * inv * inv * inv);
}
inline DynHyperDual operator/(const DynHyperDual& a, const DynHyperDual& b) {
  return a * reciprocal(b);
}
inline DynHyperDual operator/(const DynHyperDual& a, double b) {
  return a * (1.0 / b);
}
inline DynHyperDual operator/(double a, const DynHyperDual& b) {
  return a * reciprocal(b);
}
inline DynHyperDual exp(const DynHyperDual& x) {
  const double e = exp(x.v);
  return dchain(x, e, e, e);
}
inline DynHyperDual log(const DynHyperDual& x) {
  return dchain(x, log(x.v), 1.0 / x.v, -1.0 / (x.v * x.v));
}

inline DynHyperDual unary(const DynHyperDual& x, double f, double d1, double d2) {
  return dchain(x, f, d1, d2);
}
inline DynHyperDual constant_like(const DynHyperDual& x, double c) {
  return DynHyperDual(c, static_cast<int>(x.g.size()));
}

}  // namespace rabbit::likelihood
