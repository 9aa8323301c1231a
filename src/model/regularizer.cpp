#include "rabbit/model/regularizer.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>

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

SvdRegularizer::SvdRegularizer(const FitInputData& input, const std::vector<std::string>& mapping)
    : nbinsfull_(input.nbinsfull) {
  if (mapping.size() < 2 || (mapping[0] != "Select" && mapping[0] != "Project"))
    throw OptionError(
        fmt::format("-r/--regularization SVD: the mapping must be 'Select <channel>' or 'Project <channel> "
                    "<axis>...', got '{}'",
                    fmt::join(mapping, " ")));
  const std::string& channel_name = mapping[1];
  const ChannelInfo* channel = nullptr;
  for (const auto& c : input.channels)
    if (c.name == channel_name) channel = &c;
  if (!channel) {
    std::vector<std::string> known;
    for (const auto& c : input.channels) known.push_back(c.name);
    throw OptionError(fmt::format("-r/--regularization SVD {}: unknown channel '{}' (channels: [{}])",
                                  mapping[0], channel_name, fmt::join(known, ", ")));
  }
  std::vector<int64_t> in_shape;
  for (const auto& a : channel->axes) in_shape.push_back(channel->flow ? a.extent() : a.size);
  if (in_shape.empty()) in_shape.push_back(channel->nbins());
  int64_t total = 1;
  for (auto s : in_shape) total *= s;
  if (total != channel->nbins())
    throw InputError(fmt::format("{}: channel '{}' has {} bins but its axes give {}", input.filename,
                                 channel_name, channel->nbins(), total));
  std::vector<size_t> kept;  // input axes kept in the output, in output order
  if (mapping[0] == "Select") {
    if (mapping.size() > 2)
      throw OptionError(
          fmt::format("-r/--regularization SVD Select {}: axis selections/rebinning ('{}') are not "
                      "implemented for regularisers",
                      channel_name, mapping[2]));
    for (size_t a = 0; a < in_shape.size(); ++a) kept.push_back(a);
  } else {
    for (size_t k = 2; k < mapping.size(); ++k) {
      size_t found = channel->axes.size();
      for (size_t a = 0; a < channel->axes.size(); ++a)
        if (channel->axes[a].name == mapping[k]) found = a;
      if (found == channel->axes.size())
        throw OptionError(
            fmt::format("-r/--regularization SVD Project {}: unknown axis '{}'", channel_name, mapping[k]));
      kept.push_back(found);
    }
    if (kept.empty())
      throw OptionError(
          fmt::format("-r/--regularization SVD Project {}: no axes to project on", channel_name));
  }
  if (kept.size() > 3)
    throw OptionError(
        fmt::format("-r/--regularization SVD: at most 3 axes are supported, got {}", kept.size()));
  for (auto a : kept) shape_.push_back(in_shape[a]);
  channel_start_ = channel->start;
  cell_of_bin_.resize(total);
  std::vector<int64_t> idx(in_shape.size(), 0);
  for (int64_t b = 0; b < total; ++b) {
    int64_t cell = 0;
    for (size_t k = 0; k < kept.size(); ++k) cell = cell * shape_[k] + idx[kept[k]];
    cell_of_bin_[b] = cell;
    for (int64_t a = static_cast<int64_t>(in_shape.size()) - 1; a >= 0; --a) {
      if (++idx[a] < in_shape[a]) break;
      idx[a] = 0;
    }
  }
}

Eigen::VectorXd SvdRegularizer::map(const Eigen::VectorXd& nu_full) const {
  if (nu_full.size() != nbinsfull_)
    throw Error(fmt::format("SVD regulariser: yields of length {}, expected {}", nu_full.size(), nbinsfull_));
  int64_t ncells = 1;
  for (auto s : shape_) ncells *= s;
  Eigen::VectorXd y = Eigen::VectorXd::Zero(ncells);
  for (size_t b = 0; b < cell_of_bin_.size(); ++b) y[cell_of_bin_[b]] += nu_full[channel_start_ + b];
  return y;
}

Eigen::VectorXd SvdRegularizer::observable_footprint() const {
  int64_t cells = 1;
  for (int64_t d : shape_) cells *= d;
  return map_transpose(Eigen::VectorXd::Ones(cells));
}

Eigen::VectorXd SvdRegularizer::map_transpose(const Eigen::VectorXd& g) const {
  Eigen::VectorXd out = Eigen::VectorXd::Zero(nbinsfull_);
  for (size_t b = 0; b < cell_of_bin_.size(); ++b) out[channel_start_ + b] = g[cell_of_bin_[b]];
  return out;
}

Eigen::VectorXd SvdRegularizer::laplacian(const Eigen::VectorXd& d) const {
  Eigen::VectorXd out = Eigen::VectorXd::Zero(d.size());
  const int64_t dims = static_cast<int64_t>(shape_.size());
  for (int64_t axis = 0; axis < dims; ++axis) {
    int64_t stride = 1;
    for (int64_t a = axis + 1; a < dims; ++a) stride *= shape_[a];
    const int64_t n = shape_[axis];
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
  Eigen::MatrixXd out(nbinsfull_, U.cols());
  for (int64_t k = 0; k < U.cols(); ++k) {
    const Eigen::VectorXd dd = map(U.col(k)).cwiseProduct(inv_y0_);
    out.col(k) = map_transpose(2.0 * inv_y0_.cwiseProduct(laplacian(laplacian(dd))));
  }
  return out;
}

std::vector<std::shared_ptr<Regularizer>> make_regularizers(const FitInputData& input,
                                                            const std::vector<RegularizationSpec>& specs) {
  std::vector<std::shared_ptr<Regularizer>> out;
  for (const auto& spec : specs) {
    if (spec.name == "SVD")
      out.push_back(std::make_shared<SvdRegularizer>(input, spec.mapping));
    else
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
