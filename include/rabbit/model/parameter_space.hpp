#pragma once
// The parameter vector x = [POIs | model nuisances | systematics] (likelihood.md §2): names,
// defaults, constraints, frozen mask, and the element-wise transform ξ = T(x) with blinding.
#include <cstdint>
#include <string>
#include <vector>

#include <Eigen/Core>

namespace rabbit {

class ParameterSpace {
 public:
  int64_t size() const { return static_cast<int64_t>(names.size()); }
  int64_t nparams() const { return npoi + npou; }

  /// ξ = T(x) with T' and T'' element-wise (zero for frozen parameters, §2.5). Blinding offsets
  /// enter only while blinding_enabled is true.
  void transform(const Eigen::VectorXd& x, Eigen::VectorXd& xi, Eigen::VectorXd& d1, Eigen::VectorXd& d2) const;
  Eigen::VectorXd effective(const Eigen::VectorXd& x) const;

  /// Index of a parameter by exact name, or -1.
  int64_t index(const std::string& name) const;

  std::vector<std::string> names;
  int64_t npoi = 0;
  int64_t npou = 0;
  int64_t nsyst = 0;
  bool squared_pois = true;            // false with --allowNegativeParam

  Eigen::VectorXd x_default;           // stored start point / prefit values (x0default)
  Eigen::VectorXd constraint_weights;  // cw over the whole vector
  Eigen::VectorXd constraint_centres;  // x0 over the whole vector (state: randomised in toys)
  Eigen::VectorXd prefit_variance;     // var_prefit (§2.4)
  std::vector<bool> frozen;

  Eigen::VectorXd poi_blinding_scale;  // c_i over the POIs (1 when not blinded)
  Eigen::VectorXd syst_blinding_offset;// o_s over the systematics (0 when not blinded)
  bool blinding_enabled = false;       // offsets switched on (§2.6, only inside blinded fits)
};

}  // namespace rabbit
