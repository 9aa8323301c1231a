// The Barlow–Beeston state of a CPU shard: the model's per-entry statistics (BBStatistics: k, σ²,
// the masks and zero-variance entries, docs/likelihood.md "Per-entry BB statistics") and the
// centres β⁰.
#include <fmt/format.h>

#include <cmath>

#include "rabbit/core/error.hpp"
#include "rabbit/model/bb_statistics.hpp"
#include "shard_state.hpp"

namespace rabbit::cpu_detail {

using cpu::BBKind;
using Eigen::VectorXd;

void build_bb_statistics(ShardState& s) {
  const BBStatistics stats(*s.model_);
  if (!stats.on()) return;
  s.bb_ = stats.kind();
  s.bb_full_ = stats.full();
  s.legacy_sumw_ = stats.legacy_per_bin();
  s.kstat_ = stats.kstat();
  s.sigma2_ = stats.sigma2();
  s.sqrt_sigma2_ = stats.sqrt_sigma2();
  s.bbmask_ = stats.mask();
  s.zero_var_ = stats.zero_var();
  s.any_zero_var_ = stats.any_zero_var();
  set_beta_centres(s, default_beta_centres(s));
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
