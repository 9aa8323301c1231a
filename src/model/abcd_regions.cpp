// The regions of the ABCD family of param models (docs/model.md "Bin-dependent param models"): reading
// them from the command line, finding their bins, and the MC correction of yieldCorrection:1.
#include "abcd_regions.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <cmath>

#include "rabbit/io/fit_input_data.hpp"
#include "rabbit/io/hdf5_reader.hpp"

namespace rabbit::abcd {

const FamilyShape& abcd_shape() {
  static const FamilyShape shape{"ABCD", {"A", "B", "C"}, {0, 1, 2}, {{0, 1}, {2, 1}}, {{1, 1}}};
  return shape;
}

const FamilyShape& extended_abcd_shape() {
  static const FamilyShape shape{"ExtendedABCD",
                                 {"A", "B", "C", "Ax", "Bx"},
                                 {3, 4, 0, 1, 2},
                                 {{2, 1}, {3, 1}, {1, 2}},
                                 {{4, 1}, {0, 2}}};
  return shape;
}

void fail(const std::string& model, const std::string& what) {
  throw OptionError(fmt::format("--paramModel {}: {}", model, what));
}

int64_t parse_int(const std::string& model, const std::string& token, const std::string& value) {
  int64_t v = 0;
  const auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  if (ec != std::errc() || ptr != value.data() + value.size() || value.empty())
    fail(model, fmt::format("'{}': '{}' is not an integer", token, value));
  return v;
}

bool take_integer_option(const std::string& model, const std::vector<std::string>& args, size_t& t,
                         const std::string& key, int64_t& value) {
  const std::string prefix = key + ":";
  if (t >= args.size() || args[t].rfind(prefix, 0) != 0) return false;
  value = parse_int(model, args[t], args[t].substr(prefix.size()));
  ++t;
  return true;
}

Regions parse_process_and_regions(const std::string& model, const FamilyShape& shape, const FitInputData& in,
                                  const std::vector<std::string>& args, size_t t, bool yield_correction) {
  Regions out;
  out.yield_correction = yield_correction;
  if (t >= args.size()) fail(model, "expected a process name, got '<end>'");
  out.process = args[t++];
  process_index(model, in, out.process);
  // regions in command-line order: the free ones as cli_order lists them, then D
  const size_t nregions = shape.nregions();
  out.regions.resize(nregions);
  for (size_t k = 0; k < nregions; ++k) {
    const size_t slot = k + 1 < nregions ? static_cast<size_t>(shape.cli_order[k]) : nregions - 1;
    const std::string label = slot + 1 < nregions ? shape.free_regions[slot] : "D";
    if (t >= args.size() || args[t].find(':') != std::string::npos)
      fail(model, fmt::format("expected a channel name for region {}, got '{}'", label,
                              t < args.size() ? args[t] : "<end>"));
    out.regions[slot].channel = args[t++];
    while (t < args.size() && args[t].find(':') != std::string::npos) {
      const auto colon = args[t].find(':');
      out.regions[slot].fixed.emplace_back(args[t].substr(0, colon),
                                           parse_int(model, args[t], args[t].substr(colon + 1)));
      ++t;
    }
  }
  if (t < args.size()) fail(model, fmt::format("unexpected argument(s) after region D: '{}'", args[t]));
  return out;
}

int64_t process_index(const std::string& model, const FitInputData& in, const std::string& process) {
  auto pit = std::find(in.procs.begin(), in.procs.end(), process);
  if (pit == in.procs.end())
    fail(model, fmt::format("process '{}' not found; processes: [{}]", process, fmt::join(in.procs, ", ")));
  return pit - in.procs.begin();
}

ResolvedRegion resolve_region(const std::string& model, const FitInputData& in, const RegionSpec& r) {
  auto ch = std::find_if(in.channels.begin(), in.channels.end(),
                         [&](const ChannelInfo& c) { return c.name == r.channel; });
  if (ch == in.channels.end()) {
    std::vector<std::string> known;
    for (const auto& c : in.channels) known.push_back(c.name);
    fail(model, fmt::format("channel '{}' not found; channels: [{}]", r.channel, fmt::join(known, ", ")));
  }
  if (ch->flow)
    fail(model, fmt::format("channel '{}' has flow bins, which the ABCD regions do not address", r.channel));
  ResolvedRegion out{ch - in.channels.begin(), std::vector<int64_t>(ch->axes.size(), -1)};
  for (const auto& [ax, val] : r.fixed) {
    auto it = std::find_if(ch->axes.begin(), ch->axes.end(), [&](const AxisInfo& a) { return a.name == ax; });
    if (it == ch->axes.end()) {
      std::vector<std::string> known;
      for (const auto& a : ch->axes) known.push_back(a.name);
      fail(model, fmt::format("axis '{}' not found in channel '{}'; axes: [{}]", ax, r.channel,
                              fmt::join(known, ", ")));
    }
    if (val < 0 || val >= it->size)
      fail(model, fmt::format("'{}:{}': index outside the {} bins of axis '{}' of channel '{}'", ax, val,
                              it->size, ax, r.channel));
    out.fixed[it - ch->axes.begin()] = val;
  }
  return out;
}

int64_t global_bin(const FitInputData& in, int64_t channel, const std::vector<int64_t>& idx) {
  const ChannelInfo& ch = in.channels[channel];
  int64_t flat = 0;
  for (size_t j = 0; j < ch.axes.size(); ++j) flat = flat * ch.axes[j].size + idx[j];
  return ch.start + flat;
}

std::vector<int64_t> region_slots(const std::string& model, int64_t nbinsfull,
                                  const std::vector<std::vector<int64_t>>& bins) {
  std::vector<int64_t> slot_of(nbinsfull, -1);
  const int64_t n = static_cast<int64_t>(bins.front().size());
  for (size_t k = 0; k < bins.size(); ++k)
    for (int64_t i = 0; i < n; ++i) {
      auto& s = slot_of[bins[k][i]];
      if (s >= 0) fail(model, fmt::format("bin {} of the input is in more than one region", bins[k][i]));
      s = static_cast<int64_t>(k) * n + i;
    }
  return slot_of;
}

Eigen::VectorXd mc_correction(const FitInputData& in, int64_t proc, const FamilyShape& shape,
                              const std::vector<std::vector<int64_t>>& bins) {
  auto nominal = [&](int64_t b) -> double {
    const int64_t idx = b * in.nproc + proc;
    if (!in.sparse) return in.norm[idx];
    auto it = std::lower_bound(in.norm_index.begin(), in.norm_index.end(), idx);
    return it != in.norm_index.end() && *it == idx ? in.norm[it - in.norm_index.begin()] : 0.0;
  };
  auto safe = [](double x) { return x == 0.0 ? 1.0 : x; };
  const int64_t n = static_cast<int64_t>(bins.front().size());
  const size_t d = shape.free_regions.size();
  Eigen::VectorXd f(n);
  for (int64_t i = 0; i < n; ++i) {
    double num = 1.0, den = 1.0;
    for (const auto& t : shape.numerator) num *= std::pow(nominal(bins[t.param][i]), t.power);
    for (const auto& t : shape.denominator) den *= std::pow(safe(nominal(bins[t.param][i])), t.power);
    den *= safe(nominal(bins[d][i]));
    f[i] = num / den;
  }
  return f;
}

/// params:FILE (rabbit's --dumpSmoothingParams output): the datasets "params" (the starting values) and
/// "order" of an HDF5 file.
void read_starting_values(const std::string& model, const std::string& token, std::vector<double>& values,
                          int64_t& order) {
  const std::string file = token.substr(token.find(':') + 1);
  try {
    const h5::Reader reader(file);
    values = reader.read_doubles(reader.info("params"));
    const h5::DatasetInfo info = reader.info("order");
    if (info.size != 1)
      fail(model, fmt::format("'{}': dataset 'order' holds {} values, expected one", token, info.size));
    if (info.type_class == h5::TypeClass::integer) {
      order = reader.read_ints(info).front();
    } else {
      const double o = reader.read_doubles(info).front();
      if (o != std::floor(o))
        fail(model, fmt::format("'{}': dataset 'order' is {}, not an integer", token, o));
      order = static_cast<int64_t>(o);
    }
  } catch (const OptionError&) {
    throw;
  } catch (const Error& e) {
    fail(model, fmt::format("'{}': {}", token, e.what()));
  }
}

}  // namespace rabbit::abcd
