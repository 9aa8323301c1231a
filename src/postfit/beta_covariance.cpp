// The bin-by-bin part of the postfit histogram covariance (beta_covariance.hpp).
#include "beta_covariance.hpp"

namespace rabbit::postfit {

using Eigen::MatrixXd;
using Eigen::VectorXd;

double BetaCovariance::entry_row_sum(int64_t e) const {
  const int64_t b = e / P, p = e % P;
  return bbr.c(e) + dd(b) * bbr.dN(b, p) * bbr.dN.row(b).sum() + penalty_row(e);
}

double BetaCovariance::full_entry_var(int64_t b, int64_t p) const {
  const double u = bbr.dN(b, p);
  if (u == 0.0) return 0.0;
  const double row = bbr.c(bbr.entry(b, p)) + dd(b) * u * bbr.dN.row(b).sum() + penalty_row(bbr.entry(b, p));
  return divides(row, bbr.entry(b, p)) ? u * u / row : 0.0;
}

double BetaCovariance::incl_cov(int64_t b, int64_t bp, bool exact_block) const {
  if (!bb) return 0.0;
  if (Hinv.size() && betavar_partials.size() && (b >= nobs || bp >= nobs)) {
    // covariance fit with beta variations: rabbit's pdexpdbeta H⁻¹ pdexpdbetaᵀ with the masked
    // bins' rows from beta_yield_partials (cross terms to the observed entries)
    auto row = [&](int64_t bin) -> VectorXd {
      if (bin >= nobs) return betavar_partials.row(bin).transpose();
      VectorXd u = VectorXd::Zero(Hinv.rows());
      for (int64_t p = 0; p < P; ++p) u(bbr.entry(bin, p)) += bbr.dN(bin, p);
      return u;
    };
    return row(b).dot(Hinv * row(bp));
  }
  if (Hinv.size()) {
    double s = 0.0;
    for (int64_t p = 0; p < P; ++p)
      for (int64_t pp = 0; pp < P; ++pp) {
        if (bbr.dN(b, p) == 0.0 || bbr.dN(bp, pp) == 0.0) continue;
        s += bbr.dN(b, p) * Hinv(bbr.entry(b, p), bbr.entry(bp, pp)) * bbr.dN(bp, pp);
      }
    // Lite entries are shared by the processes of a bin; the double loop above counts each
    // pair of (entry, entry) once per process pair, which is the product of the bin sums.
    return s;
  }
  if (b != bp) return 0.0;
  if (!bbr.full) {
    double u = bbr.dN.row(b).sum();
    double H = bbr.c(b) + dd(b) * u * u + (exact_block ? 0.0 : penalty_row(b));
    return H > 0.0 || (!exact_block && divides(H, b)) ? u * u / H : 0.0;
  }
  // Full mode, as rabbit computes it: each entry's variance is u_e² over the row sum of H_ββ
  // (rabbit takes the gradient of ∂L/∂β with respect to all β at once and treats it as the
  // diagonal), not the exact inverse of the bin's block; see docs/differences-from-rabbit.md.
  double s = 0.0;
  if (exact_block) {
    for (int64_t p = 0; p < P; ++p) {
      const double u = bbr.dN(b, p);
      if (u != 0.0 && bbr.c(bbr.entry(b, p)) > 0.0) s += u * u / bbr.c(bbr.entry(b, p));
    }
    return s / (1.0 + dd(b) * s);
  }
  if (betavar_partials.size() && b >= nobs) {
    for (int64_t e = 0; e < betavar_partials.cols(); ++e) {
      const double u = betavar_partials(b, e);
      if (u == 0.0) continue;
      const double row = entry_row_sum(e);
      if (row > 0.0) s += u * u / row;
    }
    return s;
  }
  for (int64_t p = 0; p < P; ++p) s += full_entry_var(b, p);
  return s;
}

double BetaCovariance::proc_var(int64_t b, int64_t p) const {
  if (!bb) return 0.0;
  const double u = bbr.dN(b, p);
  if (u == 0.0) return 0.0;
  const int64_t e = bbr.entry(b, p);
  if (Hinv.size()) return u * u * Hinv(e, e);
  if (!bbr.full) {
    double ub = bbr.dN.row(b).sum();
    double H = bbr.c(b) + dd(b) * ub * ub + penalty_row(b);
    return divides(H, b) ? u * u / H : 0.0;
  }
  return full_entry_var(b, p);
}

MatrixXd BetaCovariance::rows(int64_t nb) const {
  MatrixXd R = MatrixXd::Zero(nb, Hinv.rows());
  for (int64_t b = 0; b < nb; ++b) {
    if (betavar_partials.size() && b >= nobs)
      R.row(b) = betavar_partials.row(b);
    else
      for (int64_t p = 0; p < P; ++p) R(b, bbr.entry(b, p)) += bbr.dN(b, p);
  }
  return R;
}

VectorXd BetaCovariance::diagonal(int64_t nb, bool exact_block) const {
  VectorXd s(nb);
  for (int64_t b = 0; b < nb; ++b) s(b) = incl_cov(b, b, exact_block);
  return s;
}

MatrixXd BetaCovariance::mapped_left(const MappingJacobian& Ar, bool exact_block) const {
  if (Hinv.size()) {
    const MatrixXd R = rows(Ar.cols());
    return MatrixXd(Ar * R) * Hinv * R.transpose();
  }
  return MatrixXd(Ar) * diagonal(Ar.cols(), exact_block).asDiagonal();
}

VectorXd BetaCovariance::mapped_var(const MappingJacobian& Ar) const {
  if (Hinv.size()) {
    const MatrixXd W = Ar * rows(Ar.cols());
    return ((W * Hinv).array() * W.array()).rowwise().sum();
  }
  return Ar.cwiseAbs2() * diagonal(Ar.cols(), false);
}

void BetaCovariance::process_terms(const MappingJacobian& A, MappingJacobian& G, VectorXd& cbeta) const {
  const int64_t ne = bbr.beta.size();
  G = A * process_beta_rows(bbr);
  if (Hinv.size()) return;
  cbeta = VectorXd::Zero(ne);
  for (int64_t b = 0; b < nbf; ++b) {
    if (!bbr.full) {
      const double u = bbr.dN.row(b).sum(), H = bbr.c(b) + dd(b) * u * u + penalty_row(b);
      cbeta(b) = divides(H, b) ? 1.0 / H : 0.0;
      continue;
    }
    for (int64_t p = 0; p < P; ++p) {
      const double u = bbr.dN(b, p);
      const double row =
          bbr.c(bbr.entry(b, p)) + dd(b) * u * bbr.dN.row(b).sum() + penalty_row(bbr.entry(b, p));
      cbeta(bbr.entry(b, p)) = u != 0.0 && divides(row, bbr.entry(b, p)) ? 1.0 / row : 0.0;
    }
  }
}

}  // namespace rabbit::postfit
