// The Barlow–Beeston state of a CPU shard: per-entry statistics k = (Σw)²/Σw², σ², the masks
// and zero-variance entries (docs/likelihood.md "Per-entry BB statistics"), and the centres β⁰.
#include <cmath>

#include <fmt/format.h>

#include "rabbit/core/error.hpp"
#include "shard_state.hpp"

namespace rabbit::cpu_detail {

using cpu::BBKind;
using Eigen::VectorXd;

void build_bb_statistics(ShardState& s) {
  const FitInputData& in = s.in;
  const auto& opt = s.model_->options;
  if (opt.bin_by_bin_stat) {
    switch (s.model_->bb_type) {
      case BBType::gamma: s.bb_ = BBKind::gamma; break;
      case BBType::normal_multiplicative: s.bb_ = BBKind::normal_multiplicative; break;
      case BBType::normal_additive: s.bb_ = BBKind::normal_additive; break;
      case BBType::automatic:  // build_model resolves it (docs/likelihood.md "Barlow–Beeston types and modes")
        throw Error("CPU shard: the model's BB type is unresolved (automatic); build it with build_model");
    }
    s.bb_full_ = opt.bb_mode == BBMode::full;
    s.legacy_sumw_ = in.sumw_per_bin;
    if (s.bb_full_ && s.legacy_sumw_)
      throw InputError(fmt::format("{}: --binByBinStatMode full needs per-process hsumw2 (file has only hkstat)",
                                   in.filename));
    if (s.likelihood_ == DataLikelihood::covariance && s.bb_ == BBKind::gamma)
      throw OptionError("--binByBinStatType gamma is not allowed with --covarianceFit");
    const int64_t ne = s.bb_entries();
    VectorXd wbar(ne), sig2(ne);
    s.zero_var_.assign(s.nbinsfull_ * s.nproc_, 0);
    if (s.bb_full_) {
      for (int64_t i = 0; i < ne; ++i) {
        sig2[i] = in.sumw2[i];
        wbar[i] = in.sumw[i];
      }
    } else if (s.legacy_sumw_) {
      for (int64_t b = 0; b < ne; ++b) {
        sig2[b] = in.sumw2[b];
        wbar[b] = in.sumw[b];
      }
    } else {
      for (int64_t b = 0; b < s.nbinsfull_; ++b) {
        double s2 = 0.0, w = 0.0;
        for (int64_t p = 0; p < s.nproc_; ++p) {
          const double v2 = in.sumw2[b * s.nproc_ + p];
          const bool z = v2 == 0.0;
          s.zero_var_[b * s.nproc_ + p] = z;
          s.any_zero_var_ = s.any_zero_var_ || z;
          s2 += v2;
          if (!z) w += in.sumw[b * s.nproc_ + p];
        }
        sig2[b] = s2;
        wbar[b] = w;
      }
    }
    s.kstat_.resize(ne);
    s.sigma2_ = sig2;
    s.sqrt_sigma2_ = sig2.cwiseSqrt();
    s.bbmask_.assign(ne, 0);
    for (int64_t i = 0; i < ne; ++i) {
      bool m = sig2[i] == 0.0 || wbar[i] == 0.0;
      if (opt.min_bb_kstat > 0.0) {
        const double denom = m ? 1.0 : sig2[i];
        m = m || (wbar[i] * wbar[i] / denom < opt.min_bb_kstat);
      }
      s.bbmask_[i] = m;
      s.kstat_[i] = m ? 1.0 : wbar[i] * wbar[i] / sig2[i];
    }
    set_beta_centres(s, default_beta_centres(s));
  }
}

VectorXd default_beta_centres(const ShardState& s) {
  const double b0 = s.bb_ == BBKind::normal_additive ? 0.0 : 1.0;
  return VectorXd::Constant(s.bb_entries(), b0);
}

void set_beta_centres(ShardState& s, const VectorXd& beta0) {
  if (beta0.size() != s.bb_entries())
    throw Error(fmt::format("set_beta_centres: {} values for {} BB entries", beta0.size(), s.bb_entries()));
  s.beta0_ = beta0;
  s.log_beta0_.resize(beta0.size());
  for (int64_t i = 0; i < beta0.size(); ++i) s.log_beta0_[i] = beta0[i] > 0.0 ? std::log(beta0[i]) : 0.0;
  s.beta_stored_ = s.beta0_;
  s.gamma_masked_centres_ = false;
  if (s.bb_ == BBKind::gamma && s.bb_full_)
    for (int64_t i = 0; i < beta0.size(); ++i)
      s.gamma_masked_centres_ = s.gamma_masked_centres_ || (s.bbmask_[i] && beta0[i] != 1.0);
  ++s.generation;
}

}  // namespace rabbit::cpu_detail
