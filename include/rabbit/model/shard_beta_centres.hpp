#pragma once
// ShardBetaCentres: what a non-CPU shard offers beyond ShardEvaluator for toys, new BB centres β⁰
// (frequentist toys randomise them; docs/sharding-and-gpu.md "BB centres (toys) and the BB
// derivative corner cases"). Fitter::set_beta_centres reaches a shard through it, so the fit module
// needs no backend header to talk to a shard kind loaded at run time.
#include <Eigen/Core>

namespace rabbit {

class ShardBetaCentres {
 public:
  virtual ~ShardBetaCentres() = default;
  /// β⁰ over all B_f entries in CpuShardEvaluator's layout (lite: one per bin, full: per (bin,
  /// process), masked channels included); the shard keeps its observed slice. Throws OptionError for
  /// values the shard would treat differently from the CPU backend.
  virtual void set_beta_centres(const Eigen::VectorXd& beta0) = 0;
};

}  // namespace rabbit
