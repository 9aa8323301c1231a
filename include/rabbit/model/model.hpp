#pragma once
// Model: the input data plus everything the options make of it (parameter space, param model,
// BB configuration, global terms). Immutable apart from the observation and constraint-centre
// state that toys change; shared by all shards of a fit.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "rabbit/io/fit_input_data.hpp"
#include "rabbit/model/global_terms.hpp"
#include "rabbit/model/model_options.hpp"
#include "rabbit/model/parameter_space.hpp"

namespace rabbit {

class ParamModel;   // r_{bp}(π) and its derivatives (param_model.hpp)
class Regularizer;  // -r/--regularization penalties (regularizer.hpp)

struct Model {
  std::shared_ptr<const FitInputData> input;
  ModelOptions options;
  ParameterSpace parameters;
  std::shared_ptr<const ParamModel> param_model;
  std::shared_ptr<const GlobalTerms> global_terms;
  /// The BB type after resolving "automatic" (docs/likelihood.md "Barlow–Beeston types and modes").
  BBType bb_type = BBType::gamma;
  /// The regularisers of -r/--regularization (armed per fit, see regularizer.hpp).
  std::vector<std::shared_ptr<Regularizer>> regularizers;
};

/// Builds the model; throws OptionError naming the option for invalid settings. The result is
/// meant to stay where it is (its global terms refer to it): share the pointer, never copy *model.
std::shared_ptr<Model> build_model(std::shared_ptr<const FitInputData> input, const ModelOptions& options);
/// The same with a param model built elsewhere (options.param_models and expect_signal are then
/// not used for it); for models beyond the built-in ones and for tests (e.g. priors).
std::shared_ptr<Model> build_model(std::shared_ptr<const FitInputData> input, const ModelOptions& options,
                                   std::shared_ptr<const ParamModel> param_model);

/// Checks a data set about to be fitted (label names it in the message): with --chisqFit every
/// count must be > 0 (OptionError otherwise); lengths must equal nbins.
void check_observed(const Model& model, const Eigen::VectorXd& nobs, const std::string& label);

/// Checks the start point of a Poisson fit: xi are its effective parameters (π = xi[0:nparams]);
/// expected_at_start returns the expected yields of the observed bins there, and is called only
/// when the param model gives some process a zero rate at the start. Where the param model gives a
/// process a zero rate and that process alone was to fill bins with observed events (e.g.
/// --paramModel Mixture sig bkg at its default mixing 1, which zeroes bkg), the NLL is infinite
/// at the start and no fit can begin: throws OptionError naming --paramModel, the parameter and
/// the process. Other non-finite starts are left to the minimizer's own message.
void check_start_point(const Model& model, const Eigen::VectorXd& nobs, const Eigen::VectorXd& xi,
                       const std::function<Eigen::VectorXd()>& expected_at_start);

/// Prefit quantities (docs/likelihood.md "Defaults, constraints and prefit variances"): the stored start
/// values x0default, var_prefit, and its square root; the prefit covariance is diag(var_prefit).
Eigen::VectorXd prefit_values(const Model& model);
Eigen::VectorXd prefit_variances(const Model& model);
Eigen::VectorXd prefit_uncertainties(const Model& model);
Eigen::MatrixXd prefit_covariance(const Model& model);

/// Name of a BB type as on the command line ("gamma", "normal-multiplicative", ...).
std::string to_string(BBType type);

}  // namespace rabbit
