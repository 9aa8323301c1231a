#include "result_layout_writer.hpp"

#include <algorithm>
#include <ctime>

#include "rabbit/core/error.hpp"
#include "rabbit/core/python_format.hpp"
#include "rabbit/io/pickle_writer.hpp"

namespace rabbit::cli {

using result::Axis;

Axis channel_axis(const AxisInfo& a) {
  Axis out;
  out.name = a.name;
  out.label = a.label;
  out.underflow = a.underflow;
  out.overflow = a.overflow;
  out.circular = a.circular;
  if (a.kind == "regular") {
    out.type = "regular";
    out.bins = a.size;
    out.lower = a.edges.empty() ? 0.0 : a.edges.front();
    out.upper = a.edges.empty() ? static_cast<double>(a.size) : a.edges.back();
  } else if (a.kind == "variable") {
    out.type = "variable";
    out.edges = a.edges;
  } else if (a.kind == "integer") {
    out.type = "integer";
    out.lower = a.edges.empty() ? 0.0 : a.edges.front();
    out.upper = out.lower + static_cast<double>(a.size);
  } else if (a.kind == "category_str") {
    out.type = "strcategory";
    out.labels = a.categories_str;
  } else if (a.kind == "category_int") {
    out.type = "intcategory";
    out.int_values = a.categories_int;
  } else if (a.kind == "boolean") {
    out.type = "boolean";
  } else {
    // An axis the reader could not decode: keep its size as an integer axis.
    out.type = "integer";
    out.lower = 0;
    out.upper = static_cast<double>(a.size);
    out.underflow = out.overflow = false;
  }
  return out;
}

ResultLayoutWriter::ResultLayoutWriter(const FitContext& ctx)
    : ctx_(ctx),
      out_(std::make_unique<result::ResultWriter>(
          ctx.options.output_file(),
          ctx.options.output_format == "plain" ? result::Layout::plain : result::Layout::rabbit)) {
  // The mappings are built here, before any fit, so that a bad -m fails early; rabbit keeps one
  // result per key, so a repeated mapping is written once.
  for (const auto& tokens : ctx.options.mappings) {
    auto mapping = postfit::make_mapping(*ctx.input, tokens);
    const std::string key = mapping->key();
    if (std::none_of(mappings_.begin(), mappings_.end(),
                     [&](const MappingOutput& m) { return m.mapping->key() == key; }))
      mappings_.push_back({std::move(mapping), {}, {}});
  }
  if (ctx.options.composite_mapping && !mappings_.empty()) {
    // rabbit's CompositeMapping of all of them, under one key (docs/output-format.md "Mappings").
    std::vector<std::unique_ptr<postfit::Mapping>> parts;
    for (auto& m : mappings_) parts.push_back(std::move(m.mapping));
    mappings_.clear();
    mappings_.push_back({postfit::make_composite_mapping(std::move(parts)), {}, {}});
  }
}

void ResultLayoutWriter::add_shared(const std::string& id, Axis axis) {
  out_->shared_axis(id, axis);
  axis.shared_id = id;
  shared_axes_[id] = axis;
}

void ResultLayoutWriter::write_meta() {
  const auto& o = ctx_.options;
  const auto& input = *ctx_.input;
  auto meta = result::create_group(out_->root(), "meta", "meta");
  char tbuf[64];
  std::time_t now = std::time(nullptr);
  std::strftime(tbuf, sizeof(tbuf), "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  result::set_attr(meta, "time", std::string(tbuf));
  result::set_attr(meta, "command", o.command);
  result::set_attr(meta, "args_json", o.args_json);
  result::set_attr(meta, "input_file", o.filename);
  const auto& ps = ctx_.model->parameters;
  result::set_attr(meta, "npoi", ps.npoi);
  result::set_attr(meta, "npou", ps.npou);
  result::set_attr(meta, "nsyst", ps.nsyst);
  result::set_attr(meta, "nsystnoconstraint", input.nsystnoconstraint);
  result::set_attr(meta, "nbins", input.nbins);
  result::set_attr(meta, "nbinsmasked", input.nbinsmasked);
  // Rabbit's layout: upstream's meta dict (docs/output-format.md): meta_info, the input's own meta.
  const auto rabbit_meta = result::only_in(meta, result::Layout::rabbit);
  auto meta_info = result::create_group(rabbit_meta, "meta_info", "");
  result::write_scalar_str(meta_info, "time", python_datetime_now());
  result::write_scalar_str(meta_info, "command", o.command);
  result::write_json(meta_info, "args", o.args_json);
  result::write_scalar_str(meta_info, "producer", "rabbit-cpp 0.1.0");
  result::write_pickled(rabbit_meta, "meta_info_input", pickle::input_meta_for_output(input));
  result::write_strings(meta, "procs", input.procs);
  std::vector<std::string> pois(ps.names.begin(), ps.names.begin() + ps.npoi);
  result::write_strings(meta, "pois", pois, result::NameArray::fixed_bytes);
  std::vector<std::string> nois(ctx_.reported_names.begin() + ps.npoi, ctx_.reported_names.end());
  result::write_strings(meta, "nois", nois);
  const auto plain_meta = result::only_in(meta, result::Layout::plain);
  result::write_strings(plain_meta, "parms", ps.names);
  result::write_int64s(plain_meta, "noiidxs", input.noiidxs);
  result::write_strings(plain_meta, "systgroups", input.systgroups);
  auto in = result::create_group(plain_meta, "input", "");
  result::set_attr_u8(in, "symmetric_tensor", input.symmetric_tensor);
  result::set_attr(in, "systematic_type",
                   std::string(input.systematic_type == SystematicType::normal ? "normal" : "log_normal"));
  auto chs = result::create_group(in, "channels", "dict");
  std::vector<std::string> order;
  for (const auto& ch : input.channels) {
    order.push_back(ch.name);
    auto g = result::create_group(chs, ch.name, "");
    result::set_attr_u8(g, "masked", ch.masked);
    result::set_attr_u8(g, "flow", ch.flow);
    result::set_attr(g, "start", ch.start);
    result::set_attr(g, "stop", ch.stop);
    for (size_t k = 0; k < ch.axes.size(); ++k)
      result::write_axis(g, "axis" + std::to_string(k), channel_axis(ch.axes[k]));
  }
  result::write_strings(chs, "_order", order);

  add_shared("parms", Axis::strcat("parms", ps.names));
  add_shared("parms_x", Axis::strcat("parms_x", ps.names));
  add_shared("parms_y", Axis::strcat("parms_y", ps.names));
  add_shared("poinoi", Axis::strcat("parms", ctx_.reported_names));
  add_shared("impacts", Axis::strcat("impacts", ps.names));
  add_shared("impacts_grouped", Axis::strcat("impacts", ctx_.trad_groups));
  add_shared("global_impacts_grouped", Axis::strcat("impacts", ctx_.glob_groups));
  add_shared("downUpVar", Axis::down_up());
  add_shared("vars", Axis::strcat("vars", ps.names));
  add_shared("yield", Axis::integer("yield", 0, 1));
}

void ResultLayoutWriter::reset_mappings() {
  mapping_dict_ = result::Group();
  for (auto& m : mappings_) {
    m.group = result::Group();
    m.channel_groups.clear();
  }
}

void ResultLayoutWriter::mapping_groups(result::Group group) {
  if (mapping_dict_.valid()) return;
  mapping_dict_ = result::create_group(group, "mappings", "dict");
  std::vector<std::string> keys;
  for (const auto& m : mappings_) keys.push_back(m.mapping->key());
  result::write_strings(mapping_dict_, "_order", keys);
  for (auto& m : mappings_) {
    m.group = result::create_group(mapping_dict_, m.mapping->key(), "dict");
    auto channels = result::create_group(m.group, "channels", "dict");
    std::vector<std::string> order;
    for (const auto& ch : m.mapping->channels()) {
      order.push_back(ch.name);
      m.channel_groups.push_back(result::create_group(channels, ch.name, "dict"));
    }
    result::write_strings(channels, "_order", order);
  }
}

std::vector<Axis> ResultLayoutWriter::channel_axes(const ChannelInfo& channel) const {
  std::vector<Axis> axes;
  for (const auto& a : channel.axes) axes.push_back(channel_axis(a));
  if (axes.empty()) axes.push_back(shared("yield"));
  return axes;
}

}  // namespace rabbit::cli
