#pragma once
// ShardState: what a CPU shard holds between evaluations: the model and its sizes, the entry
// layout, the observed data, the Barlow–Beeston statistics and centres, the covariance-fit
// matrices, the beta-variation sources and the point cache. Filled by the CpuShardEvaluator
// constructor from the build_* functions of the units that own each part.
#include <Eigen/Core>
#include <Eigen/LU>
#include <cstdint>
#include <memory>
#include <vector>

#include "entry_layout.hpp"
#include "point_cache.hpp"
#include "rabbit/backend/cpu/shared_likelihood.hpp"
#include "rabbit/core/worker_pool.hpp"
#include "rabbit/model/model.hpp"

namespace rabbit::cpu_detail {

struct ShardState {
  std::shared_ptr<const Model> model_;
  const FitInputData& in;
  int64_t begin_ = 0, end_ = 0;
  int threads_ = 1;
  std::unique_ptr<WorkerPool> pool;  // threads_ threads, the caller included
  int64_t nbins_ = 0, nbinsfull_ = 0, nproc_ = 0, nsyst_ = 0, nparams_ = 0, nx_ = 0;
  DataLikelihood likelihood_ = DataLikelihood::poisson;
  EntryLayout layout;
  Eigen::VectorXd rho_;  // normal-type pre-scaling ρ_p
  // a bin-dependent param model (ABCD): rates per (bin, process), and ρ per (bin, process) [nbinsfull·P]
  bool bin_rates_ = false;
  Eigen::VectorXd rho_bins_;
  /// ρ of bin b, indexed by process.
  const double* rho_of(int64_t b) const { return bin_rates_ ? rho_bins_.data() + b * nproc_ : rho_.data(); }

  // observed data over all B observed bins
  Eigen::VectorXd nobs_, varnobs_, lognobs_;

  // Barlow–Beeston statistics, copied from the model's BBStatistics (docs/likelihood.md "Per-entry
  // BB statistics"): all B_f entries, one per bin in lite mode, per (bin, process) in full mode
  cpu::BBKind bb_ = cpu::BBKind::none;
  bool bb_full_ = false;
  bool legacy_sumw_ = false;  // per-bin hkstat input (no per-process sumw2)
  Eigen::VectorXd kstat_, sigma2_, sqrt_sigma2_;
  std::vector<uint8_t> bbmask_;
  std::vector<uint8_t> zero_var_;  // lite: per (bin, process), sumw2 = 0
  bool any_zero_var_ = false;
  // centres β⁰, ln β⁰ and the stored β of non-profiled evaluations
  Eigen::VectorXd beta0_, log_beta0_, beta_stored_;
  bool gamma_masked_centres_ = false;  // gamma full: a masked entry with β⁰ ≠ 1 (toys), docs/likelihood.md
                                       // "BB derivative corner cases" item 3

  // covariance fit (docs/likelihood.md "Profiled β" covariance table): bins couple
  bool coupled = false;
  Eigen::MatrixXd cov_inv;              // C⁻¹
  Eigen::MatrixXd cov_profiled_weight;  // (C + diag V)⁻¹ for normal-additive
  Eigen::PartialPivLU<Eigen::MatrixXd> additive_lu;
  Eigen::VectorXd additive_V;  // per observed bin: s² (lite) or Σ σ² (full)

  // beta variations (docs/likelihood.md "Beta variations")
  bool betavar_ = false;                  // hbetavariations applied to full evaluations
  std::vector<int64_t> betavar_sources_;  // observed bins with a non-zero hbetavariations column
  std::vector<uint8_t> betavar_rows_;     // masked bins that receive beta variations

  bool regularized_ = false;  // an observable (SVD) regulariser is configured

  PointCache cache;
  uint64_t generation = 0;  // bumped by new observations and BB centres
  // The last profiled_beta result: the fit's final β̂ and every postfit step's at x̂ are one pass.
  struct {
    bool valid = false;
    uint64_t generation = 0;
    Eigen::VectorXd xi, beta;
  } beta_cache;
  bool cache_allowed = true;  // false when the per-entry cache would be too large

  ShardState(std::shared_ptr<const Model> model, int64_t bin_begin, int64_t bin_end, int threads);

  bool has_bb() const { return bb_ != cpu::BBKind::none; }
  int64_t bb_entries() const { return has_bb() ? (bb_full_ ? nbinsfull_ * nproc_ : nbinsfull_) : 0; }
  /// BB entries per bin: 0 without BB, 1 lite, P full.
  int64_t beta_width() const { return bb_ == cpu::BBKind::none ? 0 : (bb_full_ ? nproc_ : 1); }
};

/// The shard's copy of the model's BBStatistics (k, σ², masks, zero-variance entries, minBBKstat;
/// its InputError and OptionError) and the default centres; nothing without --binByBinStat.
void build_bb_statistics(ShardState& s);
/// β⁰ = 1 (0 for normal-additive) on every BB entry.
Eigen::VectorXd default_beta_centres(const ShardState& s);
/// Sets β⁰, ln β⁰ (0 where β⁰ = 0) and resets the stored β to β⁰.
void set_beta_centres(ShardState& s, const Eigen::VectorXd& beta0);
/// The observed source bins of hbetavariations and the masked bins they act on (beta_variations.cpp);
/// InputError naming the file for an observed destination bin.
void build_beta_variation_sources(ShardState& s);
/// Whether the observable regularisers are configured and admitted (observable_regularizer.cpp):
/// OptionError for a sharded fit, or with BB on observed bins or on bins receiving beta variations.
void check_observable_regularizers(ShardState& s);

}  // namespace rabbit::cpu_detail
