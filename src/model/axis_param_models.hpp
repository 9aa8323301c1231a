#pragma once
// Factories of the Axis-type param models (docs/model.md "Axis-type param models"), registered in
// kParamModels (src/model/param_models.cpp).
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "rabbit/model/param_model.hpp"

namespace rabbit {

struct FitInputData;
struct ParamModelSpec;

/// AxisNormModel CHANNEL PROCS AXES: one norm x² per (process, cell of AXES) in CHANNEL.
std::shared_ptr<const ParamModel> make_axis_norm(
    const FitInputData& input, const ParamModelSpec& spec,
    const std::vector<std::pair<std::string, double>>& expect_signal, bool allow_negative);

/// AxisExpModel CHANNEL PROCS SHAPE_AXIS CELL_AXES [SLOPE_AXES]: exp(lnAmpl + slope·x) along the shape axis.
std::shared_ptr<const ParamModel> make_axis_exp(
    const FitInputData& input, const ParamModelSpec& spec,
    const std::vector<std::pair<std::string, double>>& expect_signal, bool allow_negative);
/// AxisBernsteinModel CHANNEL PROCS SHAPE_AXIS CELL_AXES: c0 (1 − x) + c1 x, c = softplus of the parameters.
std::shared_ptr<const ParamModel> make_axis_bernstein(
    const FitInputData& input, const ParamModelSpec& spec,
    const std::vector<std::pair<std::string, double>>& expect_signal, bool allow_negative);

}  // namespace rabbit
