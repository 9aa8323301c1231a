#include "rabbit/model/global_terms.hpp"

#include <cmath>

#include <fmt/format.h>

#include "rabbit/core/error.hpp"
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
};

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
          throw InputError(fmt::format("{}: external term '{}' refers to parameter '{}', which is not in the model",
                                       model.input->filename, term.name, p));
        r.index.push_back(found);
      }
      const int64_t n = static_cast<int64_t>(r.index.size());
      if (term.grad_values) {
        if (term.grad_values->size() != n)
          throw InputError(fmt::format("{}: external term '{}' has {} parameters but grad_values of length {}",
                                       model.input->filename, term.name, n, term.grad_values->size()));
        r.grad = *term.grad_values;
      }
      if (term.hess) {
        if (term.hess->rows() != n || term.hess->cols() != n)
          throw InputError(fmt::format("{}: external term '{}' has {} parameters but a {}x{} Hessian",
                                       model.input->filename, term.name, n, term.hess->rows(), term.hess->cols()));
        r.hess_sym = 0.5 * (*term.hess + term.hess->transpose());
      }
      terms_.push_back(std::move(r));
    }
  }

  double xi_terms(const Eigen::VectorXd& xi, Eigen::VectorXd* grad, const Eigen::MatrixXd* V, Eigen::MatrixXd* HV,
                  Eigen::MatrixXd* hess) const override {
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
          throw Error(fmt::format("Regularizer {} not armed; call set_expectations() before evaluating", reg->name()));
        Eigen::VectorXd g = Eigen::VectorXd::Zero(n);
        Eigen::MatrixXd hv, h;
        if (HV && V) hv.setZero(n, V->cols());
        if (hess) h.setZero(n, n);
        f += w * reg->penalty_parameters(xi, grad ? &g : nullptr, V, (HV && V) ? &hv : nullptr, hess ? &h : nullptr);
        if (grad) *grad += w * g;
        if (HV && V) *HV += w * hv;
        if (hess) *hess += w * h;
      }
    }
    return f;
  }

  double x_terms(const Eigen::VectorXd& x, Eigen::VectorXd* grad, const Eigen::MatrixXd* V, Eigen::MatrixXd* HV,
                 Eigen::MatrixXd* hess) const override {
    double f = 0.0;
    for (const auto& t : terms_) {
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
