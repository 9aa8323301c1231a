#pragma once
// The reduced data term ℓ(ν) of one bin and its first two derivatives in ν (docs/likelihood.md "The
// NLL and its data term", "Passes"), for Poisson and χ² (the covariance fit couples bins and is
// evaluated by the CPU backend as a whole). Templates on the scalar: double, HyperDual<K>,
// DynHyperDual.
#include "rabbit/likelihood/hyper_dual.hpp"
#include "rabbit/model/model_options.hpp"

namespace rabbit::likelihood {

/// Observation of one bin: n, the χ² variance v and ln ň (0 for n = 0).
struct BinObservation {
  double n = 0.0;
  double v = 1.0;
  double log_n = 0.0;
};

/// ℓ(ν): χ² ½(ν − n)²/v; Poisson ν − n − n·log(ν/n), ν for n = 0.
template <class T>
RABBIT_HD T data_term(const T& nu, const BinObservation& obs, DataLikelihood lik) {
  if (lik == DataLikelihood::chisq) {
    const T r = nu - obs.n;
    return 0.5 * (r * r) / obs.v;
  }
  if (obs.n == 0.0) return nu;
  // ν − n − n·log(ν/n) as r − n·log1p(r/n) with r = ν − n (docs/likelihood.md "Passes"): the form
  // −n(log ν − log n) + ν − n subtracts two logs of size log n, and its rounding times n made f
  // noisy at ~1e-10 for counts of 1e5, more than the last Newton steps change it.
  const double v = value_of(nu), n = obs.n, r = v - n;
  return unary(nu, r - n * log1p(r / n), r / v, n / (v * v));
}

/// ℓ'(ν).
template <class T>
RABBIT_HD T data_first(const T& nu, const BinObservation& o, DataLikelihood lik) {
  if (lik == DataLikelihood::chisq) return (nu - o.n) / o.v;
  return o.n == 0.0 ? constant_like(nu, 1.0) : 1.0 - o.n / nu;
}

/// ℓ''(ν).
template <class T>
RABBIT_HD T data_second(const T& nu, const BinObservation& o, DataLikelihood lik) {
  if (lik == DataLikelihood::chisq) return constant_like(nu, 1.0 / o.v);
  return o.n == 0.0 ? constant_like(nu, 0.0) : o.n / (nu * nu);
}

}  // namespace rabbit::likelihood
