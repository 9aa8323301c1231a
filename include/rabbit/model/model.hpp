#pragma once
// Model: the input data plus everything the options make of it (parameter space, param model,
// BB configuration, global terms). Immutable apart from the observation and constraint-centre
// state that toys change; shared by all shards of a fit.
#include <memory>

#include "rabbit/io/fit_input_data.hpp"
#include "rabbit/model/global_terms.hpp"
#include "rabbit/model/model_options.hpp"
#include "rabbit/model/parameter_space.hpp"

namespace rabbit {

class ParamModel;  // r_{bp}(π) and its derivatives (param_model.hpp)

struct Model {
  std::shared_ptr<const FitInputData> input;
  ModelOptions options;
  ParameterSpace parameters;
  std::shared_ptr<const ParamModel> param_model;
  std::shared_ptr<const GlobalTerms> global_terms;
  /// The BB type after resolving "automatic" (likelihood.md §4).
  BBType bb_type = BBType::gamma;
};

/// Builds the model; throws OptionError naming the option for invalid settings.
std::shared_ptr<Model> build_model(std::shared_ptr<const FitInputData> input, const ModelOptions& options);

}  // namespace rabbit
