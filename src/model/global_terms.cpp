#include "rabbit/model/global_terms.hpp"

#include <fmt/format.h>

#include <Eigen/Eigenvalues>
#include <Eigen/LU>
#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "rabbit/core/error.hpp"
#include "rabbit/core/logging.hpp"
#include "rabbit/model/model.hpp"
#include "rabbit/model/regularizer.hpp"

namespace rabbit {
namespace {

/// One external term with its parameter names resolved to indices and H symmetrised.
struct ResolvedExternalTerm {
  std::string name;
  std::vector<int64_t> index;
  Eigen::VectorXd grad;      // empty when absent
  Eigen::MatrixXd hess_sym;  // ½(H + Hᵀ), empty when absent
  double const_value = 0.0;  // added to every NLL (rabbit PR #147)
  double lognorm = 0.0;      // added to the full NLL only
};

/// rabbit PR #147's gaussian_scalars (docs/model.md "External terms"), on the symmetrised H:
/// const = ½ gᵀH⁻¹g (= ½ μᵀHμ for g = −Hμ; numpy's pinv with rcond = tol when H is singular) and
/// lognorm = ½(k ln 2π − ln det H), 0 with a warning when numpy's slogdet sign is not positive.
std::pair<double, double> gaussian_scalars(const Eigen::VectorXd& g, const Eigen::MatrixXd& hs,
                                           const std::string& name) {
  const Eigen::Index k = hs.rows();
  if (k == 0) return {0.0, 0.0};
  double c = 0.0;
  if (g.size() > 0 && (g.array() != 0.0).any()) {
    const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(hs);
    const Eigen::VectorXd ev = es.eigenvalues();
    const double amax = ev.cwiseAbs().maxCoeff();
    const double tol = static_cast<double>(k) * std::numeric_limits<double>::epsilon() * std::max(amax, 1.0);
    Eigen::VectorXd y;
    if (ev.cwiseAbs().minCoeff() > tol) {
      y = hs.partialPivLu().solve(g);
    } else {
      Eigen::VectorXd inv = Eigen::VectorXd::Zero(k);
      for (Eigen::Index i = 0; i < k; ++i)
        if (std::abs(ev[i]) > tol * amax) inv[i] = 1.0 / ev[i];
      y = es.eigenvectors() * inv.asDiagonal() * (es.eigenvectors().transpose() * g);
      if ((hs * y - g).norm() > 1e-8 * std::max(g.norm(), 1.0))
        log().warn(
            "External likelihood term '{}': the Hessian is singular and the gradient has a component "
            "outside its range, so the term cannot be centred; absolute NLL values remain offset",
            name);
    }
    c = 0.5 * g.dot(y);
  }
  const Eigen::PartialPivLU<Eigen::MatrixXd> lu(hs);
  double sign = static_cast<double>(lu.permutationP().determinant());
  double logdet = 0.0;
  for (Eigen::Index i = 0; i < k; ++i) {
    const double d = lu.matrixLU()(i, i);
    if (d == 0.0) sign = 0.0;
    if (d < 0.0) sign = -sign;
    logdet += std::log(std::abs(d));
  }
  if (sign <= 0.0) {
    log().warn(
        "External likelihood term '{}': the Hessian is not positive definite, so the term is not a "
        "normalisable Gaussian; its log-normalisation is left out of the full NLL",
        name);
    return {c, 0.0};
  }
  return {c, static_cast<double>(k) * 0.9189385332046727 - 0.5 * logdet};  // ½ ln 2π per dimension
}

class ModelGlobalTerms final : public GlobalTerms {
 public:
  explicit ModelGlobalTerms(const Model& model) : model_(model) {
    const auto& names = model.parameters.names;
    for (const auto& term : model.input->external_terms) {
      ResolvedExternalTerm r;
      r.name = term.name;
      for (const auto& p : term.params) {
        int64_t found = -1;
        for (size_t i = 0; i < names.size(); ++i)
          if (names[i] == p) {
            found = static_cast<int64_t>(i);
            break;
          }
        if (found < 0)
          throw InputError(
              fmt::format("{}: external term '{}' refers to parameter '{}', which is not in the model",
                          model.input->filename, term.name, p));
        r.index.push_back(found);
      }
      const int64_t n = static_cast<int64_t>(r.index.size());
      if (term.grad_values) {
        if (term.grad_values->size() != n)
          throw InputError(
              fmt::format("{}: external term '{}' has {} parameters but grad_values of length {}",
                          model.input->filename, term.name, n, term.grad_values->size()));
        r.grad = *term.grad_values;
      }
      if (term.hess) {
        if (term.hess->rows() != n || term.hess->cols() != n)
          throw InputError(fmt::format("{}: external term '{}' has {} parameters but a {}x{} Hessian",
                                       model.input->filename, term.name, n, term.hess->rows(),
                                       term.hess->cols()));
        r.hess_sym = 0.5 * (*term.hess + term.hess->transpose());
      }
      // Stored scalars win; missing ones come from a dense H only (a sparse one would need a sparse
      // solve and log-determinant in rabbit, which then warns and uses 0; grad-only terms: 0).
      r.const_value = term.const_value.value_or(0.0);
      r.lognorm = term.lognorm.value_or(0.0);
      if (!term.const_value || !term.lognorm) {
        if (term.hess && !term.hess_was_sparse) {
          const auto [c, ln] = gaussian_scalars(r.grad, r.hess_sym, term.name);
          if (!term.const_value) r.const_value = c;
          if (!term.lognorm) r.lognorm = ln;
        } else if (term.hess) {
          log().warn(
              "External likelihood term '{}' has a sparse Hessian and no stored const/lognorm, so it is "
              "not centred or normalised (as in rabbit); absolute NLL values are offset for this term",
              term.name);
        }
      }
      terms_.push_back(std::move(r));
    }
  }

  double xi_terms(const Eigen::VectorXd& xi, Eigen::VectorXd* grad, const Eigen::MatrixXd* V,
                  Eigen::MatrixXd* HV, Eigen::MatrixXd* hess) const override {
    const auto& cw = model_.parameters.constraint_weights;
    const auto& x0 = model_.parameters.constraint_centres;
    const Eigen::VectorXd diff = xi - x0;
    double f = 0.5 * (cw.array() * diff.array().square()).sum();
    if (grad) *grad += cw.cwiseProduct(diff);
    if (HV && V) *HV += cw.asDiagonal() * (*V);
    if (hess) hess->diagonal() += cw;
    bool any_parameter_regularizer = false;
    for (const auto& reg : model_.regularizers) any_parameter_regularizer |= !reg->needs_observables();
    if (any_parameter_regularizer) {
      const double w = regularization_weight(model_);
      const int64_t n = xi.size();
      for (const auto& reg : model_.regularizers) {
        if (reg->needs_observables()) continue;
        if (!reg->armed())
          throw Error(fmt::format("Regularizer {} not armed; call set_expectations() before evaluating",
                                  reg->name()));
        Eigen::VectorXd g = Eigen::VectorXd::Zero(n);
        Eigen::MatrixXd hv, h;
        if (HV && V) hv.setZero(n, V->cols());
        if (hess) h.setZero(n, n);
        f += w * reg->penalty_parameters(xi, grad ? &g : nullptr, V, (HV && V) ? &hv : nullptr,
                                         hess ? &h : nullptr);
        if (grad) *grad += w * g;
        if (HV && V) *HV += w * hv;
        if (hess) *hess += w * h;
      }
    }
    return f;
  }

  double x_terms(const Eigen::VectorXd& x, Eigen::VectorXd* grad, const Eigen::MatrixXd* V,
                 Eigen::MatrixXd* HV, Eigen::MatrixXd* hess) const override {
    double f = 0.0;
    for (const auto& t : terms_) {
      f += t.const_value;  // x-independent: derivatives unchanged
      const int64_t n = static_cast<int64_t>(t.index.size());
      Eigen::VectorXd xs(n);
      for (int64_t a = 0; a < n; ++a) xs[a] = x[t.index[a]];
      Eigen::VectorXd g = Eigen::VectorXd::Zero(n);
      if (t.grad.size() > 0) {
        f += t.grad.dot(xs);
        g += t.grad;
      }
      if (t.hess_sym.size() > 0) {
        const Eigen::VectorXd hx = t.hess_sym * xs;
        f += 0.5 * xs.dot(hx);
        g += hx;
      }
      // Duplicated names accumulate (scatter-add), as in rabbit.
      if (grad)
        for (int64_t a = 0; a < n; ++a) (*grad)[t.index[a]] += g[a];
      if (t.hess_sym.size() == 0) continue;
      if (HV && V) {
        Eigen::MatrixXd vs(n, V->cols());
        for (int64_t a = 0; a < n; ++a) vs.row(a) = V->row(t.index[a]);
        const Eigen::MatrixXd hv = t.hess_sym * vs;
        for (int64_t a = 0; a < n; ++a) HV->row(t.index[a]) += hv.row(a);
      }
      if (hess)
        for (int64_t a = 0; a < n; ++a)
          for (int64_t b = 0; b < n; ++b) (*hess)(t.index[a], t.index[b]) += t.hess_sym(a, b);
    }
    return f;
  }

  double x_terms_full_constant() const override {
    double c = 0.0;
    for (const auto& t : terms_) c += t.lognorm;
    return c;
  }

 private:
  const Model& model_;
  std::vector<ResolvedExternalTerm> terms_;
};

}  // namespace

std::shared_ptr<const GlobalTerms> make_global_terms(const Model& model) {
  return std::make_shared<ModelGlobalTerms>(model);
}

double constraint_full_nll_constant(const ParameterSpace& parameters) {
  double c = 0.0;
  const auto& cw = parameters.constraint_weights;
  for (int64_t i = 0; i < cw.size(); ++i)
    if (cw[i] > 0.0) c += 0.9189385332046727 - 0.5 * std::log(cw[i]);
  return c;
}

}  // namespace rabbit
