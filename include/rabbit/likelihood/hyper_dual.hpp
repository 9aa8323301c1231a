#pragma once
// Second-order forward-mode numbers over K variables. The per-bin Barlow–Beeston profiles are
// closed forms of a few per-bin sums (lite: A, Z; full: S, T, ...); evaluating those closed
// forms on HyperDual<K> yields their exact first and second derivatives, i.e. exactly what
// rabbit's autodiff of the same closed forms produces, including the degenerate cases of
// docs/likelihood.md "BB derivative corner cases" where the closed form is not a true profile.
// Plain data without Eigen, RABBIT_HD: the CUDA kernels evaluate the same closed forms on it.
#include "rabbit/likelihood/device.hpp"

namespace rabbit::likelihood {

template <int K>
struct HyperDual {
  double v = 0.0;
  double g[K] = {};
  double h[K][K] = {};

  HyperDual() = default;
  RABBIT_HD HyperDual(double c) : v(c) {}  // NOLINT: constants convert implicitly
  RABBIT_HD static HyperDual variable(double value, int index) {
    HyperDual r(value);
    r.g[index] = 1.0;
    return r;
  }
};

RABBIT_HD inline double value_of(double x) {
  return x;
}
template <int K>
RABBIT_HD double value_of(const HyperDual<K>& x) {
  return x.v;
}

/// Treat x as a constant (rabbit's stop-gradient), used for the β-held-fixed variants.
RABBIT_HD inline double detach(double x) {
  return x;
}
template <int K>
RABBIT_HD HyperDual<K> detach(const HyperDual<K>& x) {
  return HyperDual<K>(x.v);
}

template <int K>
RABBIT_HD HyperDual<K> chain(const HyperDual<K>& x, double f, double d1, double d2) {
  HyperDual<K> r(f);
  for (int i = 0; i < K; ++i) r.g[i] = d1 * x.g[i];
  for (int i = 0; i < K; ++i)
    for (int j = 0; j < K; ++j) r.h[i][j] = d1 * x.h[i][j] + d2 * x.g[i] * x.g[j];
  return r;
}

template <int K>
RABBIT_HD HyperDual<K> operator+(const HyperDual<K>& a, const HyperDual<K>& b) {
  HyperDual<K> r(a.v + b.v);
  for (int i = 0; i < K; ++i) r.g[i] = a.g[i] + b.g[i];
  for (int i = 0; i < K; ++i)
    for (int j = 0; j < K; ++j) r.h[i][j] = a.h[i][j] + b.h[i][j];
  return r;
}
template <int K>
RABBIT_HD HyperDual<K> operator-(const HyperDual<K>& a) {
  HyperDual<K> r(-a.v);
  for (int i = 0; i < K; ++i) r.g[i] = -a.g[i];
  for (int i = 0; i < K; ++i)
    for (int j = 0; j < K; ++j) r.h[i][j] = -a.h[i][j];
  return r;
}
template <int K>
RABBIT_HD HyperDual<K> operator-(const HyperDual<K>& a, const HyperDual<K>& b) {
  return a + (-b);
}
template <int K>
RABBIT_HD HyperDual<K> operator*(const HyperDual<K>& a, const HyperDual<K>& b) {
  HyperDual<K> r(a.v * b.v);
  for (int i = 0; i < K; ++i) r.g[i] = a.g[i] * b.v + a.v * b.g[i];
  for (int i = 0; i < K; ++i)
    for (int j = 0; j < K; ++j)
      r.h[i][j] = a.h[i][j] * b.v + a.v * b.h[i][j] + a.g[i] * b.g[j] + b.g[i] * a.g[j];
  return r;
}
template <int K>
RABBIT_HD HyperDual<K> reciprocal(const HyperDual<K>& x) {
  const double inv = 1.0 / x.v;
  return chain(x, inv, -inv * inv, 2.0 * inv * inv * inv);
}
template <int K>
RABBIT_HD HyperDual<K> operator/(const HyperDual<K>& a, const HyperDual<K>& b) {
  return a * reciprocal(b);
}
template <int K>
RABBIT_HD HyperDual<K> operator+(const HyperDual<K>& a, double b) {
  return a + HyperDual<K>(b);
}
template <int K>
RABBIT_HD HyperDual<K> operator+(double a, const HyperDual<K>& b) {
  return HyperDual<K>(a) + b;
}
template <int K>
RABBIT_HD HyperDual<K> operator-(const HyperDual<K>& a, double b) {
  return a - HyperDual<K>(b);
}
template <int K>
RABBIT_HD HyperDual<K> operator-(double a, const HyperDual<K>& b) {
  return HyperDual<K>(a) - b;
}
template <int K>
RABBIT_HD HyperDual<K> operator*(const HyperDual<K>& a, double b) {
  HyperDual<K> r(a.v * b);
  for (int i = 0; i < K; ++i) r.g[i] = a.g[i] * b;
  for (int i = 0; i < K; ++i)
    for (int j = 0; j < K; ++j) r.h[i][j] = a.h[i][j] * b;
  return r;
}
template <int K>
RABBIT_HD HyperDual<K> operator*(double a, const HyperDual<K>& b) {
  return b * a;
}
template <int K>
RABBIT_HD HyperDual<K> operator/(const HyperDual<K>& a, double b) {
  return a * (1.0 / b);
}
template <int K>
RABBIT_HD HyperDual<K> operator/(double a, const HyperDual<K>& b) {
  return a * reciprocal(b);
}

template <int K>
RABBIT_HD HyperDual<K> sqrt(const HyperDual<K>& x) {
  const double s = sqrt(x.v);
  return chain(x, s, 0.5 / s, -0.25 / (s * x.v));
}
template <int K>
RABBIT_HD HyperDual<K> log(const HyperDual<K>& x) {
  return chain(x, log(x.v), 1.0 / x.v, -1.0 / (x.v * x.v));
}

/// g(x) for a scalar function given by its value and first two derivatives at value_of(x), for
/// every number type: lets a formula compute its value in a numerically better form than the one
/// its derivatives would be traced through.
RABBIT_HD inline double unary(double, double f, double, double) {
  return f;
}
template <int K>
RABBIT_HD HyperDual<K> unary(const HyperDual<K>& x, double f, double d1, double d2) {
  return chain(x, f, d1, d2);
}

/// The constant c as a number of x's type (for the dynamic type: of x's size), so that one formula
/// can start sums and write constants for every scalar type.
RABBIT_HD inline double constant_like(double, double c) {
  return c;
}
template <int K>
RABBIT_HD HyperDual<K> constant_like(const HyperDual<K>&, double c) {
  return HyperDual<K>(c);
}

}  // namespace rabbit::likelihood
