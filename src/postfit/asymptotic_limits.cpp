// docs/output-format.md "Asymptotic limits": the numbers behind rabbit_limit's Gaussian limits.
#include "rabbit/postfit/asymptotic_limits.hpp"

#include <cmath>
#include <limits>

namespace rabbit::postfit {

double normal_cdf(double z) {
  return 0.5 * std::erfc(-z / std::sqrt(2.0));
}

double normal_quantile(double p) {
  if (!(p > 0.0 && p < 1.0)) return std::numeric_limits<double>::quiet_NaN();
  double lo = -40.0, hi = 40.0;
  // Φ is monotone: bisection converges to the last representable bit in < 200 halvings.
  for (int it = 0; it < 200 && hi - lo > 0.0; ++it) {
    const double mid = 0.5 * (lo + hi);
    if (mid == lo || mid == hi) break;
    (normal_cdf(mid) < p ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

double asimov_q_level(double cls, double clb) {
  const double d = normal_quantile(clb) - normal_quantile(cls * clb);
  return d * d;
}

double gaussian_observed_limit(double xobs, double xobs_err, double xerr, double cls) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  if (!(xobs_err > 0.0) || !(xerr > 0.0) || !std::isfinite(xobs)) return nan;
  auto qmu = [&](double r) {
    const double d = (r - xobs) / xobs_err;
    if (xobs >= 0.0) return d;
    const double a = xobs / xobs_err;
    return std::sqrt(std::max(0.0, d * d - a * a));  // modified statistic for xobs < 0
  };
  auto f = [&](double r) {
    const double q = qmu(r);
    return normal_cdf(-q) - cls * normal_cdf(r / xerr - q);
  };
  // f > 0 at r = max(xobs, 0) for cls < 1/2; step outwards until it changes sign, then bisect.
  double lo = std::max(xobs, 0.0);
  double flo = f(lo);
  const double step = std::max(xobs_err, xerr);
  double hi = lo + step;
  double fhi = f(hi);
  for (int k = 0; k < 200 && flo * fhi > 0.0; ++k) {
    lo = hi;
    flo = fhi;
    hi += step * (k + 2);
    fhi = f(hi);
  }
  if (!(flo * fhi <= 0.0)) return nan;
  for (int it = 0; it < 200; ++it) {
    const double mid = 0.5 * (lo + hi);
    if (mid == lo || mid == hi) break;
    const double fm = f(mid);
    if ((fm > 0.0) == (flo > 0.0)) {
      lo = mid;
      flo = fm;
    } else {
      hi = mid;
    }
  }
  return 0.5 * (lo + hi);
}

}  // namespace rabbit::postfit
