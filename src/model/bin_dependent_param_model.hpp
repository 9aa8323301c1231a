#pragma once
// The base of the bin-dependent param models (the ABCD family, docs/model.md "Bin-dependent param
// models"): they give the rates over a bin range, the sparse Jacobian and the curvature product; the
// vector-Jacobian and Jacobian-vector products follow from the sparse Jacobian. There is no per-process
// row to give, so rates() and rate_curvature() refuse (the backends ask bin_independent() first).
#include <fmt/format.h>

#include <string>

#include "rabbit/core/error.hpp"
#include "rabbit/model/param_model.hpp"

namespace rabbit {

class BinDependentParamModel : public ParamModel {
 public:
  bool bin_independent() const final { return false; }

  void rates(const Eigen::VectorXd&, Eigen::VectorXd&, Eigen::MatrixXd*) const final { refuse("rates"); }
  Eigen::MatrixXd rate_curvature(const Eigen::VectorXd&, const Eigen::VectorXd&) const final {
    refuse("rate_curvature");
  }

  void rates_vjp(const Eigen::VectorXd& pi, int64_t b0, int64_t b1, const Eigen::MatrixXd& w,
                 Eigen::VectorXd& g) const final {
    // w [nb × P] flattened as rows b·P + p, the row order of rate_jacobian
    const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> wr = w;
    g = rate_jacobian(pi, b0, b1).transpose() * Eigen::Map<const Eigen::VectorXd>(wr.data(), wr.size());
  }
  void rates_jvp(const Eigen::VectorXd& pi, int64_t b0, int64_t b1, const Eigen::MatrixXd& v,
                 Eigen::MatrixXd& dr) const final {
    dr = rate_jacobian(pi, b0, b1) * v;
  }

 protected:
  /// The name in errors, e.g. "ABCD".
  virtual std::string model_name() const = 0;

 private:
  [[noreturn]] void refuse(const char* what) const {
    throw Error(
        fmt::format("param model {} depends on the bin: {} per process is not defined (use the bin-range "
                    "methods)",
                    model_name(), what));
  }
};

}  // namespace rabbit
