#pragma once
// The front door of a rabbit_fit run (docs/user-guide.md "Rules across options"): every rule on option
// values, across options, between the options and the input, and between the options and what the
// backends can do (rabbit/model/capabilities.hpp) is checked here, before the model or any shard is
// built, and refused in one line that names the options and the remedy. The model, the backends and
// make_fitter keep their own checks for library callers; from rabbit_fit they are not reached.
#include "rabbit/cli/options.hpp"
#include "rabbit/io/fit_input_data.hpp"
#include "rabbit/model/capabilities.hpp"

namespace rabbit::cli {

/// The rules on option values and across options, which need no input. parse_fit_options applies
/// them after its refusals; validate_run applies them again for options built in code.
/// Throws OptionError.
void check_option_rules(const FitOptions& options);

/// What this build's backends cannot evaluate, as known today (docs/sharding-and-gpu.md "Refused in
/// multi-device mode", "The CUDA backend", "BB centres (toys) and the BB derivative corner cases").
RunCapabilities known_capabilities();

/// The whole front door: check_option_rules, then the rules of multi-device runs and of the backend
/// choice against `capabilities`, then the rules between the options and the input. Throws
/// OptionError, or ResourceError when the options ask for a backend this build does not have.
void validate_run(const FitOptions& options, const FitInputData& input, const RunCapabilities& capabilities);

}  // namespace rabbit::cli
