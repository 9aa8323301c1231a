#pragma once
// CpuShardEvaluator: the CPU ShardEvaluator (docs/likelihood.md "Expected yields" to "Derivative structure") plus what the postfit code and
// the toys need beyond the ShardEvaluator interface (expected yields over any bin range, their
// Jacobian, the full NLL, the BB centres β⁰ and the stored β). The postfit/toy code reaches it
// with dynamic_cast<CpuShardEvaluator*>(fitter.shards()[i].get()); see docs/likelihood.md.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <Eigen/Core>

#include "rabbit/backend/cpu/shared_likelihood.hpp"
#include "rabbit/model/model.hpp"
#include "rabbit/model/shard_evaluator.hpp"

namespace rabbit {

namespace cpu_detail {
struct Engine;
}

class CpuShardEvaluator : public ShardEvaluator {
 public:
  CpuShardEvaluator(std::shared_ptr<const Model> model, int64_t bin_begin, int64_t bin_end, int threads = 0);
  ~CpuShardEvaluator() override;

  int64_t bin_begin() const override { return begin_; }
  int64_t bin_end() const override { return end_; }
  std::string device() const override { return "cpu"; }

  void set_observed(const Eigen::VectorXd& nobs, const Eigen::VectorXd& varnobs) override;
  double value(const Eigen::VectorXd& xi) override;
  double value_grad(const Eigen::VectorXd& xi, Eigen::VectorXd& grad) override;
  double value_grad_hvp(const Eigen::VectorXd& xi, const Eigen::MatrixXd& V, Eigen::VectorXd& grad,
                        Eigen::MatrixXd& HV) override;
  double value_grad_hess(const Eigen::VectorXd& xi, Eigen::VectorXd& grad, Eigen::MatrixXd& hess,
                         bool profile = true) override;
  Eigen::VectorXd profiled_beta(const Eigen::VectorXd& xi) override;

  // ---- BB state (all B_f entries: one per bin in lite mode, per (bin, process) in full mode) ----
  bool has_bb() const { return bb_ != cpu::BBKind::none; }
  bool bb_full() const { return bb_full_; }
  /// Number of BB entries over all B_f bins (0 without BB).
  int64_t bb_entries() const { return has_bb() ? (bb_full_ ? nbinsfull_ * nproc_ : nbinsfull_) : 0; }
  /// k_e = sumw²/sumw2 (1 where masked), the masks and the default centres (docs/likelihood.md "Per-entry BB statistics").
  const Eigen::VectorXd& bb_kstat() const { return kstat_; }
  const std::vector<uint8_t>& bb_mask() const { return bbmask_; }
  Eigen::VectorXd default_beta_centres() const;
  /// Sets β⁰ (toys randomise it); ln β⁰ is recomputed (0 where β⁰ = 0).
  void set_beta_centres(const Eigen::VectorXd& beta0);
  const Eigen::VectorXd& beta_centres() const { return beta0_; }
  /// The stored β used by non-profiled evaluations (docs/likelihood.md "Non-profiled evaluation"); reset to β⁰ by set_beta_centres.
  void set_stored_beta(const Eigen::VectorXd& beta);
  const Eigen::VectorXd& stored_beta() const { return beta_stored_; }

  // ---- postfit ----
  /// How β enters yields: none (ν⁰), stored β (docs/likelihood.md "Non-profiled evaluation", profile = false), or profiled at ξ (docs/likelihood.md "Profiled β";
  /// masked-channel entries always use their stored β, observed bins β̂).
  enum class BetaMode { none, stored, profiled };
  /// Expected yields of bins [first, last) of the full bin axis (masked channels included):
  /// per bin and, if per_process is non-null, per (bin, process) [nb × nproc].
  void expected_yields(const Eigen::VectorXd& xi, int64_t first, int64_t last, BetaMode mode,
                       Eigen::VectorXd* per_bin, Eigen::MatrixXd* per_process = nullptr);
  /// Dense Jacobian ∂ν_b/∂ξ [nb × n] of the per-bin yields of [first, last). With profiled β the
  /// derivative goes through β̂(ξ) (as rabbit's autodiff does, covariance fits included); other modes
  /// hold β fixed.
  Eigen::MatrixXd yield_jacobian(const Eigen::VectorXd& xi, int64_t first, int64_t last, BetaMode mode);
  /// Dense Jacobian ∂Ñ_bp/∂ξ [(nb·nproc) × n] of the per-process yields (row b·nproc + p), β held
  /// fixed at the value of `mode` (profiled β: the total derivative through β̂ is only in yield_jacobian).
  Eigen::MatrixXd process_yield_jacobian(const Eigen::VectorXd& xi, int64_t first, int64_t last, BetaMode mode);

  /// ∂ν_b/∂β_e [nb × bb_entries()] of the per-bin yields of [first, last) with respect to the BB
  /// entries at the β of `mode` (rabbit's `pdexpdbeta`): the entry's own factor and, with beta
  /// variations (docs/likelihood.md "Beta variations"), the masked-channel bins' dependence on the observed entries' β.
  /// BetaMode::none (yields ν⁰, β no variable of them) gives zero partials.
  Eigen::MatrixXd beta_yield_partials(const Eigen::VectorXd& xi, int64_t first, int64_t last, BetaMode mode);
  /// Whether hbetavariations act on the full evaluations (BB full, gamma or normal-multiplicative).
  bool beta_variations_active() const { return betavar_; }

  /// The full NLL of the shard's bins (docs/likelihood.md "The NLL and its data term" to "BB constraint term" full forms, --fullNll) = value + the constants of
  /// full_nll_constant(); the last shard also carries the masked-channel BB constants.
  double full_value(const Eigen::VectorXd& xi);
  double full_nll_constant() const;

  int threads() const { return threads_; }

 private:
  struct Impl;
  friend struct Impl;
  friend struct cpu_detail::Engine;

  std::shared_ptr<const Model> model_;
  int64_t begin_ = 0, end_ = 0;
  int threads_ = 1;
  int64_t nbins_ = 0, nbinsfull_ = 0, nproc_ = 0, nsyst_ = 0, nparams_ = 0, nx_ = 0;
  DataLikelihood likelihood_ = DataLikelihood::poisson;
  cpu::BBKind bb_ = cpu::BBKind::none;
  bool bb_full_ = false;
  bool legacy_sumw_ = false;

  Eigen::VectorXd nobs_, varnobs_, lognobs_;  // all B observed bins
  Eigen::VectorXd kstat_, sigma2_, sqrt_sigma2_, beta0_, log_beta0_, beta_stored_;
  std::vector<uint8_t> bbmask_;
  std::vector<uint8_t> zero_var_;  // lite: per (bin, process), sumw2 = 0
  bool any_zero_var_ = false;
  bool regularized_ = false;       // an observable (SVD) regulariser is configured
  Eigen::VectorXd rho_;            // normal-type pre-scaling ρ_p
  bool gamma_masked_centres_ = false;  // gamma full: a masked entry with β⁰ ≠ 1 (toys), docs/likelihood.md "BB derivative corner cases" item 3
  bool betavar_ = false;           // hbetavariations applied to full evaluations (docs/likelihood.md "Beta variations")
  std::vector<int64_t> betavar_sources_;  // observed bins with a non-zero hbetavariations column

  std::unique_ptr<Impl> impl_;
};

}  // namespace rabbit
