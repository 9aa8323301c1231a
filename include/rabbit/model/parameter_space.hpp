#pragma once
// The parameter vector x = [POIs | model nuisances | systematics] (docs/likelihood.md "Parameters and their
// layout"): names, defaults, constraints, frozen mask, and the element-wise transform ξ = T(x) with blinding.
#include <Eigen/Core>
#include <cstdint>
#include <string>
#include <vector>

namespace rabbit {

class ParameterSpace {
 public:
  int64_t size() const { return static_cast<int64_t>(names.size()); }
  int64_t nparams() const { return npoi + npou; }

  /// ξ = T(x) with T' and T'' element-wise (zero for frozen parameters, docs/likelihood.md "Frozen
  /// parameters"). Blinding offsets enter only while blinding_enabled is true.
  void transform(const Eigen::VectorXd& x, Eigen::VectorXd& xi, Eigen::VectorXd& d1,
                 Eigen::VectorXd& d2) const;
  Eigen::VectorXd effective(const Eigen::VectorXd& x) const;

  /// Index of a parameter by exact name, or -1.
  int64_t index(const std::string& name) const;

  /// Indices of the frozen / floating parameters, ascending.
  std::vector<int64_t> frozen_indices() const;
  std::vector<int64_t> floating_indices() const;
  /// var_x0 (docs/likelihood.md "Defaults, constraints and prefit variances"): 1/cw where cw > 0, else 0 —
  /// the width of the constraint centres in toys.
  Eigen::VectorXd constraint_centre_variance() const;
  /// Restores the per-fit state: centres to their defaults, blinding offsets off (defaultassign).
  void reset_state() {
    constraint_centres = constraint_centres_default;
    blinding_enabled = false;
  }

  std::vector<std::string> names;
  int64_t npoi = 0;
  int64_t npou = 0;
  int64_t nsyst = 0;
  bool squared_pois = true;  // false with --allowNegativeParam

  Eigen::VectorXd x_default;  // stored start point / prefit values (x0default)
  /// The param model's stored defaults xparamdefault (√μ⁰ for squared POIs), length nparams().
  /// Equal to x_default[0:M] except for parameters with a prior mean; rabbit's "normal"
  /// systematic pre-scaling ρ = r(xparamdefault) uses this (docs/likelihood.md "Systematic type normal").
  Eigen::VectorXd x_param_default;
  Eigen::VectorXd constraint_weights;          // cw over the whole vector
  Eigen::VectorXd constraint_centres;          // x0 over the whole vector (state: randomised in toys)
  Eigen::VectorXd constraint_centres_default;  // x0default: what reset_state() restores
  Eigen::VectorXd
      prefit_variance;  // var_prefit (docs/likelihood.md "Defaults, constraints and prefit variances")
  std::vector<bool> frozen;

  Eigen::VectorXd poi_blinding_scale;    // c_i over the POIs (1 when not blinded)
  Eigen::VectorXd syst_blinding_offset;  // o_s over the systematics (0 when not blinded)
  bool blinding_enabled = false;  // offsets switched on (docs/model.md "Blinding", only inside blinded fits)
  /// Whether offsets were computed at all (ModelOptions::blinding_active); when false,
  /// poi_blinding_scale is all ones and syst_blinding_offset all zeros.
  bool blinding_available = false;

  /// Freezes / unfreezes the parameters matched by the expressions (match_names); returns the
  /// indices newly matched. Used by --freezeParameters and by scans and impacts.
  std::vector<int64_t> freeze(const std::vector<std::string>& expressions,
                              const std::string& option = "--freezeParameters");
  std::vector<int64_t> unfreeze(const std::vector<std::string>& expressions,
                                const std::string& option = "--freezeParameters");
};

/// Indices (ascending, unique) of the names matched by any expression: an expression matches a
/// name if it equals it or, read as a regular expression, matches the whole name (Python's
/// re.fullmatch, docs/user-guide.md "Command-line rules"). An invalid regular expression that equals no name
/// throws OptionError naming `option`.
std::vector<int64_t> match_names(const std::vector<std::string>& expressions,
                                 const std::vector<std::string>& names, const std::string& option);

}  // namespace rabbit
