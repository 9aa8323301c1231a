#pragma once
// GlobalTerms: what depends on the parameters only (constraints, parameter-only regulariser
// penalties, external likelihood terms). Evaluated once per call on the host, never per shard.
#include <Eigen/Core>

namespace rabbit {

class GlobalTerms {
 public:
  virtual ~GlobalTerms() = default;

  /// The ξ-space part (constraint term, parameter-only penalties); the fitter applies the chain
  /// rule of T to it together with the shards. Adds to grad / HV / hess when they are non-null.
  virtual double xi_terms(const Eigen::VectorXd& xi, Eigen::VectorXd* grad, const Eigen::MatrixXd* V,
                          Eigen::MatrixXd* HV, Eigen::MatrixXd* hess) const = 0;

  /// The x-space part (external likelihood terms act on the stored x and are never frozen).
  virtual double x_terms(const Eigen::VectorXd& x, Eigen::VectorXd* grad, const Eigen::MatrixXd* V,
                         Eigen::MatrixXd* HV, Eigen::MatrixXd* hess) const = 0;
};

}  // namespace rabbit
