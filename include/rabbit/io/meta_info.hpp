#pragma once
// Interpretation of rabbit's unpickled `meta` dict (docs/input-reader.md "The meta pickle", "Per axis" to
// "Defaults without meta"): channels with their hist/boost-histogram axes, symmetric_tensor, systematic_type.
#include <cstdint>
#include <vector>

#include "rabbit/io/fit_input_data.hpp"
#include "rabbit/io/pickle.hpp"

namespace rabbit::io {

struct MetaInfo {
  std::vector<ChannelInfo> channels;  // in stored (bin-layout) order; start/stop not yet set
  bool symmetric_tensor = false;
  SystematicType systematic_type = SystematicType::log_normal;
};

/// Interprets the meta dict. Throws pickle::DecodeError ("meta: ...") when the structure is not
/// understood (the caller then falls back to the no-meta defaults), and a plain InputError for
/// content that is understood but refused (exponential_transform, unknown systematic_type).
MetaInfo interpret_meta(const pickle::Value& root);

/// One axis (wrapper object with state {"_ax": core object}). Throws pickle::DecodeError.
AxisInfo interpret_axis(const pickle::Value& axis);

/// rabbit's defaults without meta (docs/input-reader.md "Defaults without meta"): "ch0" = Integer(0, nbins,
/// name "obs"), and, if there are masked bins, "ch1_masked" = Integer(0, nbinsmasked, name "masked") with
/// masked = true.
std::vector<ChannelInfo> default_channels(int64_t nbins, int64_t nbinsmasked);

/// Bins of a channel: product over axes of (flow ? extent : size).
int64_t channel_bins(const ChannelInfo& channel);

/// Sets start/stop of each channel consecutively from 0.
void assign_channel_ranges(std::vector<ChannelInfo>& channels);

}  // namespace rabbit::io
