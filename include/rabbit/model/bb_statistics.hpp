#pragma once
// The per-entry Barlow–Beeston statistics of a model (docs/likelihood.md "Per-entry BB statistics"),
// computed once from the input for every backend and for the postfit code: the resolved BB kind and
// mode, σ², √σ², k, the mask and the zero-variance flags, the default centres β⁰ and the constraint
// curvature of an entry. The centres themselves are state (toys) and stay with the shards.
#include <Eigen/Core>
#include <cstdint>
#include <vector>

#include "rabbit/likelihood/bb_constraint.hpp"
#include "rabbit/model/model.hpp"

namespace rabbit {

class BBStatistics {
 public:
  /// Throws InputError naming the file for full mode on per-bin (hkstat-only) input and OptionError
  /// for gamma with --covarianceFit.
  explicit BBStatistics(const Model& model);

  likelihood::BBKind kind() const { return kind_; }
  bool on() const { return kind_ != likelihood::BBKind::none; }
  bool full() const { return full_; }
  /// Lite statistics from per-bin sumw/sumw2 (legacy hkstat input): no zero-variance split.
  bool legacy_per_bin() const { return legacy_per_bin_; }
  /// Entries over all B_f bins: one per bin (lite) or per (bin, process) (full); 0 without BB.
  int64_t entries() const { return kstat_.size(); }

  const Eigen::VectorXd& kstat() const { return kstat_; }              ///< k_e = w̄²/σ² (1 where masked)
  const Eigen::VectorXd& sigma2() const { return sigma2_; }            ///< σ²_e
  const Eigen::VectorXd& sqrt_sigma2() const { return sqrt_sigma2_; }  ///< s_e = √σ²_e
  const std::vector<uint8_t>& mask() const { return mask_; }
  /// Per (bin, process) over B_f bins when BB is on: sumw2 = 0 (lite, per-process input); else 0.
  const std::vector<uint8_t>& zero_var() const { return zero_var_; }
  bool any_zero_var() const { return any_zero_var_; }

  /// β⁰ before any toy: 0 for normal-additive, else 1.
  double default_centre() const { return kind_ == likelihood::BBKind::normal_additive ? 0.0 : 1.0; }
  Eigen::VectorXd default_centres() const { return Eigen::VectorXd::Constant(entries(), default_centre()); }

  /// ∂²/∂β² of entry e's constraint at β with centre β⁰ (likelihood::bb_curvature).
  double curvature(int64_t e, double beta, double beta0) const {
    return likelihood::bb_curvature(kind_, mask_[e] != 0, kstat_[e], beta, beta0);
  }

 private:
  likelihood::BBKind kind_ = likelihood::BBKind::none;
  bool full_ = false;
  bool legacy_per_bin_ = false;
  Eigen::VectorXd kstat_, sigma2_, sqrt_sigma2_;
  std::vector<uint8_t> mask_, zero_var_;
  bool any_zero_var_ = false;
};

}  // namespace rabbit
