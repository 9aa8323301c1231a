#include "saturated_projection_tests.hpp"

#include <fmt/format.h>

#include <cmath>
#include <optional>

#include "rabbit/core/error.hpp"
#include "rabbit/core/logging.hpp"
#include "rabbit/postfit/saturated_projection.hpp"
#include "rabbit/postfit/uncertainties.hpp"

namespace rabbit::cli {

using Eigen::MatrixXd;
using Eigen::VectorXd;

struct SaturatedProjectionTests::Saturated {
  explicit Saturated(const FitOptions& o) : ctx(o) {}
  FitContext ctx;
  std::unique_ptr<FitSession> session;
  int64_t ndf = 0;  // free normalisations: rabbit's saturated_model.npoi
};

SaturatedProjectionTests::SaturatedProjectionTests(FitContext& nominal) : nominal_(nominal) {
  const FitOptions& o = nominal.options;
  const Model& model = *nominal.model;
  // rabbit puts the saturated normalisations among the POIs, squared; its composite param model
  // refuses POIs that enter linearly beside them.
  if (model.options.allow_negative_param && model.parameters.npoi > 0)
    throw OptionError(
        "--computeSaturatedProjectionTests cannot be combined with --allowNegativeParam (rabbit's composite "
        "of "
        "the param model and the saturated model refuses POIs that enter linearly beside squared ones)");
  if (!model.regularizers.empty())
    throw OptionError("--computeSaturatedProjectionTests cannot be combined with -r/--regularization");
  for (const auto& tokens : o.mappings) {
    if (tokens.empty() || tokens[0] != "Project") continue;
    const auto mapping = postfit::make_mapping(*nominal.input, tokens);
    if (by_key_.count(mapping->key())) continue;  // one result per key, as the result file
    const postfit::BinGroups groups = postfit::projection_groups(*nominal.input, *mapping);
    auto s = std::make_unique<Saturated>(o);
    s->ndf = groups.size();
    s->ctx.input = std::make_shared<FitInputData>(postfit::with_free_group_scales(*nominal.input, groups));
    // The nominal model's options (blinding, frozen parameters, constraint minima, --expectSignal)
    // apply unchanged; the new parameters' names follow the file's systematics.
    s->ctx.model = build_model(s->ctx.input, model.options);
    make_run_fitter(s->ctx);
    describe_layout(s->ctx);
    s->session = std::make_unique<FitSession>(s->ctx);
    by_key_.emplace(mapping->key(), std::move(s));
  }
}

SaturatedProjectionTests::~SaturatedProjectionTests() = default;

// What rabbit's deepcopy of the fitter carries into the saturated fit: the fit's data, the constraint
// centres and BB centres a toy drew, the blinding state. The file's parameters come first in the
// saturated layout, so the centres copy over one to one; the new ones have none (unconstrained).
void SaturatedProjectionTests::copy_fit_state(Saturated& s) const {
  const ParameterSpace& ps = nominal_.model->parameters;
  ParameterSpace& sp = s.ctx.model->parameters;
  sp.reset_state();
  sp.constraint_centres.head(ps.size()) = ps.constraint_centres;
  sp.blinding_enabled = ps.blinding_enabled;
  Fitter& fitter = *s.ctx.fitter;
  fitter.set_observed(nominal_.fitter->observed(), nominal_.fitter->observed_variances());
  YieldModel& from = nominal_.yield_model();
  if (from.has_bb() && from.beta_centres() != s.ctx.yield_model().beta_centres())
    fitter.set_beta_centres(from.beta_centres());
}

void SaturatedProjectionTests::write(const postfit::Mapping& mapping, result::Group group,
                                     const VectorXd& x) {
  const auto it = by_key_.find(mapping.key());
  if (it == by_key_.end()) return;
  Saturated& s = *it->second;
  copy_fit_state(s);
  // rabbit starts the saturated fit at the defaults (xdefaultassign), not at the nominal minimum.
  const VectorXd x0 = s.ctx.model->parameters.x_default;
  s.session->forget_fit_hessian();
  MinimizerResult mr;
  const VectorXd xs = s.session->minimize_full(x0, false, &mr);
  const double nll = s.ctx.fitter->value(xs);
  std::optional<double> edm;
  if (!nominal_.options.no_hessian) {
    VectorXd g;
    MatrixXd hess;
    if (!s.session->take_fit_hessian(g, hess)) s.ctx.fitter->value_grad_hess(xs, g, hess);
    edm = postfit::covariance_from_hessian(hess, g, s.ctx.layout.floating, prefit_covariance(*s.ctx.model),
                                           s.ctx.fitter->dense_linalg())
              .edm;
    log().info("edmval: {}", py_float(*edm));
  }
  // docs/output-format.md "Saturated projection tests": the nominal fit's nllvalreduced (the same
  // evaluation write_likelihood_values stores) less the saturated one.
  const double chi2 = 2.0 * (nominal_.fitter->value(x) - nll);
  log().info("Saturated chi2:");
  log().info("    ndof: {}", s.ndf);
  log().info("    2*deltaNLL: {}", std::round(100.0 * chi2) / 100.0);
  log().info("    p-value: {}%",
             std::round(10000.0 * postfit::chi2_survival(chi2, static_cast<double>(s.ndf))) / 100.0);
  result::write_scalar(group, "ndf_saturated", s.ndf);
  result::write_scalar(group, "chi2_saturated", chi2);
  if (edm) result::write_scalar(group, "edmval_saturated", *edm);
}

}  // namespace rabbit::cli
