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

}  // namespace rabbit::postfit
