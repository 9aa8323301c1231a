#pragma once
// A param model maps the effective model parameters π = ξ[0:M] (POIs then model nuisances) to a
// multiplicative rate r_bp(π) per bin and process (docs/model.md "Param models"). The built-in models
// (Ones, Mu, Mixture and composites of them) are bin-independent: r is one row [nproc] broadcast over
// bins, given by rates()/rate_curvature(). The bin-range methods express any model, bin-dependent ones
// (rabbit's ABCD) included, as contractions over a range of bins [b0, b1) × processes, so that a shard
// evaluates only its own bins; their defaults derive them from the per-process rates.
#include <Eigen/Core>
#include <Eigen/SparseCore>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace rabbit {

class ParamModel {
 public:
  virtual ~ParamModel() = default;

  virtual int64_t npoi() const = 0;
  virtual int64_t npou() const = 0;
  int64_t nparams() const { return npoi() + npou(); }
  /// Parameter names, POIs first.
  virtual std::vector<std::string> names() const = 0;
  /// Effective default values μ⁰ (after --expectSignal), length nparams().
  virtual Eigen::VectorXd default_values() const = 0;

  /// r [nproc] at π, and ∂r/∂π [nproc × nparams] when jac is non-null.
  virtual void rates(const Eigen::VectorXd& pi, Eigen::VectorXd& r, Eigen::MatrixXd* jac) const = 0;
  /// Σ_p w_p ∂²r_p/∂π∂πᵀ [nparams × nparams] (zero for models linear in each process' rate).
  virtual Eigen::MatrixXd rate_curvature(const Eigen::VectorXd& pi, const Eigen::VectorXd& w) const = 0;

  /// Whether r is the same in every bin (Ones, Mu, Mixture). A bin-dependent model (the ABCD family)
  /// answers false; the CPU backend then evaluates it through the bin-range methods below, and
  /// rates()/rate_curvature() are not asked of it.
  virtual bool bin_independent() const { return true; }

  // ---- bin-range API: bins [b0, b1) of the full bin axis, nb = b1 − b0, P = nproc ----
  /// R [nb × P], R(b − b0, p) = r_bp(π).
  virtual void bin_rates(const Eigen::VectorXd& pi, int64_t b0, int64_t b1, Eigen::MatrixXd& r) const;
  /// Vector-Jacobian product: g [nparams] = Σ_bp w_bp ∂r_bp/∂π for w [nb × P].
  virtual void rates_vjp(const Eigen::VectorXd& pi, int64_t b0, int64_t b1, const Eigen::MatrixXd& w,
                         Eigen::VectorXd& g) const;
  /// Jacobian-vector products for v [nparams × k]: dr [nb·P × k], row (b − b0)·P + p, column j
  /// = Σ_i ∂r_bp/∂π_i v(i, j).
  virtual void rates_jvp(const Eigen::VectorXd& pi, int64_t b0, int64_t b1, const Eigen::MatrixXd& v,
                         Eigen::MatrixXd& dr) const;
  /// Curvature product: (Σ_bp w_bp ∂²r_bp/∂π∂πᵀ) v [nparams × k] for w [nb × P], v [nparams × k].
  virtual Eigen::MatrixXd curvature_product(const Eigen::VectorXd& pi, int64_t b0, int64_t b1,
                                            const Eigen::MatrixXd& w, const Eigen::MatrixXd& v) const;
  /// The Jacobian itself, sparse: J [nb·P × nparams], row (b − b0)·P + p = ∂r_bp/∂π. The backends read
  /// its rows per (bin, process) entry for the dense Hessian and the yield Jacobians; an ABCD rate
  /// depends on at most three parameters, so J has a few nonzeros per row.
  virtual Eigen::SparseMatrix<double, Eigen::RowMajor> rate_jacobian(const Eigen::VectorXd& pi, int64_t b0,
                                                                     int64_t b1) const;

  /// Whether the POIs enter linearly (--allowNegativeParam) rather than squared.
  virtual bool allow_negative_param() const { return false; }
  /// Whether r is linear in π (rabbit's is_linear of the param model).
  virtual bool is_linear() const { return nparams() == 0; }
  /// Optional Gaussian priors (docs/likelihood.md "Defaults, constraints and prefit variances"), length
  /// nparams() or empty: entries finite and > 0 constrain the parameter at that width; prior means default to
  /// the stored defaults when empty.
  virtual Eigen::VectorXd prior_sigmas() const { return {}; }
  virtual Eigen::VectorXd prior_means() const { return {}; }
};

struct FitInputData;
struct ParamModelSpec;

/// The registered param models (supported_param_models()); several specs make a composite (docs/model.md
/// "Param models"). Unknown names, bad arguments and unknown --expectSignal names throw OptionError.
std::shared_ptr<const ParamModel> make_param_model(
    const FitInputData& input, const std::vector<ParamModelSpec>& specs,
    const std::vector<std::pair<std::string, double>>& expect_signal, bool allow_negative_param);

/// Names accepted by make_param_model, in registry order.
const std::vector<std::string>& supported_param_models();
/// Whether the registered model of that name has rates that differ per bin (the ABCD family); false for
/// unknown names.
bool param_model_depends_on_bin(const std::string& name);

}  // namespace rabbit
