// ABCDIsoMT, ExtendedABCDIsoMT, SmoothABCDIsoMT and SmoothExtendedABCDIsoMT (docs/model.md "The IsoMT
// variants"): the ABCD family in one channel's (mt × relIso) plane, as rabbit's abcd_isomtmt_model.py
// places the regions: relIso 0 is the signal side, 1 the sideband; the last mt bin is the signal
// region, the one before it the sideband, the one before that the extra sideband; the smooth variants
// smooth along "pt".
//
//              relIso 0     relIso 1
//   mt extra:     Bx           Ax
//   mt side:      B            A
//   mt signal:    D            C
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "abcd_param_models.hpp"
#include "abcd_regions.hpp"
#include "rabbit/io/fit_input_data.hpp"
#include "rabbit/model/model_options.hpp"

namespace rabbit {
namespace {

using namespace abcd;

/// What the arguments name: [params:FILE | order:N] [yieldCorrection:0|1] PROCESS CHANNEL.
struct IsoMtArguments {
  std::string process, channel;
  int64_t order = 1;
  bool yield_correction = false;
  std::vector<double> initial;
};

enum class Options { none, order, order_or_params };

IsoMtArguments parse(const std::string& model, Options options, const std::vector<std::string>& args) {
  IsoMtArguments out;
  size_t t = 0;
  if (options == Options::order_or_params && t < args.size() && args[t].rfind("params:", 0) == 0)
    read_starting_values(model, args[t++], out.initial, out.order);
  else if (options != Options::none)
    take_integer_option(model, args, t, "order", out.order);
  int64_t yc = 0;
  take_integer_option(model, args, t, "yieldCorrection", yc);
  out.yield_correction = yc != 0;
  if (args.size() - t < 2) {
    const char* prefix = options == Options::none    ? ""
                         : options == Options::order ? "[order:N] "
                                                     : "[params:FILE | order:N] ";
    fail(model, fmt::format("expected {}[yieldCorrection:0|1] PROCESS CHANNEL, got {} argument(s)", prefix,
                            args.size()));
  }
  out.process = args[t++];
  out.channel = args[t++];
  if (t < args.size()) fail(model, fmt::format("unexpected argument(s) after CHANNEL: '{}'", args[t]));
  return out;
}

/// The regions of a family member in parameter order (free ones, then D), from the channel's mt axis.
Regions isomt_regions(const std::string& model, const FitInputData& in, const FamilyShape& shape,
                      const IsoMtArguments& a) {
  process_index(model, in, a.process);
  auto ch = std::find_if(in.channels.begin(), in.channels.end(),
                         [&](const ChannelInfo& c) { return c.name == a.channel; });
  if (ch == in.channels.end()) {
    std::vector<std::string> known;
    for (const auto& c : in.channels) known.push_back(c.name);
    fail(model, fmt::format("channel '{}' not found; channels: [{}]", a.channel, fmt::join(known, ", ")));
  }
  std::vector<std::string> axes;
  for (const auto& x : ch->axes) axes.push_back(x.name);
  for (const char* needed : {"mt", "relIso"})
    if (std::find(axes.begin(), axes.end(), needed) == axes.end())
      fail(model, fmt::format("channel '{}' has no axis named '{}'; axes: [{}]", a.channel, needed,
                              fmt::join(axes, ", ")));
  const int64_t nmt =
      std::find_if(ch->axes.begin(), ch->axes.end(), [](const AxisInfo& x) { return x.name == "mt"; })->size;
  const bool extended = shape.free_regions.size() == 5;
  if (nmt < (extended ? 3 : 2))
    fail(model, fmt::format("channel '{}': the mt axis has {} bin(s), fewer than {}", a.channel, nmt,
                            extended ? 3 : 2));
  auto region = [&](int64_t iso, int64_t mt) { return RegionSpec{a.channel, {{"relIso", iso}, {"mt", mt}}}; };
  const int64_t signal = nmt - 1, side = nmt - 2, extra = nmt - 3;
  Regions out;
  out.process = a.process;
  out.yield_correction = a.yield_correction;
  out.regions = {region(1, side), region(0, side), region(1, signal)};  // A, B, C
  if (extended) {
    out.regions.push_back(region(1, extra));  // Ax
    out.regions.push_back(region(0, extra));  // Bx
  }
  out.regions.push_back(region(0, signal));  // D
  return out;
}

FamilyShape named(const FamilyShape& shape, const char* name) {
  FamilyShape s = shape;
  s.name = name;
  return s;
}

}  // namespace

std::shared_ptr<const ParamModel> make_abcd_isomt(const FitInputData& input, const ParamModelSpec& spec,
                                                  const ExpectSignal&, bool) {
  static const FamilyShape shape = named(abcd_shape(), "ABCDIsoMT");
  const IsoMtArguments a = parse(shape.name, Options::none, spec.args);
  return make_abcd_family(input, shape, isomt_regions(shape.name, input, shape, a));
}

std::shared_ptr<const ParamModel> make_extended_abcd_isomt(const FitInputData& input,
                                                           const ParamModelSpec& spec, const ExpectSignal&,
                                                           bool) {
  static const FamilyShape shape = named(extended_abcd_shape(), "ExtendedABCDIsoMT");
  const IsoMtArguments a = parse(shape.name, Options::none, spec.args);
  return make_abcd_family(input, shape, isomt_regions(shape.name, input, shape, a));
}

std::shared_ptr<const ParamModel> make_smooth_abcd_isomt(const FitInputData& input,
                                                         const ParamModelSpec& spec, const ExpectSignal&,
                                                         bool) {
  static const FamilyShape shape = named(abcd_shape(), "SmoothABCDIsoMT");
  const IsoMtArguments a = parse(shape.name, Options::order, spec.args);
  return make_smooth_abcd_family(input, shape, isomt_regions(shape.name, input, shape, a), "pt", a.order, {});
}

std::shared_ptr<const ParamModel> make_smooth_extended_abcd_isomt(const FitInputData& input,
                                                                  const ParamModelSpec& spec,
                                                                  const ExpectSignal&, bool) {
  static const FamilyShape shape = named(extended_abcd_shape(), "SmoothExtendedABCDIsoMT");
  const IsoMtArguments a = parse(shape.name, Options::order_or_params, spec.args);
  return make_smooth_abcd_family(input, shape, isomt_regions(shape.name, input, shape, a), "pt", a.order,
                                 a.initial);
}

}  // namespace rabbit
