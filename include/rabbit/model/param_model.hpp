#pragma once
// A param model maps the effective model parameters π = ξ[0:M] (POIs then model nuisances) to a
// multiplicative rate r_p(π) per process (likelihood.md §2.2). The built-in models (Ones, Mu,
// Mixture and composites of them) are bin-independent, so r is one row [nproc] broadcast over bins.
#include <cstdint>
#include <string>
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
};

}  // namespace rabbit
