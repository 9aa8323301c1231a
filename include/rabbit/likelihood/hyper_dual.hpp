#pragma once
// Second-order forward-mode numbers over K variables. The per-bin Barlow–Beeston profiles are
// closed forms of a few per-bin sums (lite: A, Z; full: S, T, ...); evaluating those closed
// forms on HyperDual<K> yields their exact first and second derivatives, i.e. exactly what
// rabbit's autodiff of the same closed forms produces, including the degenerate cases of
// docs/likelihood.md "BB derivative corner cases" where the closed form is not a true profile.
#include <cmath>

#include <Eigen/Core>

namespace rabbit::cpu {

template <int K>
struct HyperDual {
  double v = 0.0;
  double g[K] = {};
  double h[K][K] = {};

  HyperDual() = default;
  HyperDual(double c) : v(c) {}  // NOLINT: constants convert implicitly
  static HyperDual variable(double value, int index) {
    HyperDual r(value);
    r.g[index] = 1.0;
    return r;
  }
};

inline double value_of(double x) { return x; }
template <int K>
double value_of(const HyperDual<K>& x) { return x.v; }

/// Treat x as a constant (rabbit's stop-gradient), used for the β-held-fixed variants.
inline double detach(double x) { return x; }
template <int K>
HyperDual<K> detach(const HyperDual<K>& x) { return HyperDual<K>(x.v); }

template <int K>
HyperDual<K> chain(const HyperDual<K>& x, double f, double d1, double d2) {
  HyperDual<K> r(f);
  for (int i = 0; i < K; ++i) r.g[i] = d1 * x.g[i];
  for (int i = 0; i < K; ++i)
    for (int j = 0; j < K; ++j) r.h[i][j] = d1 * x.h[i][j] + d2 * x.g[i] * x.g[j];
  return r;
}

template <int K>
HyperDual<K> operator+(const HyperDual<K>& a, const HyperDual<K>& b) {
  HyperDual<K> r(a.v + b.v);
  for (int i = 0; i < K; ++i) r.g[i] = a.g[i] + b.g[i];
  for (int i = 0; i < K; ++i)
    for (int j = 0; j < K; ++j) r.h[i][j] = a.h[i][j] + b.h[i][j];
  return r;
}
template <int K>
HyperDual<K> operator-(const HyperDual<K>& a) {
  HyperDual<K> r(-a.v);
  for (int i = 0; i < K; ++i) r.g[i] = -a.g[i];
  for (int i = 0; i < K; ++i)
    for (int j = 0; j < K; ++j) r.h[i][j] = -a.h[i][j];
  return r;
}
template <int K>
HyperDual<K> operator-(const HyperDual<K>& a, const HyperDual<K>& b) { return a + (-b); }
template <int K>
HyperDual<K> operator*(const HyperDual<K>& a, const HyperDual<K>& b) {
  HyperDual<K> r(a.v * b.v);
  for (int i = 0; i < K; ++i) r.g[i] = a.g[i] * b.v + a.v * b.g[i];
  for (int i = 0; i < K; ++i)
    for (int j = 0; j < K; ++j)
      r.h[i][j] = a.h[i][j] * b.v + a.v * b.h[i][j] + a.g[i] * b.g[j] + b.g[i] * a.g[j];
  return r;
}
template <int K>
HyperDual<K> reciprocal(const HyperDual<K>& x) {
  const double inv = 1.0 / x.v;
  return chain(x, inv, -inv * inv, 2.0 * inv * inv * inv);
}
template <int K>
HyperDual<K> operator/(const HyperDual<K>& a, const HyperDual<K>& b) { return a * reciprocal(b); }
template <int K>
HyperDual<K> operator+(const HyperDual<K>& a, double b) { return a + HyperDual<K>(b); }
template <int K>
HyperDual<K> operator+(double a, const HyperDual<K>& b) { return HyperDual<K>(a) + b; }
template <int K>
HyperDual<K> operator-(const HyperDual<K>& a, double b) { return a - HyperDual<K>(b); }
template <int K>
HyperDual<K> operator-(double a, const HyperDual<K>& b) { return HyperDual<K>(a) - b; }
template <int K>
HyperDual<K> operator*(const HyperDual<K>& a, double b) {
  HyperDual<K> r(a.v * b);
  for (int i = 0; i < K; ++i) r.g[i] = a.g[i] * b;
  for (int i = 0; i < K; ++i)
    for (int j = 0; j < K; ++j) r.h[i][j] = a.h[i][j] * b;
  return r;
}
template <int K>
HyperDual<K> operator*(double a, const HyperDual<K>& b) { return b * a; }
template <int K>
HyperDual<K> operator/(const HyperDual<K>& a, double b) { return a * (1.0 / b); }
template <int K>
HyperDual<K> operator/(double a, const HyperDual<K>& b) { return a * reciprocal(b); }

template <int K>
HyperDual<K> sqrt(const HyperDual<K>& x) {
  const double s = std::sqrt(x.v);
  return chain(x, s, 0.5 / s, -0.25 / (s * x.v));
}
template <int K>
HyperDual<K> log(const HyperDual<K>& x) {
  return chain(x, std::log(x.v), 1.0 / x.v, -1.0 / (x.v * x.v));
}

/// Second-order forward-mode number over a run-time number of variables (dense gradient and
/// Hessian), for the rare per-bin composites whose variables are all the bin's entries.
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
inline double value_of(const DynHyperDual& x) { return x.v; }
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
inline DynHyperDual operator-(const DynHyperDual& a) { return dchain(a, -a.v, -1.0, 0.0); }
inline DynHyperDual operator-(const DynHyperDual& a, const DynHyperDual& b) { return a + (-b); }
inline DynHyperDual operator*(const DynHyperDual& a, const DynHyperDual& b) {
  DynHyperDual r;
  r.v = a.v * b.v;
  r.g = a.g * b.v + a.v * b.g;
  r.h = a.h * b.v + a.v * b.h + a.g * b.g.transpose() + b.g * a.g.transpose();
  return r;
}
inline DynHyperDual operator+(const DynHyperDual& a, double b) { return dchain(a, a.v + b, 1.0, 0.0); }
inline DynHyperDual operator+(double a, const DynHyperDual& b) { return b + a; }
inline DynHyperDual operator-(const DynHyperDual& a, double b) { return a + (-b); }
inline DynHyperDual operator-(double a, const DynHyperDual& b) { return (-b) + a; }
inline DynHyperDual operator*(const DynHyperDual& a, double b) { return dchain(a, a.v * b, b, 0.0); }
inline DynHyperDual operator*(double a, const DynHyperDual& b) { return b * a; }
inline DynHyperDual reciprocal(const DynHyperDual& x) {
  const double inv = 1.0 / x.v;
  return dchain(x, inv, -inv * inv, 2.0 * inv * inv * inv);
}
inline DynHyperDual operator/(const DynHyperDual& a, const DynHyperDual& b) { return a * reciprocal(b); }
inline DynHyperDual operator/(const DynHyperDual& a, double b) { return a * (1.0 / b); }
inline DynHyperDual operator/(double a, const DynHyperDual& b) { return a * reciprocal(b); }
inline DynHyperDual exp(const DynHyperDual& x) {
  const double e = std::exp(x.v);
  return dchain(x, e, e, e);
}
inline DynHyperDual log(const DynHyperDual& x) { return dchain(x, std::log(x.v), 1.0 / x.v, -1.0 / (x.v * x.v)); }

/// g(x) for a scalar function given by its value and first two derivatives at value_of(x), for
/// every number type: lets a formula compute its value in a numerically better form than the one
/// its derivatives would be traced through.
inline double unary(double, double f, double, double) { return f; }
template <int K>
HyperDual<K> unary(const HyperDual<K>& x, double f, double d1, double d2) { return chain(x, f, d1, d2); }
inline DynHyperDual unary(const DynHyperDual& x, double f, double d1, double d2) { return dchain(x, f, d1, d2); }

}  // namespace rabbit::cpu
