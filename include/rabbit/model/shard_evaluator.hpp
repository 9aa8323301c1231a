#pragma once
// ShardEvaluator: the bin-proportional part of the likelihood for a contiguous range of observed
// bins on one device. Everything that scales with the number of bins lives behind this interface;
// there is one implementation per backend (backend/cpu, backend/cuda).
//
// All derivatives are with respect to the *effective* parameters ξ = T(x) (docs/likelihood.md "Effective
// parameters ξ = T(x)", docs/likelihood.md "Derivative structure"). The fitter applies the chain rule of T
// once, for all shards together, so the shard math never sees POI transforms, blinding or frozen parameters.
#include <fmt/format.h>

#include <Eigen/Core>
#include <cstdint>
#include <string>

#include "rabbit/core/error.hpp"

namespace rabbit {

class YieldModel;

class ShardEvaluator {
 public:
  virtual ~ShardEvaluator() = default;

  /// Observed bins [bin_begin, bin_end) of the full observed-bin axis covered by this shard.
  virtual int64_t bin_begin() const = 0;
  virtual int64_t bin_end() const = 0;
  /// Where the shard lives, e.g. "cpu" or "cuda:1".
  virtual std::string device() const = 0;

  /// New observed data: nobs (and, for the chi2 fits, its variances) over *all* nbins observed
  /// bins; the shard keeps its own slice. An empty varnobs means "variances = nobs".
  virtual void set_observed(const Eigen::VectorXd& nobs, const Eigen::VectorXd& varnobs) = 0;

  /// Partial reduced NLL of the shard's bins: data term + BB term with β profiled.
  virtual double value(const Eigen::VectorXd& xi) = 0;

  /// Partial NLL; overwrites grad with ∇_ξ of it (total derivative through the profiled β).
  virtual double value_grad(const Eigen::VectorXd& xi, Eigen::VectorXd& grad) = 0;

  /// Partial NLL, its ∇_ξ into grad, and H_ξ·V into HV (overwritten), for V of shape n × k.
  virtual double value_grad_hvp(const Eigen::VectorXd& xi, const Eigen::MatrixXd& V, Eigen::VectorXd& grad,
                                Eigen::MatrixXd& HV) = 0;

  /// Partial NLL, ∇_ξ and the dense H_ξ (overwritten). profile = false: β held fixed at its
  /// profiled value instead of differentiated through (docs/likelihood.md "BB derivative corner cases").
  virtual double value_grad_hess(const Eigen::VectorXd& xi, Eigen::VectorXd& grad, Eigen::MatrixXd& hess,
                                 bool profile = true) = 0;

  /// The profiled β of the shard's bins at ξ, in the layout of the shard's BB state
  /// (per (bin, process) in full mode, per bin in lite mode); empty without BB.
  virtual Eigen::VectorXd profiled_beta(const Eigen::VectorXd& xi) = 0;

  // ---- capabilities beyond the likelihood ----
  /// The shard itself as a host yield model (docs/architecture.md "The seams"), when its backend
  /// evaluates yields on the host: the CPU shard. Null otherwise.
  virtual YieldModel* yield_model() { return nullptr; }
  /// Whether set_beta_centres can be called (toys with randomised BB centres).
  virtual bool accepts_beta_centres() const { return false; }
  /// New BB centres β⁰ over all B_f entries (YieldModel's layout); the shard keeps its observed
  /// slice. Shards that cannot take them refuse with an OptionError naming the device.
  virtual void set_beta_centres(const Eigen::VectorXd& /*beta0*/) {
    throw OptionError(
        fmt::format("BB centres (toys with --toysSystRandomize frequentist) cannot be set on the shard "
                    "on {}; use --backend cpu",
                    device()));
  }
};

}  // namespace rabbit
