#pragma once
// The saturated model of a Project mapping (rabbit's SaturatedProjectModel; docs/output-format.md
// "Saturated projection tests"): every output bin of the projection gets a free normalisation that
// multiplies all processes in the channel bins it sums. It is written here as an input with one
// unconstrained log-normal systematic per output bin (κ = 1 on every process of its bins), so that
// the ordinary model, fitter and minimizer fit it: rabbit's free factor s² and our e^θ cover the same
// positive numbers, so both fits reach the same minimum NLL (docs/differences-from-rabbit.md).
#include <cstdint>
#include <string>
#include <vector>

#include "rabbit/io/fit_input_data.hpp"
#include "rabbit/postfit/mapping.hpp"

namespace rabbit::postfit {

/// The bins of the input that each output bin of a projection sums.
struct BinGroups {
  std::vector<int64_t> group_of_bin;  // [nbinsfull]: the output bin a bin is summed into, or -1
  /// One per output bin, rabbit's parameter names: saturated_<channel>_<axis><index>_..., the kept
  /// axes in the order given, the last one running fastest.
  std::vector<std::string> names;
  int64_t size() const { return static_cast<int64_t>(names.size()); }
};

/// The groups of a Project mapping (name() "Project"). OptionError naming
/// --computeSaturatedProjectionTests and the mapping for what rabbit cannot fit either: a masked
/// channel (no data), a channel with flow bins, no kept axis.
BinGroups projection_groups(const FitInputData& input, const Mapping& mapping);

/// `input` (a full read) with one more systematic per group, appended after the file's own: named
/// groups.names[g], unconstrained, κ = 1 (κᵃ = 1, κᵈ = 0 when asymmetric) on every process of the
/// group's bins, 0 elsewhere. OptionError for a systematic_type normal input (an additive κ would not
/// scale the other variations) and for a name the input already has.
FitInputData with_free_group_scales(const FitInputData& input, const BinGroups& groups);

}  // namespace rabbit::postfit
