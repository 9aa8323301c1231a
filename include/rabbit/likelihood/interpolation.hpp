#pragma once
// The smooth asymmetric interpolation h(θ) = θ·α(θ) and its first two derivatives
// (docs/likelihood.md "Asymmetric interpolation"), once for both backends.
#include "rabbit/likelihood/device.hpp"

namespace rabbit::likelihood {

/// h(θ) in rabbit's operation order, h'(θ) and h''(θ); |θ| ≥ ½ is the linear region (h = |θ|).
RABBIT_HD inline void interpolation(double theta, double& h, double& hp, double& hpp) {
  const double twox = 2.0 * theta;
  const double twox2 = twox * twox;
  double alpha = 0.125 * twox * (twox2 * (3.0 * twox2 - 10.0) + 15.0);
  alpha = min_of(max_of(alpha, -1.0), 1.0);
  h = theta * alpha;
  if (fabs(theta) < 0.5) {
    const double t2 = theta * theta;
    hp = theta * (72.0 * t2 * t2 - 40.0 * t2 + 7.5);
    hpp = 360.0 * t2 * t2 - 120.0 * t2 + 7.5;
  } else {
    hp = theta > 0 ? 1.0 : -1.0;
    hpp = 0.0;
  }
}

}  // namespace rabbit::likelihood
