#pragma once
// YieldModel: the expected yields of the model over any range of the full bin axis (masked
// channels included) and their Jacobians, at a point ξ of the effective parameters, with the
// Barlow–Beeston state they depend on (docs/likelihood.md "Expected yields", "Profiled β",
// "Non-profiled evaluation"). What the postfit code, Asimov data and toys read; the fit itself
// only needs the ShardEvaluators. The host implementation is in the CPU backend
// (make_host_yield_model); Fitter::yield_model() gives the one of a fit.
//
// BB entries are laid out over all B_f bins: one per bin in lite mode, one per (bin, process)
// (index b·P + p) in full mode.
#include <Eigen/Core>
#include <cstdint>
#include <vector>

namespace rabbit {

class YieldModel {
 public:
  virtual ~YieldModel() = default;

  /// How β enters yields: none (ν⁰), the stored β (docs/likelihood.md "Non-profiled evaluation"),
  /// or profiled at ξ (docs/likelihood.md "Profiled β"; masked-channel entries always use their
  /// stored β, observed bins β̂).
  enum class BetaMode { none, stored, profiled };

  // ---- BB state ----
  virtual bool has_bb() const = 0;
  virtual bool bb_full() const = 0;
  /// Number of BB entries over all B_f bins (0 without BB).
  virtual int64_t bb_entries() const = 0;
  /// k_e = sumw²/sumw2 (1 where masked) and the masks (docs/likelihood.md "Per-entry BB statistics").
  virtual const Eigen::VectorXd& bb_kstat() const = 0;
  virtual const std::vector<uint8_t>& bb_mask() const = 0;
  virtual Eigen::VectorXd default_beta_centres() const = 0;
  /// Sets β⁰ (toys randomise it) and resets the stored β to β⁰.
  virtual void set_beta_centres(const Eigen::VectorXd& beta0) = 0;
  virtual const Eigen::VectorXd& beta_centres() const = 0;
  /// The stored β used by BetaMode::stored.
  virtual void set_stored_beta(const Eigen::VectorXd& beta) = 0;
  virtual const Eigen::VectorXd& stored_beta() const = 0;
  /// Whether hbetavariations act on the full evaluations (BB full, gamma or normal-multiplicative).
  virtual bool beta_variations_active() const = 0;
  /// New observed data over all nbins observed bins (empty varnobs: = nobs); the profiled β
  /// depends on them.
  virtual void set_observed(const Eigen::VectorXd& nobs, const Eigen::VectorXd& varnobs) = 0;

  // ---- yields and their derivatives ----
  /// Expected yields of bins [first, last) of the full bin axis: per bin and, if per_process is
  /// non-null, per (bin, process) [nb × nproc].
  virtual void expected_yields(const Eigen::VectorXd& xi, int64_t first, int64_t last, BetaMode mode,
                               Eigen::VectorXd* per_bin, Eigen::MatrixXd* per_process = nullptr) = 0;
  /// Dense Jacobian ∂ν_b/∂ξ [nb × n] of the per-bin yields of [first, last). With profiled β the
  /// derivative goes through β̂(ξ) (as rabbit's autodiff does, covariance fits included); other
  /// modes hold β fixed.
  virtual Eigen::MatrixXd yield_jacobian(const Eigen::VectorXd& xi, int64_t first, int64_t last,
                                         BetaMode mode) = 0;
  /// Dense Jacobian ∂Ñ_bp/∂ξ [(nb·nproc) × n] of the per-process yields (row b·nproc + p), β held
  /// fixed at the value of `mode`.
  virtual Eigen::MatrixXd process_yield_jacobian(const Eigen::VectorXd& xi, int64_t first, int64_t last,
                                                 BetaMode mode) = 0;
  /// ∂ν_b/∂β_e [nb × bb_entries()] of the per-bin yields of [first, last) at the β of `mode`
  /// (rabbit's `pdexpdbeta`), beta variations included; zero for BetaMode::none.
  virtual Eigen::MatrixXd beta_yield_partials(const Eigen::VectorXd& xi, int64_t first, int64_t last,
                                              BetaMode mode) = 0;
  /// The profiled β of the model's observed bins at ξ (BB layout of those bins), empty without BB.
  virtual Eigen::VectorXd profiled_beta(const Eigen::VectorXd& xi) = 0;
  /// dβ̂/dξ [BB entries of observed bins [first, last) × n]: the Jacobian of the profiled β of
  /// those bins (masked entries, held at β⁰, give zero rows). Empty for covariance fits, whose one
  /// global profile is not differentiated here.
  virtual Eigen::MatrixXd profiled_beta_jacobian(const Eigen::VectorXd& xi, int64_t first, int64_t last) = 0;
  /// h [last − first] with dβ̂_b/dξ = h_b ∂ν_b/∂ξ (the profiled yield Jacobian's row) for every observed bin
  /// of [first, last): lite BB where β̂_b follows the bin's yield alone (no process of the bin without MC
  /// statistics; h_b = 0 where β is held). Empty where some bin's is not such a multiple or the model does
  /// not say (the default); profiled_beta_jacobian then gives the rows.
  virtual Eigen::VectorXd profiled_beta_gains(const Eigen::VectorXd& xi, int64_t first, int64_t last) {
    (void)xi, (void)first, (void)last;
    return {};
  }

  // ---- the NLL of its observed bins ----
  /// The reduced NLL (data term + BB term with β profiled) of the observed bins it covers.
  virtual double value(const Eigen::VectorXd& xi) = 0;
  /// The constants that turn value() into the full NLL (docs/likelihood.md "The NLL and its data
  /// term" to "BB constraint term", --fullNll), masked-channel BB constants included.
  virtual double full_nll_constant() const = 0;
};

}  // namespace rabbit
