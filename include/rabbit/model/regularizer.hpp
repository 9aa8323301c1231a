#pragma once
// Regularisers (-r/--regularization, docs/model.md "The regularisation term"; docs/sharding-and-gpu.md
// "Regularisers and shards").
//
// A regulariser adds exp(2 τ) · penalty to the NLL, τ = --regularizationStrength (Model::options).
// Two kinds:
//  * needs_observables() == false: a penalty on the effective parameters ξ only. Evaluated once
//    per call inside GlobalTerms::xi_terms (single device and sharded alike).
//  * needs_observables() == true (the SVD regulariser): a penalty on the *full* predicted yields
//    ν_full (all B_f bins, masked channels included, after BB, docs/likelihood.md "Masked channels and full
//    evaluation"). GlobalTerms cannot see the yields, so the backend that computes ν_full adds it, exactly
//    like a data term on ν_full:
//      value   += observable_penalty(model, ν_full, &g)        (g = ∂/∂ν_full, weight included)
//      ∇_ξ     += 𝒥ᵀ g                                           (𝒥 = ∂ν_full/∂ξ)
//      H_ξ V   += 𝒥ᵀ observable_penalty_hessian_product(model, ν_full, 𝒥 V) + 𝒞(g) V
//    where 𝒞(g) = Σ_b g_b ∇²_ξ ν_b is the second-order yield term the backend already has.
//    Sharded fits refuse such regularisers up front.
// Every regulariser must be armed (set_expectations) at the start of each fit before it is
// evaluated; evaluating an un-armed one throws.
#include <Eigen/Core>
#include <memory>
#include <string>
#include <vector>

#include "rabbit/model/observable_mapping.hpp"

namespace rabbit {

struct Model;
struct FitInputData;
struct RegularizationSpec;

class Regularizer {
 public:
  virtual ~Regularizer() = default;
  virtual std::string name() const = 0;
  /// Defaults to true (the safe answer, docs/sharding-and-gpu.md "Regularisers and shards").
  virtual bool needs_observables() const { return true; }

  /// Arms the regulariser: ξ at the start point (offsets off) and, only if needs_observables(),
  /// the full yields there (β = β⁰); observables is null otherwise.
  virtual void set_expectations(const Eigen::VectorXd& xi_init, const Eigen::VectorXd* observables) = 0;
  virtual bool armed() const = 0;

  /// Unweighted penalty of an observable-dependent regulariser at ν_full; adds ∂/∂ν_full to grad
  /// when non-null.
  virtual double penalty_observables(const Eigen::VectorXd& nu_full, Eigen::VectorXd* grad) const;
  /// (∂²penalty/∂ν_full²) · U for U of shape B_f × k.
  virtual Eigen::MatrixXd hessian_product_observables(const Eigen::VectorXd& nu_full,
                                                      const Eigen::MatrixXd& U) const;
  /// Which bins of ν_full the penalty reads: per full bin (length B_f) the summed weight of the
  /// mapping onto it, non-zero where read; empty when the regulariser cannot say (then no
  /// bin-by-bin check of the shards applies to it).
  virtual Eigen::VectorXd observable_footprint() const { return {}; }

  /// Unweighted penalty of a parameter-only regulariser at ξ; adds to grad, HV (= H·V) and hess
  /// when non-null.
  virtual double penalty_parameters(const Eigen::VectorXd& xi, Eigen::VectorXd* grad,
                                    const Eigen::MatrixXd* V, Eigen::MatrixXd* HV,
                                    Eigen::MatrixXd* hess) const;
};

/// The SVD regulariser (docs/model.md "The regularisation term"): L = Σ_cells (Lap d)², d = y / y⁰ (1 where
/// y⁰ = 0), y = 𝓜 ν_full with 𝓜 the constant matrix of an ObservableMapping (a postfit mapping linear in
/// the yields, 1 to 3 axes). Lap is the discrete Laplacian with edge-repeating padding (sum of the 1-D
/// operators along every axis).
class SvdRegularizer final : public Regularizer {
 public:
  /// Throws OptionError naming -r/--regularization when the mapping has no axes or more than 3.
  explicit SvdRegularizer(ObservableMapping mapping);
  std::string name() const override { return "SVD"; }
  bool needs_observables() const override { return true; }
  void set_expectations(const Eigen::VectorXd& xi_init, const Eigen::VectorXd* observables) override;
  bool armed() const override { return armed_; }
  double penalty_observables(const Eigen::VectorXd& nu_full, Eigen::VectorXd* grad) const override;
  Eigen::MatrixXd hessian_product_observables(const Eigen::VectorXd& nu_full,
                                              const Eigen::MatrixXd& U) const override;
  /// 𝓜ᵀ applied to ones over the cells.
  Eigen::VectorXd observable_footprint() const override;

  /// y = 𝓜 ν_full (cells in row-major order of shape()).
  Eigen::VectorXd map(const Eigen::VectorXd& nu_full) const;
  /// 𝓜ᵀ g for g over the cells.
  Eigen::VectorXd map_transpose(const Eigen::VectorXd& g) const;
  /// Lap applied to a cell vector (symmetric operator).
  Eigen::VectorXd laplacian(const Eigen::VectorXd& d) const;
  const std::vector<int64_t>& shape() const { return mapping_.shape; }

 private:
  ObservableMapping mapping_;  // 𝓜 and the output shape
  Eigen::VectorXd inv_y0_;     // 1/y⁰, 0 where y⁰ = 0
  Eigen::VectorXd d_fixed_;    // 1 where y⁰ = 0 (d is constant there), else 0
  bool armed_ = false;
};

/// Builds the regularisers of the options, their mappings with `mapping` (ModelOptions::regularizer_mapping);
/// unknown names throw OptionError listing "SVD".
std::vector<std::shared_ptr<Regularizer>> make_regularizers(const FitInputData& input,
                                                            const std::vector<RegularizationSpec>& specs,
                                                            const ObservableMappingBuilder& mapping);

/// exp(2 τ) with τ = model.options.regularization_strength.
double regularization_weight(const Model& model);
/// Whether any regulariser of the model needs the full yields.
bool needs_observables(const Model& model);
/// Σ over the observable-dependent regularisers of exp(2τ)·penalty at ν_full; adds ∂/∂ν_full to
/// grad when non-null (grad must have length B_f).
double observable_penalty(const Model& model, const Eigen::VectorXd& nu_full, Eigen::VectorXd* grad);
/// Σ exp(2τ)·(∂²penalty/∂ν_full²)·U over the observable-dependent regularisers.
Eigen::MatrixXd observable_penalty_hessian_product(const Model& model, const Eigen::VectorXd& nu_full,
                                                   const Eigen::MatrixXd& U);

}  // namespace rabbit
