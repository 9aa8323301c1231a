#pragma once
// The postfit mappings as the mappings of -r/--regularization (docs/model.md "The regularisation term"): the
// CLI hands regularizer_mapping to the model as ModelOptions::regularizer_mapping, so that the model library
// reads y = A ν_full without depending on src/postfit.
#include <string>
#include <vector>

#include "rabbit/io/fit_input_data.hpp"
#include "rabbit/model/observable_mapping.hpp"

namespace rabbit::postfit {

/// The mapping of one -r occurrence (tokens: mapping name and arguments, as for -m): rabbit accepts any
/// mapping with one output channel; ours those linear in the yields (BaseMapping, Select, Project: A is then
/// constant), any of their arguments. Others, several output channels and process-selecting mappings throw
/// OptionError naming -r/--regularization, as do the mapping's own argument errors.
ObservableMapping regularizer_mapping(const FitInputData& input, const std::vector<std::string>& tokens);

}  // namespace rabbit::postfit
