#pragma once
// --externalPostfit (docs/output-format.md, docs/user-guide.md "The list of fits"): parameter values and,
// when the file has one, their covariance from an earlier result (rabbit's layout or the plain one), mapped
// onto this fit's parameters by name. They are the start point of the fit and, without a fit,
// its result.
#include <Eigen/Core>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "rabbit/cli/options.hpp"

namespace rabbit::cli {

class ExternalPostfit {
 public:
  /// Reads the file named by --externalPostfit (result --externalPostfitResult) and maps its
  /// parameters onto `names`; refuses a file that shares no name, and a covariance that would
  /// replace the Hessian that impacts of unfitted results need.
  ExternalPostfit(const FitOptions& o, const std::vector<std::string>& names);

  bool has_covariance() const { return cov_.size() > 0; }
  /// Overwrites the parameters found in the file: x and x_start get their values; cov (the prefit
  /// covariance on entry) gets their covariance block, with zero correlation between parameters
  /// found and not found in the file, when the file has a covariance.
  void apply(Eigen::VectorXd& x, Eigen::VectorXd& x_start, Eigen::MatrixXd& cov) const;

 private:
  std::vector<std::string> names_;  // in the file
  Eigen::VectorXd x_;
  Eigen::MatrixXd cov_;         // empty when the file has none
  std::vector<int64_t> index_;  // for each model parameter, its index in the file (-1: not there)
};

}  // namespace rabbit::cli
