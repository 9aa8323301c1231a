#include "rabbit/model/parameter_space.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <regex>

#include "rabbit/core/error.hpp"

namespace rabbit {

void ParameterSpace::transform(const Eigen::VectorXd& x, Eigen::VectorXd& xi, Eigen::VectorXd& d1,
                               Eigen::VectorXd& d2) const {
  const int64_t n = size();
  if (x.size() != n)
    throw Error(
        fmt::format("ParameterSpace::transform: x has length {}, the model has {} parameters", x.size(), n));
  xi.resize(n);
  d1.resize(n);
  d2.resize(n);
  const bool scale_pois = blinding_enabled && poi_blinding_scale.size() == npoi;
  for (int64_t i = 0; i < npoi; ++i) {
    const double c = scale_pois ? poi_blinding_scale[i] : 1.0;
    if (squared_pois) {
      xi[i] = c * x[i] * x[i];
      d1[i] = 2.0 * c * x[i];
      d2[i] = 2.0 * c;
    } else {
      xi[i] = c * x[i];
      d1[i] = c;
      d2[i] = 0.0;
    }
  }
  const int64_t m = nparams();
  for (int64_t i = npoi; i < m; ++i) {
    xi[i] = x[i];
    d1[i] = 1.0;
    d2[i] = 0.0;
  }
  const bool shift_systs = blinding_enabled && syst_blinding_offset.size() == nsyst;
  for (int64_t s = 0; s < nsyst; ++s) {
    xi[m + s] = x[m + s] + (shift_systs ? syst_blinding_offset[s] : 0.0);
    d1[m + s] = 1.0;
    d2[m + s] = 0.0;
  }
  // Frozen parameters keep their value but the model part of the NLL sees no derivative (docs/likelihood.md
  // "Frozen parameters").
  for (int64_t i = 0; i < n && i < static_cast<int64_t>(frozen.size()); ++i) {
    if (frozen[i]) {
      d1[i] = 0.0;
      d2[i] = 0.0;
    }
  }
}

Eigen::VectorXd ParameterSpace::effective(const Eigen::VectorXd& x) const {
  Eigen::VectorXd xi, d1, d2;
  transform(x, xi, d1, d2);
  return xi;
}

int64_t ParameterSpace::index(const std::string& name) const {
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) return static_cast<int64_t>(i);
  return -1;
}

std::vector<int64_t> ParameterSpace::frozen_indices() const {
  std::vector<int64_t> out;
  for (size_t i = 0; i < frozen.size(); ++i)
    if (frozen[i]) out.push_back(static_cast<int64_t>(i));
  return out;
}

std::vector<int64_t> ParameterSpace::floating_indices() const {
  std::vector<int64_t> out;
  for (int64_t i = 0; i < size(); ++i)
    if (i >= static_cast<int64_t>(frozen.size()) || !frozen[i]) out.push_back(i);
  return out;
}

Eigen::VectorXd ParameterSpace::constraint_centre_variance() const {
  Eigen::VectorXd v(constraint_weights.size());
  for (int64_t i = 0; i < v.size(); ++i)
    v[i] = constraint_weights[i] > 0.0 ? 1.0 / constraint_weights[i] : 0.0;
  return v;
}

}  // namespace rabbit

namespace rabbit {

std::vector<int64_t> match_names(const std::vector<std::string>& expressions,
                                 const std::vector<std::string>& names, const std::string& option) {
  std::vector<std::optional<std::regex>> compiled;
  compiled.reserve(expressions.size());
  for (const auto& e : expressions) {
    try {
      compiled.emplace_back(std::regex(e, std::regex::ECMAScript));
    } catch (const std::regex_error& err) {
      // rabbit compiles every expression and fails on an invalid one; an exact name is still
      // accepted here, anything else is an option error.
      if (std::find(names.begin(), names.end(), e) == names.end())
        throw OptionError(
            fmt::format("{}: '{}' is neither a parameter name nor a valid regular expression ({})", option, e,
                        err.what()));
      compiled.emplace_back(std::nullopt);
    }
  }
  std::vector<int64_t> out;
  for (size_t i = 0; i < names.size(); ++i) {
    bool hit = false;
    for (size_t k = 0; k < expressions.size() && !hit; ++k)
      hit = names[i] == expressions[k] || (compiled[k] && std::regex_match(names[i], *compiled[k]));
    if (hit) out.push_back(static_cast<int64_t>(i));
  }
  return out;
}

std::vector<int64_t> ParameterSpace::freeze(const std::vector<std::string>& expressions,
                                            const std::string& option) {
  if (static_cast<int64_t>(frozen.size()) != size()) frozen.assign(size(), false);
  auto idx = match_names(expressions, names, option);
  for (auto i : idx) frozen[i] = true;
  return idx;
}

std::vector<int64_t> ParameterSpace::unfreeze(const std::vector<std::string>& expressions,
                                              const std::string& option) {
  if (static_cast<int64_t>(frozen.size()) != size()) frozen.assign(size(), false);
  auto idx = match_names(expressions, names, option);
  for (auto i : idx) frozen[i] = false;
  return idx;
}

}  // namespace rabbit
