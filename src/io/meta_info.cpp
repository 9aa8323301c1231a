// Interpretation of the meta dict and of pickled hist/boost-histogram axes.
#include "rabbit/io/meta_info.hpp"

#include <cmath>
#include <limits>
#include <string>

namespace rabbit::io {
namespace {

using pickle::DecodeError;
using pickle::Kind;
using pickle::Value;

[[noreturn]] void fail(const std::string& what) {
  throw DecodeError("meta: " + what);
}

bool as_bool(const Value* v, bool fallback) {
  if (v == nullptr) return fallback;
  if (v->is(Kind::boolean)) return v->boolean;
  if (v->is(Kind::integer)) return v->integer != 0;
  if (v->is(Kind::none)) return fallback;
  fail("expected a bool, found " + v->describe());
}

int64_t as_int(const Value& v, const std::string& what) {
  if (v.is(Kind::integer) && !v.big_integer) return v.integer;
  if (v.is(Kind::boolean)) return v.boolean ? 1 : 0;
  fail(what + ": expected an int, found " + v.describe());
}

double as_double(const Value& v, const std::string& what) {
  if (v.is(Kind::floating)) return v.floating;
  if (v.is(Kind::integer) && !v.big_integer) return static_cast<double>(v.integer);
  fail(what + ": expected a float, found " + v.describe());
}

const Value& item(const Value& tuple, size_t i, const std::string& what) {
  if (i >= tuple.items.size() || !tuple.items[i]) {
    fail(what + ": state tuple has " + std::to_string(tuple.items.size()) + " items, expected more");
  }
  return *tuple.items[i];
}

void apply_axis_metadata(const Value& meta, AxisInfo& axis) {
  if (!meta.is(Kind::dict)) fail("axis metadata is a " + meta.describe() + ", expected a dict");
  if (const Value* name = meta.get("name"); name && name->is(Kind::string)) axis.name = name->text;
  if (const Value* label = meta.get("label"); label && label->is(Kind::string) && !label->text.empty()) {
    axis.label = label->text;
  } else {
    axis.label = axis.name;
  }
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Flow/growth/circular flags from the core class name (docs/input-reader.md "Per axis").
void set_flags(AxisInfo& axis) {
  const std::string& c = axis.core_class;
  if (axis.kind == "category_str" || axis.kind == "category_int") {
    if (ends_with(c, "_growth"))
      axis.growth = true;
    else if (ends_with(c, "_none")) {
    } else
      axis.overflow = true;
    return;
  }
  if (axis.kind == "boolean") return;
  if (ends_with(c, "_uoflow_growth")) {
    axis.underflow = axis.overflow = axis.growth = true;
  } else if (ends_with(c, "_uoflow")) {
    axis.underflow = axis.overflow = true;
  } else if (ends_with(c, "_uflow")) {
    axis.underflow = true;
  } else if (ends_with(c, "_oflow")) {
    axis.overflow = true;
  } else if (ends_with(c, "_none")) {
  } else if (ends_with(c, "_circular")) {
    axis.circular = true;
    axis.overflow = axis.kind != "integer";  // regular/variable circular keep an overflow bin
  } else if (ends_with(c, "_growth")) {
    axis.growth = true;  // integer_growth
  } else if (c == "regular_pow" || c == "regular_trans" || c == "regular_numpy") {
    axis.underflow = axis.overflow = true;
  }
}

// Python's regular-axis edges, bit for bit: (1 - z) * min + z * (min + delta), z = i / n.
std::vector<double> regular_edges(int64_t n, double min, double delta) {
  std::vector<double> edges(static_cast<size_t>(n + 1));
  for (int64_t i = 0; i <= n; ++i) {
    const double z = static_cast<double>(i) / static_cast<double>(n);
    edges[static_cast<size_t>(i)] = (1.0 - z) * min + z * (min + delta);
  }
  return edges;
}

const std::string kRegularFamily[] = {"regular_uoflow", "regular_uflow",         "regular_oflow",
                                      "regular_none",   "regular_uoflow_growth", "regular_circular"};
const std::string kVariableFamily[] = {"variable_uoflow", "variable_uflow",         "variable_oflow",
                                       "variable_none",   "variable_uoflow_growth", "variable_circular"};
const std::string kIntegerFamily[] = {"integer_uoflow", "integer_uflow",  "integer_oflow",
                                      "integer_none",   "integer_growth", "integer_circular"};

template <size_t N>
bool in(const std::string& s, const std::string (&set)[N]) {
  for (const auto& x : set) {
    if (s == x) return true;
  }
  return false;
}

void check_size(int64_t size, const std::string& where) {
  if (size < 0 || size > (int64_t{1} << 40)) fail(where + ": invalid axis size " + std::to_string(size));
}

}  // namespace

AxisInfo interpret_axis(const Value& wrapper) {
  std::string wrapper_name = wrapper.describe();
  if (!wrapper.is(Kind::object) || !wrapper.cls || !wrapper.cls->is(Kind::global)) {
    fail("axis is a " + wrapper_name + ", expected a hist/boost_histogram axis object");
  }
  const std::string& module = wrapper.cls->text;
  if (module != "hist.axis" && module != "boost_histogram.axis") {
    fail("unsupported axis type " + wrapper.cls->qualified_name());
  }
  const Value* core = wrapper.state ? wrapper.state->get("_ax") : nullptr;
  if (core == nullptr || !core->is(Kind::object) || !core->cls || !core->cls->is(Kind::global) ||
      core->cls->text != "boost_histogram._core.axis") {
    fail("unsupported axis type " + wrapper.cls->qualified_name() + " (no boost_histogram core '_ax')");
  }
  AxisInfo axis;
  axis.core_class = core->cls->name;
  const std::string& c = axis.core_class;
  const std::string where = "axis " + wrapper.cls->qualified_name() + " (core " + c + ")";
  if (!core->state || !core->state->is(Kind::tuple)) fail(where + ": state is not a tuple");
  const Value& s = *core->state;

  if (in(c, kRegularFamily) || c == "regular_pow" || c == "regular_trans" || c == "regular_numpy") {
    axis.kind = "regular";
    size_t base = 2;  // after (class version, transform version)
    double power = 1.0;
    std::string transform;
    if (c == "regular_pow") {
      power = as_double(item(s, 2, where), where + " power");
      base = 3;
    } else if (c == "regular_trans") {
      const Value& tname = item(s, 5, where);
      transform = tname.is(Kind::string) ? tname.text : "";
      base = 6;
    }
    axis.size = as_int(item(s, base, where), where + " size");
    check_size(axis.size, where);
    apply_axis_metadata(item(s, base + 1, where), axis);
    const double min = as_double(item(s, base + 2, where), where + " min");
    const double delta = as_double(item(s, base + 3, where), where + " delta");
    if (axis.size > 0) {
      axis.edges = regular_edges(axis.size, min, delta);
      if (c == "regular_pow") {
        for (double& e : axis.edges) e = std::pow(e, 1.0 / power);
      } else if (c == "regular_trans") {
        if (transform == "log") {
          for (double& e : axis.edges) e = std::exp(e);
        } else if (transform == "sqrt") {
          for (double& e : axis.edges) e = e * e;
        } else {
          axis.edges.clear();  // unknown transform: bins are known, edges are not
        }
      } else if (c == "regular_numpy") {
        axis.edges.back() = as_double(item(s, base + 4, where), where + " stop");
      }
    }
  } else if (in(c, kVariableFamily)) {
    axis.kind = "variable";
    axis.edges = pickle::ndarray_to_doubles(item(s, 1, where));
    if (axis.edges.size() < 2) fail(where + ": fewer than 2 edges");
    axis.size = static_cast<int64_t>(axis.edges.size()) - 1;
    apply_axis_metadata(item(s, 2, where), axis);
  } else if (in(c, kIntegerFamily) || c == "boolean") {
    axis.kind = c == "boolean" ? "boolean" : "integer";
    axis.size = as_int(item(s, 1, where), where + " size");
    check_size(axis.size, where);
    apply_axis_metadata(item(s, 2, where), axis);
    const int64_t min = as_int(item(s, 3, where), where + " min");
    axis.edges.resize(static_cast<size_t>(axis.size + 1));
    for (int64_t i = 0; i <= axis.size; ++i)
      axis.edges[static_cast<size_t>(i)] = static_cast<double>(min + i);
  } else if (c == "category_int" || c == "category_int_growth" || c == "category_int_none") {
    axis.kind = "category_int";
    axis.categories_int = pickle::ndarray_to_ints(item(s, 1, where));
    axis.size = static_cast<int64_t>(axis.categories_int.size());
    apply_axis_metadata(item(s, 2, where), axis);
  } else if (c == "category_str" || c == "category_str_growth" || c == "category_str_none") {
    axis.kind = "category_str";
    axis.size = as_int(item(s, 1, where), where + " size");
    check_size(axis.size, where);
    if (static_cast<uint64_t>(axis.size) + 3 > s.items.size()) {
      fail(where + ": " + std::to_string(axis.size) + " categories declared, state has " +
           std::to_string(s.items.size()) + " items");
    }
    for (int64_t i = 0; i < axis.size; ++i) {
      const Value& v = item(s, static_cast<size_t>(2 + i), where);
      if (!v.is(Kind::string)) fail(where + ": category " + std::to_string(i) + " is not a str");
      axis.categories_str.push_back(v.text);
    }
    apply_axis_metadata(item(s, static_cast<size_t>(2 + axis.size), where), axis);
  } else {
    fail("unsupported axis type " + wrapper.cls->qualified_name() + " (core boost_histogram._core.axis." + c +
         ")");
  }
  if (axis.kind == "category_int" || axis.kind == "category_str") {
    axis.edges.resize(static_cast<size_t>(axis.size + 1));
    for (int64_t i = 0; i <= axis.size; ++i) axis.edges[static_cast<size_t>(i)] = static_cast<double>(i);
  }
  set_flags(axis);
  return axis;
}

MetaInfo interpret_meta(const Value& root) {
  if (!root.is(Kind::dict)) fail("top level is a " + root.describe() + ", expected a dict");
  MetaInfo meta;
  if (const Value* exp = root.get("exponential_transform"); exp && as_bool(exp, false)) {
    throw InputError(
        "meta: exponential_transform=True (removed from rabbit in 2025-03); this file cannot be fitted");
  }
  meta.symmetric_tensor = as_bool(root.get("symmetric_tensor"), false);
  if (const Value* st = root.get("systematic_type"); st && !st->is(Kind::none)) {
    if (!st->is(Kind::string)) fail("'systematic_type' is a " + st->describe() + ", expected a str");
    if (st->text == "log_normal")
      meta.systematic_type = SystematicType::log_normal;
    else if (st->text == "normal")
      meta.systematic_type = SystematicType::normal;
    else
      throw InputError("meta: systematic_type '" + st->text + "' is not one of log_normal, normal");
  }
  const Value* channels = root.get("channel_info");
  if (channels == nullptr) fail("'channel_info' missing");
  if (!channels->is(Kind::dict)) fail("'channel_info' is a " + channels->describe() + ", expected a dict");
  for (const auto& [key, value] : channels->dict_items) {
    if (!key->is(Kind::string)) fail("channel_info key is a " + key->describe() + ", expected a str");
    ChannelInfo ch;
    ch.name = key->text;
    if (!value->is(Kind::dict))
      fail("channel '" + ch.name + "' is a " + value->describe() + ", expected a dict");
    ch.masked = as_bool(value->get("masked"), false);
    ch.flow = as_bool(value->get("flow"), false);
    const Value* axes = value->get("axes");
    if (axes == nullptr) fail("channel '" + ch.name + "' has no 'axes'");
    const Value* list = axes;
    if (axes->is(Kind::object)) {
      // Legacy AxesTuple / NamedAxesTuple: NEWOBJ(cls, ((axis, axis, ...),)).
      if (axes->args && axes->args->is(Kind::tuple) && axes->args->items.size() == 1 &&
          (axes->args->items[0]->is(Kind::tuple) || axes->args->items[0]->is(Kind::list))) {
        list = axes->args->items[0].get();
      } else {
        fail("channel '" + ch.name + "' axes is a " + axes->describe() + ", expected a list");
      }
    } else if (!axes->is(Kind::list) && !axes->is(Kind::tuple)) {
      fail("channel '" + ch.name + "' axes is a " + axes->describe() + ", expected a list");
    }
    for (size_t i = 0; i < list->items.size(); ++i) {
      try {
        ch.axes.push_back(interpret_axis(*list->items[i]));
      } catch (const DecodeError& e) {
        std::string what = e.what();
        if (what.rfind("meta: ", 0) == 0) what.erase(0, 6);
        fail("channel '" + ch.name + "' axis " + std::to_string(i) + ": " + what);
      }
    }
    meta.channels.push_back(std::move(ch));
  }
  return meta;
}

std::vector<ChannelInfo> default_channels(int64_t nbins, int64_t nbinsmasked) {
  auto integer_axis = [](int64_t n, const std::string& name) {
    AxisInfo a;
    a.kind = "integer";
    a.core_class = "integer_none";
    a.name = name;
    a.label = name;
    a.size = n;
    a.edges.resize(static_cast<size_t>(n + 1));
    for (int64_t i = 0; i <= n; ++i) a.edges[static_cast<size_t>(i)] = static_cast<double>(i);
    return a;
  };
  std::vector<ChannelInfo> channels;
  ChannelInfo ch0;
  ch0.name = "ch0";
  ch0.axes.push_back(integer_axis(nbins, "obs"));
  channels.push_back(std::move(ch0));
  if (nbinsmasked > 0) {
    ChannelInfo ch1;
    ch1.name = "ch1_masked";
    ch1.masked = true;  // rabbit omits the key; see docs/input-reader.md
    ch1.axes.push_back(integer_axis(nbinsmasked, "masked"));
    channels.push_back(std::move(ch1));
  }
  assign_channel_ranges(channels);
  return channels;
}

int64_t channel_bins(const ChannelInfo& channel) {
  int64_t n = 1;
  for (const auto& a : channel.axes) {
    const int64_t e = channel.flow ? a.extent() : a.size;
    if (e != 0 && n > std::numeric_limits<int64_t>::max() / e) return std::numeric_limits<int64_t>::max();
    n *= e;
  }
  return n;
}

void assign_channel_ranges(std::vector<ChannelInfo>& channels) {
  int64_t start = 0;
  for (auto& ch : channels) {
    ch.start = start;
    ch.stop = start + channel_bins(ch);
    start = ch.stop;
  }
}

}  // namespace rabbit::io
