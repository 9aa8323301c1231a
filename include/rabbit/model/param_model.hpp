#pragma once
// A param model maps the effective model parameters π = ξ[0:M] (POIs then model nuisances) to a
// multiplicative rate r_p(π) per process (docs/model.md "Param models"). The built-in models (Ones, Mu,
// Mixture and composites of them) are bin-independent, so r is one row [nproc] broadcast over bins.
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <Eigen/Core>

namespace rabbit {

class ParamModel {
 public:
  virtual ~ParamModel() = default;

  virtual int64_t npoi() const = 0;
  virtual int64_t npou() const = 0;
  int64_t nparams() const { return npoi() + npou(); }
  /// Parameter names, POIs first.
  virtual std::vector<std::string> names() const = 0;
  /// Effective default values μ⁰ (after --expectSignal), length nparams().
  virtual Eigen::VectorXd default_values() const = 0;

  /// r [nproc] at π, and ∂r/∂π [nproc × nparams] when jac is non-null.
  virtual void rates(const Eigen::VectorXd& pi, Eigen::VectorXd& r, Eigen::MatrixXd* jac) const = 0;
  /// Σ_p w_p ∂²r_p/∂π∂πᵀ [nparams × nparams] (zero for models linear in each process' rate).
  virtual Eigen::MatrixXd rate_curvature(const Eigen::VectorXd& pi, const Eigen::VectorXd& w) const = 0;

  /// Whether the POIs enter linearly (--allowNegativeParam) rather than squared.
  virtual bool allow_negative_param() const { return false; }
  /// Whether r is linear in π (rabbit's is_linear of the param model).
  virtual bool is_linear() const { return nparams() == 0; }
  /// Optional Gaussian priors (docs/likelihood.md "Defaults, constraints and prefit variances"), length nparams() or empty: entries finite and > 0 constrain
  /// the parameter at that width; prior means default to the stored defaults when empty.
  virtual Eigen::VectorXd prior_sigmas() const { return {}; }
  virtual Eigen::VectorXd prior_means() const { return {}; }
};

struct FitInputData;
struct ParamModelSpec;

/// The built-in param models: "Ones", "Mu", "Mixture". Several specs make a composite (docs/model.md "Param models").
/// Unknown names, bad arguments and unknown --expectSignal names throw OptionError.
std::shared_ptr<const ParamModel> make_param_model(const FitInputData& input, const std::vector<ParamModelSpec>& specs,
                                                   const std::vector<std::pair<std::string, double>>& expect_signal,
                                                   bool allow_negative_param);

/// Names accepted by make_param_model.
const std::vector<std::string>& supported_param_models();

}  // namespace rabbit
