#include "hist_beta_impacts.hpp"

namespace rabbit::postfit {

using Eigen::MatrixXd;
using Eigen::VectorXd;

BetaImpacts hist_beta_impacts(const BetaImpactTerms& t, const MatrixXd& JC) {
  const int64_t ny = JC.rows(), ne = t.UH.cols(), P = t.full ? t.nproc : 1;
  const bool profiled = t.B && t.B->size() > 0;
  const int64_t ne_obs = profiled ? t.B->rows() : 0;
  const MappingJacobian AUH = t.A ? MappingJacobian(*t.A * t.UH) : t.UH;  // [ny × ne]
  // Squared impacts per process column (one column in lite mode, where every entry is a bin's).
  MatrixXd sq = MatrixXd::Zero(ny, P);
  auto process = [&](int64_t e) { return t.full ? e % t.nproc : 0; };

  if (t.Hinv) {
    // Covariance fit: H_ββ is dense, so is D; entries × outputs as rabbit builds them.
    MatrixXd X = *t.Hinv * MatrixXd(AUH.transpose());  // [ne × ny]
    if (profiled) X.topRows(ne_obs) += *t.B * JC.transpose();
    for (int64_t e = 0; e < ne; ++e) sq.col(process(e)) += t.s2(e) * X.row(e).transpose().cwiseAbs2();
  } else {
    if (profiled) {
      // Σ_e S² M[e, i]² = (JC G JCᵀ)_ii per process, G_p = Bᵀ S_p² B.
      for (int64_t p = 0; p < P; ++p) {
        VectorXd w = VectorXd::Zero(ne_obs);
        for (int64_t e = 0; e < ne_obs; ++e)
          if (process(e) == p) w(e) = t.s2(e);
        const MatrixXd G = t.B->transpose() * w.asDiagonal() * *t.B;
        sq.col(p) += ((JC * G).array() * JC.array()).rowwise().sum().matrix();
      }
    }
    // D and its cross term with M, over the nonzeros of A U H⁻¹ only.
    for (int64_t i = 0; i < ny; ++i)
      for (MappingJacobian::InnerIterator it(AUH, i); it; ++it) {
        const int64_t e = it.col();
        if (t.s2(e) == 0.0) continue;
        const double d = it.value();
        const double m = profiled && e < ne_obs ? t.B->row(e).dot(JC.row(i)) : 0.0;
        sq(i, process(e)) += t.s2(e) * (2.0 * m * d + d * d);
      }
  }
  BetaImpacts out;
  out.total_sq = sq.rowwise().sum();
  if (t.full) out.per_process_sq = std::move(sq);
  return out;
}

}  // namespace rabbit::postfit
