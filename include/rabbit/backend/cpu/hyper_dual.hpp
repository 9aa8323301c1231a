#pragma once
// Second-order forward-mode numbers over K variables. The per-bin Barlow–Beeston profiles are
// closed forms of a few per-bin sums (lite: A, Z; full: S, T, ...); evaluating those closed
// forms on HyperDual<K> yields their exact first and second derivatives, i.e. exactly what
// rabbit's autodiff of the same closed forms produces, including the degenerate cases of
// likelihood.md §6.8.3 where the closed form is not a true profile.
#include <cmath>

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

}  // namespace rabbit::cpu
