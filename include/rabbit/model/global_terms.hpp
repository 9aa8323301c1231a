#pragma once
// GlobalTerms: what depends on the parameters only (constraints, parameter-only regulariser
// penalties, external likelihood terms). Evaluated once per call on the host, never per shard.
#include <Eigen/Core>
#include <memory>

namespace rabbit {

class GlobalTerms {
 public:
  virtual ~GlobalTerms() = default;

  /// The ξ-space part (constraint term, parameter-only penalties); the fitter applies the chain
  /// rule of T to it together with the shards. Adds to grad / HV / hess when they are non-null.
  virtual double xi_terms(const Eigen::VectorXd& xi, Eigen::VectorXd* grad, const Eigen::MatrixXd* V,
                          Eigen::MatrixXd* HV, Eigen::MatrixXd* hess) const = 0;

  /// The x-space part (external likelihood terms act on the stored x and are never frozen).
  virtual double x_terms(const Eigen::VectorXd& x, Eigen::VectorXd* grad, const Eigen::MatrixXd* V,
                         Eigen::MatrixXd* HV, Eigen::MatrixXd* hess) const = 0;

  /// What --fullNll adds to the x-space part: Σ_t lognorm_t of the external terms (rabbit PR #147,
  /// docs/model.md "External terms"). x_terms already holds each term's const.
  virtual double x_terms_full_constant() const { return 0.0; }
};

struct Model;
class ParameterSpace;

/// The global terms of a Model (docs/likelihood.md "Constraint term", docs/model.md "Global terms", "The
/// regularisation term" parameter-only part):
///  * ξ-space: ½ Σ cw_i (ξ_i − x0_i)² with the model's *current* constraint centres (toys change
///    them), plus exp(2τ)·penalty of the parameter-only regularisers (τ read at each call);
///  * x-space: Σ_t g_tᵀ x[P_t] + ½ x[P_t]ᵀ H_t x[P_t] + const_t of the input's external terms, names
///    resolved exactly against the parameter names (unknown names throw InputError naming the term);
///    const_t (and lognorm_t) as stored, else derived from a dense H_t as rabbit PR #147 does.
/// The returned object reads the Model by reference: it must not outlive it, and a copied Model
/// needs its own make_global_terms.
std::shared_ptr<const GlobalTerms> make_global_terms(const Model& model);

/// Constant that --fullNll adds to the constraint term: Σ_{cw_i>0} (½ ln 2π − ½ ln cw_i).
double constraint_full_nll_constant(const ParameterSpace& parameters);

}  // namespace rabbit
