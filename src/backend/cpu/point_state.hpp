#pragma once
// PointState: the quantities of one evaluation point ξ shared by all bins: the θ interpolation
// m = [θ; h(θ)] with h', h'', the process rates r(π) with ∂r/∂π, and for an HVP the directions
// split into π and θ parts (docs/likelihood.md "Expected yields", "Derivative structure").
#include <Eigen/Core>
#include <Eigen/SparseCore>
#include <cstdint>

#include "shard_state.hpp"

namespace rabbit::cpu_detail {

struct PointState {
  Eigen::VectorXd m, hp, hpp;  // m = [θ; h(θ)] (length W), h', h''
  Eigen::VectorXd r;           // rates [P]
  Eigen::MatrixXd jr;          // ∂r/∂π [P × M]
  Eigen::VectorXd pi;
  int64_t k = 0;       // HVP directions
  Eigen::MatrixXd Um;  // [u_θ; h'∘u_θ]  (W × k)
  Eigen::MatrixXd dr;  // ∂r/∂π u_π      (P × k)
  Eigen::MatrixXd Vpi, Vtheta;

  // A bin-dependent param model (ABCD; docs/likelihood.md "Bin-dependent rates"): r, jr and dr are then
  // unused, and the rates, their sparse Jacobian and the HVP directions are held per (bin, process) over
  // all bins, at row b·P + p. The per-process sums of the accumulator follow the same rows.
  bool bin_dependent = false;
  int64_t nproc = 0;
  Eigen::VectorXd rb;                               // r_bp            [nbinsfull·P]
  Eigen::SparseMatrix<double, Eigen::RowMajor> jb;  // ∂r_bp/∂π        [nbinsfull·P × M]
  Eigen::MatrixXd drb;                              // ∂r_bp/∂π u_π    [nbinsfull·P × k]

  /// The rates of bin b, indexed by process.
  const double* rates_of(int64_t b) const { return bin_dependent ? rb.data() + b * nproc : r.data(); }
  /// row[0:M] += w ∂r_bp/∂π of a bin-dependent model.
  void add_rate_gradient(int64_t b, int64_t p, double w, double* row) const {
    for (Eigen::SparseMatrix<double, Eigen::RowMajor>::InnerIterator it(jb, b * nproc + p); it; ++it)
      row[it.col()] += w * it.value();
  }

  /// The point ξ of the shard's model and, if V is non-null, the HVP directions V (n × k).
  void prepare(const ShardState& s, const Eigen::VectorXd& xi, const Eigen::MatrixXd* V);
};

}  // namespace rabbit::cpu_detail
