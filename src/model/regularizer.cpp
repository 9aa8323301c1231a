#include "rabbit/model/regularizer.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <utility>

#include "rabbit/core/error.hpp"
#include "rabbit/io/fit_input_data.hpp"
#include "rabbit/model/model.hpp"
#include "rabbit/model/model_options.hpp"

namespace rabbit {

double Regularizer::penalty_observables(const Eigen::VectorXd&, Eigen::VectorXd*) const {
  throw Error(fmt::format("regularizer {} does not depend on the observables", name()));
}

Eigen::MatrixXd Regularizer::hessian_product_observables(const Eigen::VectorXd&,
                                                         const Eigen::MatrixXd&) const {
  throw Error(fmt::format("regularizer {} does not depend on the observables", name()));
}

double Regularizer::penalty_parameters(const Eigen::VectorXd&, Eigen::VectorXd*, const Eigen::MatrixXd*,
                                       Eigen::MatrixXd*, Eigen::MatrixXd*) const {
  throw Error(fmt::format("regularizer {} needs the observables", name()));
}

SvdRegularizer::SvdRegularizer(ObservableMapping mapping) : mapping_(std::move(mapping)) {
  const auto& shape = mapping_.shape;
  if (shape.empty() || shape.size() > 3)
    throw OptionError(fmt::format("-r/--regularization SVD {}: the mapping has {} axes; 1 to 3 are supported",
                                  mapping_.description, shape.size()));
  int64_t cells = 1;
  for (int64_t d : shape) cells *= d;
  if (cells != mapping_.matrix.rows())
    throw Error(fmt::format("-r/--regularization SVD {}: {} output bins but its axes give {}",
                            mapping_.description, mapping_.matrix.rows(), cells));
}

Eigen::VectorXd SvdRegularizer::map(const Eigen::VectorXd& nu_full) const {
  if (nu_full.size() != mapping_.matrix.cols())
    throw Error(fmt::format("SVD regulariser: yields of length {}, expected {}", nu_full.size(),
                            mapping_.matrix.cols()));
  return mapping_.matrix * nu_full;
}

Eigen::VectorXd SvdRegularizer::observable_footprint() const {
  return map_transpose(Eigen::VectorXd::Ones(mapping_.matrix.rows()));
}

Eigen::VectorXd SvdRegularizer::map_transpose(const Eigen::VectorXd& g) const {
  return mapping_.matrix.transpose() * g;
}

Eigen::VectorXd SvdRegularizer::laplacian(const Eigen::VectorXd& d) const {
  Eigen::VectorXd out = Eigen::VectorXd::Zero(d.size());
  const auto& shape = mapping_.shape;
  const int64_t dims = static_cast<int64_t>(shape.size());
  for (int64_t axis = 0; axis < dims; ++axis) {
    int64_t stride = 1;
    for (int64_t a = axis + 1; a < dims; ++a) stride *= shape[a];
    const int64_t n = shape[axis];
    if (n < 2) continue;  // a length-1 axis contributes 0
    for (int64_t c = 0; c < d.size(); ++c) {
      const int64_t i = (c / stride) % n;
      // Edge-repeating padding: the missing neighbour equals the cell itself.
      const double left = i > 0 ? d[c - stride] : d[c];
      const double right = i < n - 1 ? d[c + stride] : d[c];
      out[c] += left - 2.0 * d[c] + right;
    }
  }
  return out;
}

void SvdRegularizer::set_expectations(const Eigen::VectorXd&, const Eigen::VectorXd* observables) {
  if (!observables) throw Error("SVD regulariser: set_expectations needs the full expected yields");
  const Eigen::VectorXd y0 = map(*observables);
  inv_y0_.resize(y0.size());
  d_fixed_.resize(y0.size());
  for (int64_t c = 0; c < y0.size(); ++c) {
    inv_y0_[c] = y0[c] != 0.0 ? 1.0 / y0[c] : 0.0;
    d_fixed_[c] = y0[c] != 0.0 ? 0.0 : 1.0;
  }
  armed_ = true;
}

double SvdRegularizer::penalty_observables(const Eigen::VectorXd& nu_full, Eigen::VectorXd* grad) const {
  if (!armed_) throw Error("Regularizer SVD not armed; call set_expectations() before evaluating");
  const Eigen::VectorXd d = map(nu_full).cwiseProduct(inv_y0_) + d_fixed_;
  const Eigen::VectorXd lap = laplacian(d);
  if (grad) *grad += map_transpose(2.0 * inv_y0_.cwiseProduct(laplacian(lap)));
  return lap.squaredNorm();
}

Eigen::MatrixXd SvdRegularizer::hessian_product_observables(const Eigen::VectorXd& nu_full,
                                                            const Eigen::MatrixXd& U) const {
  if (!armed_) throw Error("Regularizer SVD not armed; call set_expectations() before evaluating");
  (void)nu_full;  // the penalty is quadratic in ν
  Eigen::MatrixXd out(mapping_.matrix.cols(), U.cols());
  for (int64_t k = 0; k < U.cols(); ++k) {
    const Eigen::VectorXd dd = map(U.col(k)).cwiseProduct(inv_y0_);
    out.col(k) = map_transpose(2.0 * inv_y0_.cwiseProduct(laplacian(laplacian(dd))));
  }
  return out;
}

std::vector<std::shared_ptr<Regularizer>> make_regularizers(const FitInputData& input,
                                                            const std::vector<RegularizationSpec>& specs,
                                                            const ObservableMappingBuilder& mapping) {
  std::vector<std::shared_ptr<Regularizer>> out;
  for (const auto& spec : specs) {
    if (spec.name == "SVD") {
      if (!mapping)
        throw Error("-r/--regularization: no mapping builder was given (ModelOptions::regularizer_mapping)");
      out.push_back(std::make_shared<SvdRegularizer>(mapping(input, spec.mapping)));
    } else
      throw OptionError(
          fmt::format("-r/--regularization: unknown regulariser '{}'; supported: SVD", spec.name));
  }
  return out;
}

double regularization_weight(const Model& model) {
  return std::exp(2.0 * model.options.regularization_strength);
}

bool needs_observables(const Model& model) {
  for (const auto& r : model.regularizers)
    if (r->needs_observables()) return true;
  return false;
}

double observable_penalty(const Model& model, const Eigen::VectorXd& nu_full, Eigen::VectorXd* grad) {
  const double w = regularization_weight(model);
  double f = 0.0;
  for (const auto& r : model.regularizers) {
    if (!r->needs_observables()) continue;
    Eigen::VectorXd g;
    if (grad) g.setZero(nu_full.size());
    f += w * r->penalty_observables(nu_full, grad ? &g : nullptr);
    if (grad) *grad += w * g;
  }
  return f;
}

Eigen::MatrixXd observable_penalty_hessian_product(const Model& model, const Eigen::VectorXd& nu_full,
                                                   const Eigen::MatrixXd& U) {
  const double w = regularization_weight(model);
  Eigen::MatrixXd out = Eigen::MatrixXd::Zero(nu_full.size(), U.cols());
  for (const auto& r : model.regularizers)
    if (r->needs_observables()) out += w * r->hessian_product_observables(nu_full, U);
  return out;
}

}  // namespace rabbit
