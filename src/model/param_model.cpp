// The bin-range methods of ParamModel derived from the per-process rates
// (include/rabbit/model/param_model.hpp): a bin-independent model has the same row r [P] and Jacobian ∂r/∂π
// [P × M] in every bin, so each contraction over bins first sums the bin weights per process.
#include "rabbit/model/param_model.hpp"

#include <vector>

namespace rabbit {

void ParamModel::bin_rates(const Eigen::VectorXd& pi, int64_t b0, int64_t b1, Eigen::MatrixXd& r) const {
  Eigen::VectorXd row;
  rates(pi, row, nullptr);
  r = row.transpose().replicate(b1 - b0, 1);
}

void ParamModel::rates_vjp(const Eigen::VectorXd& pi, int64_t, int64_t, const Eigen::MatrixXd& w,
                           Eigen::VectorXd& g) const {
  Eigen::VectorXd row;
  Eigen::MatrixXd jac;
  rates(pi, row, &jac);
  g = jac.transpose() * w.colwise().sum().transpose();
}

void ParamModel::rates_jvp(const Eigen::VectorXd& pi, int64_t b0, int64_t b1, const Eigen::MatrixXd& v,
                           Eigen::MatrixXd& dr) const {
  Eigen::VectorXd row;
  Eigen::MatrixXd jac;
  rates(pi, row, &jac);
  const Eigen::MatrixXd per_bin = jac * v;  // [P × k], the same in every bin
  const int64_t P = per_bin.rows();
  dr.resize((b1 - b0) * P, v.cols());
  for (int64_t b = 0; b < b1 - b0; ++b) dr.middleRows(b * P, P) = per_bin;
}

Eigen::MatrixXd ParamModel::curvature_product(const Eigen::VectorXd& pi, int64_t, int64_t,
                                              const Eigen::MatrixXd& w, const Eigen::MatrixXd& v) const {
  return rate_curvature(pi, w.colwise().sum().transpose()) * v;
}

Eigen::SparseMatrix<double, Eigen::RowMajor> ParamModel::rate_jacobian(const Eigen::VectorXd& pi, int64_t b0,
                                                                       int64_t b1) const {
  Eigen::VectorXd row;
  Eigen::MatrixXd jac;
  rates(pi, row, &jac);
  const int64_t P = jac.rows(), M = jac.cols();
  std::vector<Eigen::Triplet<double>> nz;
  for (int64_t b = 0; b < b1 - b0; ++b)
    for (int64_t p = 0; p < P; ++p)
      for (int64_t i = 0; i < M; ++i)
        if (jac(p, i) != 0.0) nz.emplace_back(b * P + p, i, jac(p, i));
  Eigen::SparseMatrix<double, Eigen::RowMajor> out((b1 - b0) * P, M);
  out.setFromTriplets(nz.begin(), nz.end());
  return out;
}

}  // namespace rabbit
