// The registry of mappings by the name -m takes (docs/architecture.md "How to add a mapping").
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "mappings.hpp"
#include "rabbit/core/error.hpp"

namespace rabbit::postfit {
namespace {

using Factory = std::unique_ptr<Mapping> (*)(const FitInputData&, const std::vector<std::string>&);

struct Entry {
  const char* name;
  Factory make;
};

// One line per mapping, in the order --help and errors list them.
constexpr Entry kMappings[] = {
    {"BaseMapping", make_base_mapping},
    {"Project", make_project_mapping},
    {"Normalize", make_normalize_mapping},
    {"Select", make_select_mapping},
    {"Ratio", make_ratio_mapping},
    {"Normratio", make_normratio_mapping},
    {"Difference", make_difference_mapping},
    {"Asymmetry", make_asymmetry_mapping},
    {"AngularCoefficients", make_angular_coefficients_mapping},
    {"LamTung", make_lam_tung_mapping},
};

}  // namespace

std::vector<std::string> supported_mappings() {
  std::vector<std::string> names;
  for (const auto& e : kMappings) names.emplace_back(e.name);
  return names;
}

std::unique_ptr<Mapping> make_mapping(const FitInputData& input, const std::vector<std::string>& tokens) {
  if (tokens.empty()) throw OptionError("-m/--mapping: a mapping name is required");
  for (const auto& e : kMappings)
    if (tokens[0] == e.name) return e.make(input, std::vector<std::string>(tokens.begin() + 1, tokens.end()));
  throw OptionError(fmt::format("mapping {} is not implemented yet (this release supports {})", tokens[0],
                                fmt::join(supported_mappings(), ", ")));
}

}  // namespace rabbit::postfit
