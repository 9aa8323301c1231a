#include "result_layout_writer.hpp"

#include <ctime>

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
          ctx.options.output_format == "plain" ? result::Layout::plain : result::Layout::rabbit)) {}

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
  mappings_ = result::Group();
  base_mapping_ = result::Group();
  base_channels_ = result::Group();
  channel_groups_.clear();
}

result::Group ResultLayoutWriter::mapping_group(result::Group group) {
  if (!mappings_.valid()) {
    mappings_ = result::create_group(group, "mappings", "dict");
    result::write_strings(mappings_, "_order", {"BaseMapping"});
    base_mapping_ = result::create_group(mappings_, "BaseMapping", "dict");
    base_channels_ = result::create_group(base_mapping_, "channels", "dict");
    std::vector<std::string> order;
    for (const auto& ch : ctx_.input->channels) {
      order.push_back(ch.name);
      channel_groups_.push_back(result::create_group(base_channels_, ch.name, "dict"));
    }
    result::write_strings(base_channels_, "_order", order);
  }
  return base_mapping_;
}

std::vector<Axis> ResultLayoutWriter::channel_axes(size_t c) const {
  std::vector<Axis> axes;
  for (const auto& a : ctx_.input->channels[c].axes) axes.push_back(channel_axis(a));
  if (axes.empty()) axes.push_back(shared("yield"));
  return axes;
}

}  // namespace rabbit::cli
