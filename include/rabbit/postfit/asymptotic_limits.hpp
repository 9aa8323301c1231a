#pragma once
// Asymptotic CLs upper limits (docs/output-format.md "Asymptotic limits"; docs/user-guide.md
// "rabbit_limit"): the Asimov test-statistic level of each expected band and the observed limit in the
// Gaussian approximation. Pure functions of numbers, so they are tested on known values.
#include <array>

namespace rabbit::postfit {

/// The CL_b quantiles of the expected band: −2σ, −1σ, median, +1σ, +2σ (rabbit's clb_list).
inline constexpr std::array<double, 5> kExpectedClb = {0.025, 0.16, 0.5, 0.84, 0.975};

/// Standard normal CDF Φ and its inverse (bisection to the last bit).
double normal_cdf(double z);
double normal_quantile(double p);

/// q_{μ,A} that the expected limit at CLs = cls and band quantile clb reaches:
/// (Φ⁻¹(clb) − Φ⁻¹(cls·clb))².
double asimov_q_level(double cls, double clb);

/// The observed upper limit in the Gaussian approximation: the root r > max(xobs, 0) of
/// Φ(−q_μ(r)) − cls·Φ(q_A(r) − q_μ(r)) with q_A = r/xerr and q_μ = (r − xobs)/xobs_err, or for
/// xobs < 0 the modified q_μ = sqrt(((r − xobs)/xobs_err)² − (xobs/xobs_err)²). NaN when there is
/// no sign change (non-finite or non-positive uncertainties).
double gaussian_observed_limit(double xobs, double xobs_err, double xerr, double cls);

}  // namespace rabbit::postfit
