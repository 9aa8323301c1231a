#pragma once
// PointState: the quantities of one evaluation point ξ shared by all bins: the θ interpolation
// m = [θ; h(θ)] with h', h'', the process rates r(π) with ∂r/∂π, and for an HVP the directions
// split into π and θ parts (docs/likelihood.md "Expected yields", "Derivative structure").
#include <Eigen/Core>
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

  /// The point ξ of the shard's model and, if V is non-null, the HVP directions V (n × k).
  void prepare(const ShardState& s, const Eigen::VectorXd& xi, const Eigen::MatrixXd* V);
};

}  // namespace rabbit::cpu_detail
