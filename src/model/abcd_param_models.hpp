#pragma once
// Factories of the ABCD family of param models (docs/model.md "Bin-dependent param models"), registered
// in kParamModels (src/model/param_models.cpp).
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "rabbit/model/param_model.hpp"

namespace rabbit {

struct FitInputData;
struct ParamModelSpec;

using ExpectSignal = std::vector<std::pair<std::string, double>>;

std::shared_ptr<const ParamModel> make_abcd(const FitInputData& input, const ParamModelSpec& spec,
                                            const ExpectSignal& expect_signal, bool allow_negative);
std::shared_ptr<const ParamModel> make_extended_abcd(const FitInputData& input, const ParamModelSpec& spec,
                                                     const ExpectSignal& expect_signal, bool allow_negative);

}  // namespace rabbit
