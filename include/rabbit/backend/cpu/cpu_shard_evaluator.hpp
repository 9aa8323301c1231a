#pragma once
// CpuShardEvaluator: the CPU ShardEvaluator of observed bins [bin_begin, bin_end)
// (docs/likelihood.md "Expected yields" to "Derivative structure"), which is also a host
// YieldModel over all B_f bins (masked channels included): the postfit yields, their Jacobians,
// the BB state and the full NLL constants. Its parts are private to src/backend/cpu
// (docs/architecture.md "The CPU backend").
#include <Eigen/Core>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "rabbit/model/model.hpp"
#include "rabbit/model/shard_evaluator.hpp"
#include "rabbit/model/yield_model.hpp"

namespace rabbit {

namespace cpu_detail {
struct ShardState;
}

class CpuShardEvaluator : public ShardEvaluator, public YieldModel {
 public:
  CpuShardEvaluator(std::shared_ptr<const Model> model, int64_t bin_begin, int64_t bin_end, int threads = 0);
  ~CpuShardEvaluator() override;

  // ---- ShardEvaluator ----
  int64_t bin_begin() const override;
  int64_t bin_end() const override;
  std::string device() const override { return "cpu"; }
  void set_observed(const Eigen::VectorXd& nobs, const Eigen::VectorXd& varnobs) override;
  double value(const Eigen::VectorXd& xi) override;
  double value_grad(const Eigen::VectorXd& xi, Eigen::VectorXd& grad) override;
  double value_grad_hvp(const Eigen::VectorXd& xi, const Eigen::MatrixXd& V, Eigen::VectorXd& grad,
                        Eigen::MatrixXd& HV) override;
  double value_grad_hess(const Eigen::VectorXd& xi, Eigen::VectorXd& grad, Eigen::MatrixXd& hess,
                         bool profile = true) override;
  /// The shard's observed bins; masked entries stay at β⁰ (docs/likelihood.md "Profiled β").
  Eigen::VectorXd profiled_beta(const Eigen::VectorXd& xi) override;
  YieldModel* yield_model() override { return this; }
  bool accepts_beta_centres() const override { return true; }

  // ---- YieldModel ----
  bool has_bb() const override;
  bool bb_full() const override;
  int64_t bb_entries() const override;
  const Eigen::VectorXd& bb_kstat() const override;
  const std::vector<uint8_t>& bb_mask() const override;
  Eigen::VectorXd default_beta_centres() const override;
  void set_beta_centres(const Eigen::VectorXd& beta0) override;
  const Eigen::VectorXd& beta_centres() const override;
  void set_stored_beta(const Eigen::VectorXd& beta) override;
  const Eigen::VectorXd& stored_beta() const override;
  bool beta_variations_active() const override;
  void expected_yields(const Eigen::VectorXd& xi, int64_t first, int64_t last, BetaMode mode,
                       Eigen::VectorXd* per_bin, Eigen::MatrixXd* per_process = nullptr) override;
  Eigen::MatrixXd yield_jacobian(const Eigen::VectorXd& xi, int64_t first, int64_t last,
                                 BetaMode mode) override;
  Eigen::MatrixXd process_yield_jacobian(const Eigen::VectorXd& xi, int64_t first, int64_t last,
                                         BetaMode mode) override;
  Eigen::MatrixXd beta_yield_partials(const Eigen::VectorXd& xi, int64_t first, int64_t last,
                                      BetaMode mode) override;
  Eigen::MatrixXd profiled_beta_jacobian(const Eigen::VectorXd& xi, int64_t first, int64_t last) override;
  Eigen::VectorXd profiled_beta_gains(const Eigen::VectorXd& xi, int64_t first, int64_t last) override;
  /// The constants of the shard's observed bins; the last shard also carries the masked-channel BB
  /// constants.
  double full_nll_constant() const override;

  /// The full NLL of the shard's bins = value + full_nll_constant().
  double full_value(const Eigen::VectorXd& xi);
  int threads() const;

 private:
  // The bin loops behind the YieldModel calls above, on one thread, writing the rows of bins [first, last)
  // into `out` (src/backend/cpu/postfit_bin_pieces.cpp cuts a long range into pieces for the shard's
  // threads).
  void expected_yields_rows(const Eigen::VectorXd& xi, int64_t first, int64_t last, BetaMode mode,
                            Eigen::VectorXd* per_bin, Eigen::MatrixXd* per_process);
  void yield_jacobian_rows(const Eigen::VectorXd& xi, int64_t first, int64_t last, BetaMode mode,
                           Eigen::Ref<Eigen::MatrixXd> out);
  void process_yield_jacobian_rows(const Eigen::VectorXd& xi, int64_t first, int64_t last, BetaMode mode,
                                   Eigen::Ref<Eigen::MatrixXd> out);
  void profiled_beta_jacobian_rows(const Eigen::VectorXd& xi, int64_t first, int64_t last,
                                   Eigen::Ref<Eigen::MatrixXd> out);
  // false where a bin's dβ̂/dξ is not a multiple of its yield Jacobian (then `out` is incomplete)
  bool profiled_beta_gains_rows(const Eigen::VectorXd& xi, int64_t first, int64_t last,
                                Eigen::Ref<Eigen::VectorXd> out);

  std::unique_ptr<cpu_detail::ShardState> state_;
};

}  // namespace rabbit
