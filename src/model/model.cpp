#include "rabbit/model/model.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "rabbit/core/error.hpp"
#include "rabbit/core/logging.hpp"
#include "rabbit/model/blinding.hpp"
#include "rabbit/model/param_model.hpp"
#include "rabbit/model/regularizer.hpp"

namespace rabbit {

std::string to_string(BBType type) {
  switch (type) {
    case BBType::automatic:
      return "automatic";
    case BBType::gamma:
      return "gamma";
    case BBType::normal_additive:
      return "normal-additive";
    case BBType::normal_multiplicative:
      return "normal-multiplicative";
  }
  return "unknown";
}

namespace {

std::vector<std::string> names_at(const std::vector<std::string>& names, const std::vector<int64_t>& idx) {
  std::vector<std::string> out;
  for (auto i : idx) out.push_back(names[i]);
  return out;
}

/// docs/likelihood.md "Barlow–Beeston types and modes": automatic → normal-additive with --covarianceFit,
/// normal-multiplicative in full mode, gamma otherwise; --covarianceFit accepts only the normal types.
BBType resolve_bb_type(const ModelOptions& options) {
  BBType t = options.bb_type;
  if (t == BBType::automatic) {
    if (options.likelihood == DataLikelihood::covariance)
      t = BBType::normal_additive;
    else if (options.bb_mode == BBMode::full)
      t = BBType::normal_multiplicative;
    else
      t = BBType::gamma;
  }
  if (options.bin_by_bin_stat && options.likelihood == DataLikelihood::covariance && t == BBType::gamma)
    throw OptionError(
        "--covarianceFit with --binByBinStatType gamma: only normal-additive or normal-multiplicative are "
        "allowed "
        "(or --noBinByBinStat)");
  if (options.bin_by_bin_stat && t == BBType::gamma && options.bb_mode == BBMode::full)
    log().warn("--binByBinStatType gamma with --binByBinStatMode full is experimental");
  return t;
}

/// Blinding values of docs/model.md "Blinding" (computed only when some fit of the run is blinded).
void init_blinding(ParameterSpace& ps, const FitInputData& input, const ModelOptions& options) {
  ps.poi_blinding_scale = Eigen::VectorXd::Ones(ps.npoi);
  ps.syst_blinding_offset = Eigen::VectorXd::Zero(ps.nsyst);
  ps.blinding_enabled = false;
  ps.blinding_available = options.blinding_active;
  if (!options.blinding_active) return;

  // Candidates: all POIs, then the NOIs in hnoiidxs order.
  std::vector<std::string> candidates(ps.names.begin(), ps.names.begin() + ps.npoi);
  for (auto i : input.noiidxs) {
    if (i < 0 || i >= static_cast<int64_t>(input.systs.size()))
      throw InputError(fmt::format("{}: hnoiidxs entry {} is outside the {} systematics", input.filename, i,
                                   input.systs.size()));
    candidates.push_back(input.systs[i]);
  }
  const auto unblinded_idx = match_names(options.unblind, candidates, "--unblind");
  std::vector<bool> unblinded(candidates.size(), false);
  for (auto i : unblinded_idx) unblinded[i] = true;
  std::vector<std::string> unblinded_names;
  for (size_t i = 0; i < candidates.size(); ++i)
    if (unblinded[i] &&
        std::find(unblinded_names.begin(), unblinded_names.end(), candidates[i]) == unblinded_names.end())
      unblinded_names.push_back(candidates[i]);
  if (!unblinded_names.empty())
    log().info("Unblinding {} parameters: [{}]", unblinded_names.size(), fmt::join(unblinded_names, ", "));

  // Seeds: the name, or the first --blindingGroup expression that matches it.
  std::vector<std::string> seed(candidates.size());
  std::vector<int> group(candidates.size(), -1);
  for (size_t g = 0; g < options.blinding_groups.size(); ++g)
    for (auto i : match_names({options.blinding_groups[g]}, candidates, "--blindingGroup"))
      if (group[i] < 0) group[i] = static_cast<int>(g);
  std::vector<std::string> overlap;
  for (size_t i = 0; i < candidates.size(); ++i) {
    // rabbit compares by name, so a name unblinded anywhere counts everywhere.
    const bool name_unblinded =
        std::find(unblinded_names.begin(), unblinded_names.end(), candidates[i]) != unblinded_names.end();
    unblinded[i] = name_unblinded;
    seed[i] = group[i] >= 0 ? options.blinding_groups[group[i]] : candidates[i];
    if (name_unblinded && group[i] >= 0)
      overlap.push_back(fmt::format("{} (group '{}')", candidates[i], options.blinding_groups[group[i]]));
  }
  if (!overlap.empty())
    throw OptionError(
        fmt::format("--unblind and --blindingGroup both match: {}; refusing an ambiguous (un)blinding, "
                    "tighten the expressions",
                    fmt::join(overlap, ", ")));

  // Real data (any integer-valued bin of the file's hdata_obs, zeros included) gets "_data" seeds.
  bool data_is_integer = false;
  for (int64_t b = 0; b < input.data_obs.size() && !data_is_integer; ++b)
    data_is_integer = input.data_obs[b] == std::floor(input.data_obs[b]);
  const std::string suffix = data_is_integer ? "_data" : "";

  for (int64_t i = 0; i < ps.npoi; ++i) {
    if (unblinded[i]) continue;
    log().debug("Blind parameter {} (seed='{}')", candidates[i], seed[i]);
    ps.poi_blinding_scale[i] = std::exp(blinding_value(seed[i] + suffix));
  }
  for (size_t k = 0; k < input.noiidxs.size(); ++k) {
    const size_t i = static_cast<size_t>(ps.npoi) + k;
    if (unblinded[i]) continue;
    log().debug("Blind parameter {} (seed='{}')", candidates[i], seed[i]);
    ps.syst_blinding_offset[input.noiidxs[k]] = blinding_value(seed[i] + suffix);
  }
}

}  // namespace

std::shared_ptr<Model> build_model(std::shared_ptr<const FitInputData> input, const ModelOptions& options) {
  if (!input) throw Error("build_model: no input data");
  auto pm =
      make_param_model(*input, options.param_models, options.expect_signal, options.allow_negative_param);
  return build_model(std::move(input), options, std::move(pm));
}

std::shared_ptr<Model> build_model(std::shared_ptr<const FitInputData> input, const ModelOptions& options,
                                   std::shared_ptr<const ParamModel> pm) {
  if (!input) throw Error("build_model: no input data");
  if (!pm) throw Error("build_model: no param model");
  auto model = std::make_shared<Model>();
  model->options = options;

  // --covarianceFit without hdata_cov_inv: rabbit crashes (docs/differences-from-rabbit.md); we use the
  // intended fallback C⁻¹ = diag(1/variance), variance = hdata_var or else hdata_obs.
  if (options.likelihood == DataLikelihood::covariance && !input->data_cov_inv) {
    const Eigen::VectorXd var = input->data_var.value_or(input->data_obs);
    for (int64_t b = 0; b < var.size(); ++b)
      if (!(var[b] > 0.0))
        throw OptionError(
            fmt::format("--covarianceFit: {} has no hdata_cov_inv and the fallback diag(1/variance) needs "
                        "positive variances "
                        "(bin {} has {})",
                        input->filename, b, var[b]));
    log().warn("--covarianceFit: {} has no hdata_cov_inv, using the inverse of the data variances",
               input->filename);
    auto copy = std::make_shared<FitInputData>(*input);
    copy->data_cov_inv = Eigen::MatrixXd(var.cwiseInverse().asDiagonal());
    input = copy;
  }
  model->input = input;
  const FitInputData& in = *input;

  model->param_model = pm;

  ParameterSpace& ps = model->parameters;
  ps.npoi = pm->npoi();
  ps.npou = pm->npou();
  ps.nsyst = in.nsyst;
  ps.squared_pois = !pm->allow_negative_param();
  ps.names = pm->names();
  ps.names.insert(ps.names.end(), in.systs.begin(), in.systs.end());
  const int64_t m = ps.nparams();
  const int64_t n = ps.size();
  if (in.constraintweights.size() != in.nsyst)
    throw InputError(fmt::format("{}: hconstraintweights has length {}, expected nsyst = {}", in.filename,
                                 in.constraintweights.size(), in.nsyst));

  // Stored defaults of the param-model block: √μ⁰ for squared POIs, μ⁰ otherwise.
  const Eigen::VectorXd mu0 = pm->default_values();
  Eigen::VectorXd xparamdefault = mu0;
  if (ps.squared_pois)
    for (int64_t i = 0; i < ps.npoi; ++i) {
      if (mu0[i] < 0.0)
        throw OptionError(fmt::format("--expectSignal {} {}: a negative value needs --allowNegativeParam",
                                      ps.names[i], mu0[i]));
      xparamdefault[i] = std::sqrt(mu0[i]);
    }

  ps.x_param_default = xparamdefault;

  // θ⁰default with --setConstraintMinimum (exactly one systematic of that name).
  Eigen::VectorXd theta0 = Eigen::VectorXd::Zero(in.nsyst);
  for (const auto& [name, value] : options.set_constraint_minimum) {
    int64_t count = 0, where = -1;
    for (int64_t s = 0; s < in.nsyst; ++s)
      if (in.systs[s] == name) {
        ++count;
        where = s;
      }
    if (count != 1) {
      const bool is_param = std::find(ps.names.begin(), ps.names.begin() + m, name) != ps.names.begin() + m;
      throw OptionError(fmt::format(
          "--setConstraintMinimum {}: expected exactly one nuisance parameter of that name, found {}{}", name,
          count, is_param ? " (param-model parameters cannot be set this way; use --expectSignal)" : ""));
    }
    theta0[where] = value;
  }

  // Constraint weights and centres: priors of the param model, hconstraintweights.
  Eigen::VectorXd param_cw = Eigen::VectorXd::Zero(m);
  Eigen::VectorXd param_x0 = xparamdefault;
  const Eigen::VectorXd sigmas = pm->prior_sigmas();
  if (sigmas.size() > 0) {
    if (sigmas.size() != m)
      throw Error(fmt::format("param model declares {} prior widths for {} parameters", sigmas.size(), m));
    const Eigen::VectorXd means = pm->prior_means();
    for (int64_t i = 0; i < m; ++i) {
      if (!(std::isfinite(sigmas[i]) && sigmas[i] > 0.0)) continue;
      if (i < ps.npoi && ps.squared_pois)
        throw OptionError(fmt::format(
            "Gaussian prior on POI {} requires --allowNegativeParam (the stored parameter is sqrt(mu))",
            ps.names[i]));
      param_cw[i] = 1.0 / (sigmas[i] * sigmas[i]);
      if (means.size() == m && std::isfinite(means[i])) param_x0[i] = means[i];
      log().info("[paramPriors] {}: mean={:.4g} sigma={:.4g}", ps.names[i], param_x0[i], sigmas[i]);
    }
  }
  ps.constraint_weights.resize(n);
  ps.constraint_weights << param_cw, in.constraintweights;
  ps.constraint_centres_default.resize(n);
  ps.constraint_centres_default << param_x0, theta0;
  ps.constraint_centres = ps.constraint_centres_default;
  ps.x_default = ps.constraint_centres_default;  // every fit starts at x0default (docs/likelihood.md
                                                 // "Defaults, constraints and prefit variances")

  const double u = options.prefit_unconstrained_nuisance_uncertainty;
  ps.prefit_variance.resize(n);
  for (int64_t i = 0; i < n; ++i) {
    const double cw = ps.constraint_weights[i];
    ps.prefit_variance[i] = cw == 0.0 ? u * u : 1.0 / cw;
  }

  // Frozen parameters (docs/likelihood.md "Frozen parameters").
  ps.frozen.assign(n, false);
  if (!options.freeze_parameters.empty()) {
    log().debug("Freeze params with [{}]", fmt::join(options.freeze_parameters, ", "));
    const auto idx = ps.freeze(options.freeze_parameters);
    if (idx.empty())
      log().warn("--freezeParameters [{}] matches no parameter", fmt::join(options.freeze_parameters, ", "));
    log().debug("Updated list of frozen params: [{}]", fmt::join(names_at(ps.names, idx), ", "));
  }

  model->bb_type = resolve_bb_type(options);
  if (options.min_bb_kstat < 0.0)
    throw OptionError(fmt::format("--minBBKstat must be >= 0, got {}", options.min_bb_kstat));
  init_blinding(ps, in, options);

  model->regularizers = make_regularizers(in, options.regularization, options.regularizer_mapping);
  model->global_terms = make_global_terms(*model);
  return model;
}

void check_observed(const Model& model, const Eigen::VectorXd& nobs, const std::string& label) {
  if (nobs.size() != model.input->nbins)
    throw Error(
        fmt::format("{}: {} observed bins, the model has {}", label, nobs.size(), model.input->nbins));
  if (model.options.likelihood == DataLikelihood::chisq)
    for (int64_t b = 0; b < nobs.size(); ++b)
      if (!(nobs[b] > 0.0))
        throw OptionError(fmt::format(
            "--chisqFit requires all observed counts to be > 0, but {} has {} in bin {}", label, nobs[b], b));
}

void check_start_point(const Model& model, const Eigen::VectorXd& nobs, const Eigen::VectorXd& xi,
                       const std::function<Eigen::VectorXd()>& expected_at_start) {
  // Only the Poisson NLL has −n log ν; the chi2 likelihoods stay finite at ν = 0.
  if (model.options.likelihood != DataLikelihood::poisson || !model.param_model) return;
  const ParamModel& pm = *model.param_model;
  // The ABCD family starts at rates 1 (or the MC correction, positive where the templates are): there is
  // no per-process row to check, and no zero rate to report.
  if (!pm.bin_independent()) return;
  const int64_t M = pm.nparams();
  if (M == 0) return;
  const FitInputData& in = *model.input;
  const int64_t P = in.nproc;
  Eigen::VectorXd r;
  Eigen::MatrixXd jac;
  pm.rates(xi.head(M), r, &jac);
  if ((r.array() != 0.0).all()) return;
  const Eigen::VectorXd nu_start = expected_at_start();
  auto nominal = [&](int64_t b, int64_t p) -> double {
    const int64_t i = b * P + p;
    if (!in.sparse) return in.norm[i];
    auto it = std::lower_bound(in.norm_index.begin(), in.norm_index.end(), i);
    return it != in.norm_index.end() && *it == i ? in.norm[it - in.norm_index.begin()] : 0.0;
  };
  // The first process whose zero rate empties a bin with data, that bin, and how many such bins.
  int64_t proc = -1, first_bin = -1, nempty = 0;
  for (int64_t b = 0; b < in.nbins; ++b) {
    if (!(nobs[b] > 0.0) || nu_start[b] > 0.0) continue;
    for (int64_t p = 0; p < P; ++p)
      if (r[p] == 0.0 && nominal(b, p) != 0.0 && (proc < 0 || p == proc)) {
        if (proc < 0) proc = p, first_bin = b;
        ++nempty;
        break;
      }
  }
  if (proc < 0) return;
  std::vector<std::string> params;
  std::string hint = "NAME";
  const auto names = pm.names();
  for (int64_t j = 0; j < M; ++j)
    if (jac(proc, j) != 0.0) {
      if (params.empty()) hint = names[j];
      params.push_back(fmt::format("{} = {}", names[j], xi[j]));
    }
  std::string where = fmt::format("bin {}", first_bin);
  for (const auto& ch : in.channels)
    if (first_bin >= ch.start && first_bin < ch.stop)
      where = fmt::format("{} bin {}", ch.name, first_bin - ch.start);
  std::vector<std::string> models;
  for (const auto& spec : model.options.param_models) models.push_back(spec.name);
  if (models.empty()) models.push_back("Mu");
  throw OptionError(
      fmt::format("--paramModel {}: at the start point ({}) process '{}' has rate 0 and leaves {} bin(s) "
                  "with observed events "
                  "and no expected events (first: {}), where the Poisson NLL is infinite; start where its "
                  "rate is positive "
                  "with --expectSignal {} VALUE",
                  fmt::join(models, " "), fmt::join(params, ", "), in.procs[proc], nempty, where, hint));
}

Eigen::VectorXd prefit_values(const Model& model) {
  return model.parameters.x_default;
}

Eigen::VectorXd prefit_variances(const Model& model) {
  return model.parameters.prefit_variance;
}

Eigen::VectorXd prefit_uncertainties(const Model& model) {
  return model.parameters.prefit_variance.cwiseSqrt();
}

Eigen::MatrixXd prefit_covariance(const Model& model) {
  return Eigen::MatrixXd(model.parameters.prefit_variance.asDiagonal());
}

}  // namespace rabbit
