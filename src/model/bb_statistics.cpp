#include "rabbit/model/bb_statistics.hpp"

#include <fmt/format.h>

#include "rabbit/core/error.hpp"

namespace rabbit {

using Eigen::VectorXd;

BBStatistics::BBStatistics(const Model& model) {
  const FitInputData& in = *model.input;
  const ModelOptions& opt = model.options;
  kind_ = likelihood::bb_kind(opt.bin_by_bin_stat, model.bb_type, opt.bb_mode, opt.likelihood);
  if (!on()) return;
  full_ = opt.bb_mode == BBMode::full;
  legacy_per_bin_ = in.sumw_per_bin;
  if (full_ && legacy_per_bin_)
    throw InputError(fmt::format(
        "{}: --binByBinStatMode full needs per-process hsumw2 (file has only hkstat)", in.filename));
  if (opt.likelihood == DataLikelihood::covariance && kind_ == likelihood::BBKind::gamma)
    throw OptionError("--binByBinStatType gamma is not allowed with --covarianceFit");
  const int64_t nbf = in.nbinsfull, P = in.nproc;
  const int64_t ne = full_ ? nbf * P : nbf;
  // σ² and w̄ per entry; lite per-process input drops the zero-variance processes from w̄.
  VectorXd wbar(ne), sig2(ne);
  zero_var_.assign(nbf * P, 0);
  if (full_ || legacy_per_bin_) {
    for (int64_t i = 0; i < ne; ++i) {
      sig2[i] = in.sumw2[i];
      wbar[i] = in.sumw[i];
    }
  } else {
    for (int64_t b = 0; b < nbf; ++b) {
      double s2 = 0.0, w = 0.0;
      for (int64_t p = 0; p < P; ++p) {
        const double v2 = in.sumw2[b * P + p];
        const bool z = v2 == 0.0;
        zero_var_[b * P + p] = z;
        any_zero_var_ = any_zero_var_ || z;
        s2 += v2;
        if (!z) w += in.sumw[b * P + p];
      }
      sig2[b] = s2;
      wbar[b] = w;
    }
  }
  kstat_.resize(ne);
  sigma2_ = sig2;
  sqrt_sigma2_ = sig2.cwiseSqrt();
  mask_.assign(ne, 0);
  for (int64_t i = 0; i < ne; ++i) {
    bool m = sig2[i] == 0.0 || wbar[i] == 0.0;
    if (opt.min_bb_kstat > 0.0) {
      const double denom = m ? 1.0 : sig2[i];
      m = m || (wbar[i] * wbar[i] / denom < opt.min_bb_kstat);
    }
    mask_[i] = m;
    kstat_[i] = m ? 1.0 : wbar[i] * wbar[i] / sig2[i];
  }
}

}  // namespace rabbit
