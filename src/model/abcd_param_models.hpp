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
namespace abcd {
struct FamilyShape;
struct Regions;
}  // namespace abcd

using ExpectSignal = std::vector<std::pair<std::string, double>>;

std::shared_ptr<const ParamModel> make_abcd(const FitInputData& input, const ParamModelSpec& spec,
                                            const ExpectSignal& expect_signal, bool allow_negative);
std::shared_ptr<const ParamModel> make_extended_abcd(const FitInputData& input, const ParamModelSpec& spec,
                                                     const ExpectSignal& expect_signal, bool allow_negative);
std::shared_ptr<const ParamModel> make_smooth_abcd(const FitInputData& input, const ParamModelSpec& spec,
                                                   const ExpectSignal& expect_signal, bool allow_negative);
std::shared_ptr<const ParamModel> make_smooth_extended_abcd(const FitInputData& input,
                                                            const ParamModelSpec& spec,
                                                            const ExpectSignal& expect_signal,
                                                            bool allow_negative);
/// ABCDIsoMT, ExtendedABCDIsoMT, SmoothABCDIsoMT, SmoothExtendedABCDIsoMT: the regions in a channel's
/// (mt × relIso) plane (abcd_isomt_param_models.cpp).
std::shared_ptr<const ParamModel> make_abcd_isomt(const FitInputData& input, const ParamModelSpec& spec,
                                                  const ExpectSignal& expect_signal, bool allow_negative);
std::shared_ptr<const ParamModel> make_extended_abcd_isomt(const FitInputData& input,
                                                           const ParamModelSpec& spec,
                                                           const ExpectSignal& expect_signal,
                                                           bool allow_negative);
std::shared_ptr<const ParamModel> make_smooth_abcd_isomt(const FitInputData& input,
                                                         const ParamModelSpec& spec,
                                                         const ExpectSignal& expect_signal,
                                                         bool allow_negative);
std::shared_ptr<const ParamModel> make_smooth_extended_abcd_isomt(const FitInputData& input,
                                                                  const ParamModelSpec& spec,
                                                                  const ExpectSignal& expect_signal,
                                                                  bool allow_negative);

/// A member of the family from regions already read: per-bin parameters (ABCD, ExtendedABCD) ...
std::shared_ptr<const ParamModel> make_abcd_family(const FitInputData& input, const abcd::FamilyShape& shape,
                                                   const abcd::Regions& regions);
/// ... or exponential Chebyshev polynomials of the given order along the smoothing axis (SmoothABCD,
/// SmoothExtendedABCD), starting at `initial` (empty: zeros).
std::shared_ptr<const ParamModel> make_smooth_abcd_family(const FitInputData& input,
                                                          const abcd::FamilyShape& shape,
                                                          const abcd::Regions& regions,
                                                          const std::string& smoothing_axis, int64_t order,
                                                          const std::vector<double>& initial);

}  // namespace rabbit
