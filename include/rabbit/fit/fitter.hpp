#pragma once
// Fitter: the Objective of a fit. It owns the model and its shards, sums the shards' ξ-space
// partials in shard order, adds the global terms once and applies the chain rule of ξ = T(x)
// once (docs/likelihood.md "Derivative structure"). The single-device Fitter has one shard; MultiDeviceFitter
// (multi_device_fitter.hpp) only changes how shards are built and run concurrently.
#include <functional>
#include <memory>
#include <vector>

#include "rabbit/minimize/dense_linalg.hpp"
#include "rabbit/minimize/objective.hpp"
#include "rabbit/model/model.hpp"
#include "rabbit/model/shard_evaluator.hpp"
#include "rabbit/model/yield_model.hpp"

namespace rabbit {

class Fitter : public Objective {
 public:
  /// Takes ownership of the shards, which must tile the observed bins [0, nbins) in order.
  Fitter(std::shared_ptr<Model> model, std::vector<std::unique_ptr<ShardEvaluator>> shards);
  ~Fitter() override;

  int64_t size() const override;
  double value(const Eigen::VectorXd& x) override;
  double value_grad(const Eigen::VectorXd& x, Eigen::VectorXd& grad) override;
  double value_grad_hvp(const Eigen::VectorXd& x, const Eigen::MatrixXd& V, Eigen::VectorXd& grad,
                        Eigen::MatrixXd& HV) override;
  /// Direct dense Hessian: the shards' H_ξ summed, then the chain rule.
  double value_grad_hess(const Eigen::VectorXd& x, Eigen::VectorXd& grad, Eigen::MatrixXd& hess) override;
  /// profile = false: β held at its profiled value (for impacts, docs/likelihood.md "BB derivative corner
  /// cases").
  double value_grad_hess(const Eigen::VectorXd& x, Eigen::VectorXd& grad, Eigen::MatrixXd& hess,
                         bool profile);

  /// New observed data over all nbins observed bins (variances may be empty: = nobs); reaches
  /// every shard.
  void set_observed(const Eigen::VectorXd& nobs, const Eigen::VectorXd& varnobs);
  const Eigen::VectorXd& observed() const { return nobs_; }
  const Eigen::VectorXd& observed_variances() const { return varnobs_; }

  /// Profiled β over all observed bins (shards concatenated), empty without BB.
  Eigen::VectorXd profiled_beta(const Eigen::VectorXd& x);

  Model& model() { return *model_; }
  const Model& model() const { return *model_; }
  std::shared_ptr<Model> model_ptr() const { return model_; }
  const ParameterSpace& parameters() const { return model_->parameters; }
  ParameterSpace& parameters() { return model_->parameters; }
  const std::vector<std::unique_ptr<ShardEvaluator>>& shards() const { return shards_; }

  /// The dense linear algebra for the minimizers' Cholesky factorisations and the postfit
  /// covariance: cuSOLVER on the first shard's GPU when the fit runs on CUDA (set by make_fitter),
  /// else the host default. Meant for MinimizerOptions / ExactSubproblem.
  const DenseLinalg& dense_linalg() const { return linalg_ ? *linalg_ : default_linalg(); }
  std::shared_ptr<const DenseLinalg> dense_linalg_ptr() const { return linalg_; }
  void set_dense_linalg(std::shared_ptr<const DenseLinalg> linalg) { linalg_ = std::move(linalg); }

  /// The yield model the postfit code reads expected yields, their Jacobians, the BB state and the
  /// full-NLL constants from (docs/architecture.md "The seams"). The first shard's own when it
  /// has one (a CPU shard); otherwise (CUDA shards) a host yield model over all observed bins
  /// built on first use from the same host-resident input and kept in step with set_observed.
  /// Its BB centres and stored β follow set_beta_centres / set_stored_beta, also when built later.
  YieldModel& yield_model();
  /// Toys: new BB centres β⁰ (YieldModel's layout over all B_f entries) for every shard and the
  /// host yield model. OptionError from a shard that cannot represent them (naming the option and
  /// --backend cpu), before any shard changes.
  void set_beta_centres(const Eigen::VectorXd& beta0);
  /// Toys: the stored β of the shards' yield models and the host yield model (yields with
  /// BetaMode::stored; the profiled NLL of every shard does not read it).
  void set_stored_beta(const Eigen::VectorXd& beta);
  /// The BB centres and stored β last set (empty: the defaults), for replicas (fitter_replica.hpp).
  const Eigen::VectorXd& beta_centres() const { return beta0_; }
  const Eigen::VectorXd& stored_beta() const { return stored_beta_; }

  /// Threads of the host yield model built for non-CPU fits (0: all cores).
  void set_postfit_threads(int threads) { postfit_threads_ = threads; }

 protected:
  /// Runs fn(shard_index) for every shard; sequential here, one thread per device in
  /// MultiDeviceFitter. Results are always combined in shard order by the caller.
  virtual void for_each_shard(const std::function<void(size_t)>& fn);

 private:
  struct Point;  // ξ, T', T'' at one x
  Point transform(const Eigen::VectorXd& x) const;

  std::shared_ptr<Model> model_;
  std::vector<std::unique_ptr<ShardEvaluator>> shards_;
  Eigen::VectorXd nobs_;
  Eigen::VectorXd varnobs_;
  std::shared_ptr<const DenseLinalg> linalg_;
  std::unique_ptr<YieldModel> host_yields_;  // only for fits whose first shard has no yield model
  int postfit_threads_ = 0;
  Eigen::VectorXd beta0_, stored_beta_;  // set by set_beta_centres / set_stored_beta (empty: defaults)
};

}  // namespace rabbit
