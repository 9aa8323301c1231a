#pragma once
// Internal-coordinate preconditioner (docs/minimizers.md "Preconditioner"): x = x_ref + T y with
// T = L⁻ᵀ on selected index blocks (L Lᵀ ≈ the block of a reference Hessian) and the identity
// elsewhere. It is a change of variables only; every solver sees it through an Objective.
#include <Eigen/Core>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "rabbit/minimize/objective.hpp"

namespace rabbit {

struct PreconditionerOptions {
  bool enabled = false;  ///< --precondition
  /// Index sets selected by --preconditionParams (one per expression; the caller resolves names,
  /// regexes and groups and removes frozen parameters). Empty = a single set of all coordinates.
  std::vector<std::vector<int64_t>> index_sets;
  std::vector<std::string> index_set_labels;  ///< names for the log, optional
  std::string blocks = "auto";                ///< auto | expressions | none
  double block_threshold = 0.1;               ///< --preconditionBlockThreshold
  std::string from = "hessian";               ///< hessian | gaussnewton (the caller supplies the matrix)
  double ridge = 1e-8;                        ///< --preconditionRidge
  std::string transform = "ridge";            ///< ridge | spectral
  /// Reference matrix at x (n × n). Unset: the objective's dense Hessian. The fitter sets it for
  /// --preconditionFrom gaussnewton.
  std::function<Eigen::MatrixXd(const Eigen::VectorXd& x)> reference_matrix;
};

/// Throws OptionError for an unknown blocks/transform/from value or a negative ridge/threshold.
void validate(const PreconditionerOptions& options);

class Preconditioner {
 public:
  struct Block {
    std::string label;
    std::vector<int64_t> indices;
    Eigen::MatrixXd L;     ///< lower factor, L Lᵀ ≈ reference block
    Eigen::MatrixXd Linv;  ///< cached L⁻¹
    double cond_before = 0, cond_after = 0;
  };

  /// Identity about x_ref (y = x − x_ref).
  explicit Preconditioner(Eigen::VectorXd x_ref) : x_ref_(std::move(x_ref)) {}

  /// Builds the blocks from the reference matrix at x_ref (docs/minimizers.md "Preconditioner", steps 2 and
  /// 4–6). Never throws on numerical trouble: blocks that cannot be used are skipped with a warning.
  static Preconditioner build(const Eigen::VectorXd& x_ref, const Eigen::MatrixXd& reference,
                              const PreconditionerOptions& options);

  bool is_identity() const { return blocks_.empty(); }
  const std::vector<Block>& blocks() const { return blocks_; }
  const Eigen::VectorXd& x_ref() const { return x_ref_; }

  Eigen::VectorXd to_physical(const Eigen::VectorXd& y) const;    ///< x_ref + T y
  Eigen::VectorXd from_physical(const Eigen::VectorXd& x) const;  ///< Lᵀ(x − x_ref) per block
  void apply_T(Eigen::Ref<Eigen::VectorXd> v) const;              ///< v ← T v
  void apply_Tt(Eigen::Ref<Eigen::VectorXd> v) const;             ///< v ← Tᵀ v
  void apply_T(Eigen::MatrixXd& V) const;                         ///< columnwise
  void apply_Tt(Eigen::MatrixXd& V) const;
  void hess_to_internal(Eigen::MatrixXd& H) const;             ///< H ← Tᵀ H T
  void grad_to_physical(Eigen::Ref<Eigen::VectorXd> g) const;  ///< g ← T⁻ᵀ g (inverse of Tᵀ)

 private:
  Eigen::VectorXd x_ref_;
  std::vector<Block> blocks_;
};

/// The objective in internal coordinates y: f(x_ref + T y), Tᵀg, TᵀHT. Holds references.
class PreconditionedObjective : public Objective {
 public:
  PreconditionedObjective(Objective& physical, const Preconditioner& pc) : physical_(physical), pc_(pc) {
    hvp_batch_ = physical.hvp_batch();
  }
  int64_t size() const override { return physical_.size(); }
  double value(const Eigen::VectorXd& y) override;
  double value_grad(const Eigen::VectorXd& y, Eigen::VectorXd& grad) override;
  double value_grad_hvp(const Eigen::VectorXd& y, const Eigen::MatrixXd& V, Eigen::VectorXd& grad,
                        Eigen::MatrixXd& HV) override;
  void hvp(const Eigen::VectorXd& y, const Eigen::MatrixXd& V, Eigen::MatrixXd& HV) override;
  double value_grad_hess(const Eigen::VectorXd& y, Eigen::VectorXd& grad, Eigen::MatrixXd& hess) override;

 private:
  Objective& physical_;
  const Preconditioner& pc_;
};

}  // namespace rabbit
