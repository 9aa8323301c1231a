#pragma once
// PointCache: the per-bin phase-A and profile results of the last uncoupled profiled evaluation,
// so that a sequence of HVPs at one ξ (trust-region inner iterations, batched Hessians) reads the
// tensor only for the directions. Keyed on ξ and on a generation counter that changes with the
// observations and the BB centres.
#include <Eigen/Core>
#include <cstdint>
#include <vector>

namespace rabbit::cpu_detail {

struct PointCache {
  bool valid = false;
  Eigen::VectorXd xi;
  uint64_t generation = 0;
  int ncol = 0;
  std::vector<double> N, a, c, phi, d, U, M;  // per entry (U: × ncol), M per bin (ncol × ncol)
  double f = 0.0;
  Eigen::VectorXd y, gpi;  // the accumulated gradient parts (see Accum)
};

}  // namespace rabbit::cpu_detail
