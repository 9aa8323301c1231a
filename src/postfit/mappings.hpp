#pragma once
// The built-in mappings' factories, one per mapping file, collected by the registry in
// mapping_registry.cpp (docs/architecture.md "How to add a mapping").
#include <memory>
#include <string>
#include <vector>

#include "rabbit/postfit/mapping.hpp"

namespace rabbit::postfit {

/// `-m BaseMapping`: every channel as it is (base_mapping.cpp).
std::unique_ptr<Mapping> make_base_mapping(const FitInputData& input, const std::vector<std::string>& args);
/// `-m Project CHANNEL [AXIS...]`: one channel summed onto the axes named (project_mapping.cpp).
std::unique_ptr<Mapping> make_project_mapping(const FitInputData& input,
                                              const std::vector<std::string>& args);
/// `-m Normalize CHANNEL [AXIS...]`: Project divided by the channel's total (project_mapping.cpp).
std::unique_ptr<Mapping> make_normalize_mapping(const FitInputData& input,
                                                const std::vector<std::string>& args);

/// `-m Select CHANNEL [PROCESSES] [SELECTION]`: one channel through a Term (select_mapping.cpp).
std::unique_ptr<Mapping> make_select_mapping(const FitInputData& input, const std::vector<std::string>& args);
/// `-m Ratio NUM DEN [NUMPROCS DENPROCS] [NUMSEL DENSEL]` and its kin Normratio, Difference, Asymmetry:
/// two Terms combined bin by bin (ratio_mapping.cpp).
std::unique_ptr<Mapping> make_ratio_mapping(const FitInputData& input, const std::vector<std::string>& args);
std::unique_ptr<Mapping> make_normratio_mapping(const FitInputData& input,
                                                const std::vector<std::string>& args);
std::unique_ptr<Mapping> make_difference_mapping(const FitInputData& input,
                                                 const std::vector<std::string>& args);
std::unique_ptr<Mapping> make_asymmetry_mapping(const FitInputData& input,
                                                const std::vector<std::string>& args);

/// `-m AngularCoefficients CHANNEL [PROCESSES SELECTION]`: A_i = σ_i/σ_UL on the channel's helicity axis,
/// and `-m LamTung ...`: A_0 − A_2 (angular_coefficients_mapping.cpp).
std::unique_ptr<Mapping> make_angular_coefficients_mapping(const FitInputData& input,
                                                           const std::vector<std::string>& args);
std::unique_ptr<Mapping> make_lam_tung_mapping(const FitInputData& input,
                                               const std::vector<std::string>& args);

}  // namespace rabbit::postfit
