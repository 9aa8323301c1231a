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

}  // namespace rabbit::postfit
