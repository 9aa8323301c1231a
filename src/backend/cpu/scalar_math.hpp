#pragma once
// The scalar functions the CPU backend evaluates per systematic and per bin: the asymmetric
// interpolation h(θ) with its derivatives, and the data term's first and second derivatives in ν.
// Kept in one private header so that the host+device versions shared with the CUDA backend can
// replace them in one place.
#include <algorithm>
#include <cmath>

#include "rabbit/backend/cpu/bin_profile.hpp"

namespace rabbit::cpu_detail {

// Smooth asymmetric interpolation h(θ) = θ·α(θ) and its derivatives (docs/likelihood.md "Asymmetric interpolation").
inline void interpolation(double theta, double& h, double& hp, double& hpp) {
  const double twox = 2.0 * theta;
  const double twox2 = twox * twox;
  double alpha = 0.125 * twox * (twox2 * (3.0 * twox2 - 10.0) + 15.0);
  alpha = std::min(std::max(alpha, -1.0), 1.0);
  h = theta * alpha;
  if (std::abs(theta) < 0.5) {
    const double t2 = theta * theta;
    hp = theta * (72.0 * t2 * t2 - 40.0 * t2 + 7.5);
    hpp = 360.0 * t2 * t2 - 120.0 * t2 + 7.5;
  } else {
    hp = theta > 0 ? 1.0 : -1.0;
    hpp = 0.0;
  }
}

// ∂ℓ/∂ν and ∂²ℓ/∂ν² of the data term of one bin (docs/likelihood.md "The NLL and its data term").
inline double data_first(double nu, const cpu::BinObservation& o, DataLikelihood lik) {
  if (lik == DataLikelihood::chisq) return (nu - o.n) / o.v;
  return o.n == 0.0 ? 1.0 : 1.0 - o.n / nu;
}
inline double data_second(double nu, const cpu::BinObservation& o, DataLikelihood lik) {
  if (lik == DataLikelihood::chisq) return 1.0 / o.v;
  return o.n == 0.0 ? 0.0 : o.n / (nu * nu);
}

}  // namespace rabbit::cpu_detail
