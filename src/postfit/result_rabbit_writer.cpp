// Rabbit's own result layout (docs/output-format.md "Rabbit's layout"; spec rabbit-result-format.md):
// each top-level group holds one pickled dict in the h5py protocol that wums.ioutils'
// pickle_load_h5py reads, every histogram a wums H5PickleProxy of its own group under
// proxied_objects/, whose hist.Hist is rebuilt by wums.ioutils.make_Hist from its axes and the
// storage buffer h5_buffers/h5_buffer_0. Nothing in the streams depends on the numpy version.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <string_view>

#include "rabbit/core/error.hpp"
#include "rabbit/core/python_format.hpp"
#include "rabbit/io/blosc_filters.hpp"
#include "rabbit/io/pickle_writer.hpp"
#include "result_layouts.hpp"

namespace rabbit::result::detail {
namespace {

using pickle::PickleWriter;

constexpr const char* kProtocolAttribute =
    "narf_h5py_pickle_protocol_version";  // wums' CURRENT_PROTOCOL_VERSION 1

// Keys that rabbit-fit 0.2.5 (the PyPI release, whose scripts `pip install rabbit-fit[plotting]`
// installs) reads under their older names: written a second time under the old name as the same
// Python object (a memo reference), so readers of either version find them.
struct Alias {
  const char* key;
  const char* old_name;
};
constexpr Alias kAliases[] = {{"pois", "signals"}, {"mappings", "physics_models"}};

void mark_as_pickled(hid_t group) {
  write_attribute(group, {kProtocolAttribute, int64_t{1}});
}

// Below this size a dataset is stored contiguous and uncompressed: a chunk index costs more than
// compression saves (the example's result: 316 kB chunked throughout, see output-format.md).
constexpr hsize_t kSmallDatasetBytes = 4096;

// A 1-D uint8 dataset compressed as upstream writes it (hdf5plugin.Blosc(cname="lz4"): filter
// 32001, clevel 5, shuffle) where the Blosc filter is available, else deflate; small ones plain.
void write_bytes_dataset(hid_t parent, const std::string& name, const void* data, size_t size) {
  const hsize_t n = size;
  h5::Handle space(H5Screate_simple(1, &n, nullptr));
  h5::Handle dcpl(H5Pcreate(H5P_DATASET_CREATE));
  if (n > kSmallDatasetBytes) {
    const hsize_t chunk = std::min<hsize_t>(n, 1024 * 1024);
    check(H5Pset_chunk(dcpl, 1, &chunk), name);
    if (io::ensure_blosc_filters().blosc != io::FilterSource::unavailable) {
      const unsigned cd[7] = {0, 0, 0, 0, 5, 1, 1};  // set_local fills versions, typesize, chunk size
      check(H5Pset_filter(dcpl, io::kBloscFilterId, H5Z_FLAG_OPTIONAL, 7, cd), name + " blosc filter");
    } else {
      check(H5Pset_deflate(dcpl, 4), name + " deflate");
    }
  }
  auto ds =
      check_id(H5Dcreate2(parent, name.c_str(), H5T_STD_U8LE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT), name);
  if (n > 0) check(H5Dwrite(ds, H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, write_plist(), data), name);
}

// The hist.axis object of one axis; float categories become string categories of numpy's str of
// the values, as upstream labels its scan axes (np.array(values).astype(str)).
AxisInfo pickled_axis(const Axis& a) {
  AxisInfo i;
  i.name = a.name;
  i.label = a.label;
  i.underflow = a.underflow;
  i.overflow = a.overflow;
  i.circular = a.circular;
  i.size = a.size();
  auto linear_edges = [&](double lower, double upper) {
    for (int64_t k = 0; k <= i.size; ++k)
      i.edges.push_back(k == i.size
                            ? upper
                            : lower + (upper - lower) * static_cast<double>(k) / static_cast<double>(i.size));
  };
  if (a.type == "regular") {
    i.kind = "regular";
    linear_edges(a.lower, a.upper);
  } else if (a.type == "variable") {
    i.kind = "variable";
    i.edges = a.edges;
  } else if (a.type == "integer") {
    i.kind = "integer";
    linear_edges(a.lower, a.upper);
  } else if (a.type == "strcategory") {
    i.kind = "category_str";
    i.categories_str = a.labels;
  } else if (a.type == "intcategory") {
    i.kind = "category_int";
    i.categories_int = a.int_values;
  } else if (a.type == "floatcategory") {
    i.kind = "category_str";
    for (double v : a.float_values) i.categories_str.push_back(python_repr(v));
  } else if (a.type == "boolean") {
    i.kind = "boolean";
  } else {
    throw Error("result file: axis '" + a.name + "' of unknown type '" + a.type + "'");
  }
  return i;
}

// Elements along one axis in boost-histogram's flow-inclusive storage, and where the plain
// layout's first element sits in it.
struct StorageAxis {
  int64_t full = 0, plain = 0, offset = 0;
  bool category_overflow = false;  // a string category's overflow slot (the last one)
};

StorageAxis storage_axis(const Axis& a, bool flow) {
  StorageAxis s;
  const bool flow_bins = a.type == "regular" || a.type == "variable" || a.type == "integer";
  const bool categories = a.type == "strcategory" || a.type == "intcategory" || a.type == "floatcategory";
  s.full = a.size() + (flow_bins && a.underflow ? 1 : 0) + ((flow_bins || categories) && a.overflow ? 1 : 0);
  s.plain = plain_extent(a, flow);
  const bool plain_has_flow = flow && a.type != "strcategory";
  s.offset = !plain_has_flow && flow_bins && a.underflow ? 1 : 0;
  s.category_overflow = (a.type == "strcategory" || a.type == "floatcategory") && a.overflow;
  return s;
}

// Python's json module output -> pickle opcodes of the same Python object (the options, written by
// options.cpp: objects, arrays, strings, numbers, true/false/null, NaN/Infinity).
class JsonToPickle {
 public:
  JsonToPickle(const std::string& text, PickleWriter& w) : s_(text), w_(w) {}
  void run() {
    value();
    space();
    if (pos_ != s_.size()) fail("trailing characters");
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw Error(fmt::format("result file: JSON of the options at offset {}: {}", pos_, what));
  }
  void space() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\t' || s_[pos_] == '\r'))
      ++pos_;
  }
  bool take(char c) {
    space();
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool word(const char* w) {
    const std::string_view v(w);
    if (s_.compare(pos_, v.size(), v) != 0) return false;
    pos_ += v.size();
    return true;
  }
  void value() {
    space();
    if (pos_ >= s_.size()) fail("unexpected end");
    const char c = s_[pos_];
    if (c == '{') return object();
    if (c == '[') return array();
    if (c == '"') return w_.string(string());
    if (word("true")) return w_.boolean(true);
    if (word("false")) return w_.boolean(false);
    if (word("null")) return w_.none();
    if (word("NaN")) return w_.real(std::nan(""));
    if (word("Infinity")) return w_.real(INFINITY);
    if (word("-Infinity")) return w_.real(-INFINITY);
    number();
  }
  void object() {
    ++pos_;
    w_.empty_dict();
    if (take('}')) return;
    w_.mark();
    do {
      space();
      if (pos_ >= s_.size() || s_[pos_] != '"') fail("expected a key");
      w_.string(string());
      if (!take(':')) fail("expected ':'");
      value();
    } while (take(','));
    if (!take('}')) fail("expected '}'");
    w_.setitems_from_mark();
  }
  void array() {
    ++pos_;
    w_.empty_list();
    if (take(']')) return;
    w_.mark();
    do value();
    while (take(','));
    if (!take(']')) fail("expected ']'");
    w_.appends_from_mark();
  }
  std::string string() {
    ++pos_;
    std::string out;
    while (pos_ < s_.size() && s_[pos_] != '"') {
      char c = s_[pos_++];
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= s_.size()) fail("unterminated escape");
      c = s_[pos_++];
      switch (c) {
        case 'n':
          out += '\n';
          break;
        case 't':
          out += '\t';
          break;
        case 'r':
          out += '\r';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'u': {
          if (pos_ + 4 > s_.size()) fail("short \\u escape");
          const unsigned cp = static_cast<unsigned>(std::stoul(s_.substr(pos_, 4), nullptr, 16));
          pos_ += 4;
          // options.cpp escapes control characters only (< 0x20): one UTF-8 byte each.
          if (cp >= 0x80) fail("\\u escape beyond ASCII");
          out += static_cast<char>(cp);
          break;
        }
        default:
          out += c;
          break;  // \" \\ \/
      }
    }
    if (pos_ >= s_.size()) fail("unterminated string");
    ++pos_;
    return out;
  }
  void number() {
    const size_t start = pos_;
    bool real = false;
    while (pos_ < s_.size() && std::string_view("+-0123456789.eE").find(s_[pos_]) != std::string_view::npos) {
      real = real || s_[pos_] == '.' || s_[pos_] == 'e' || s_[pos_] == 'E';
      ++pos_;
    }
    if (pos_ == start) fail("unexpected character");
    const std::string text = s_.substr(start, pos_ - start);
    int64_t i = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), i);
    if (!real && ec == std::errc() && end == text.data() + text.size()) return w_.integer(i);
    w_.real(std::strtod(text.c_str(), nullptr));
  }

  const std::string& s_;
  PickleWriter& w_;
  size_t pos_ = 0;
};

// Pickles one top-level dict into its group, writing the proxied histograms on the way.
class GroupPickler {
 public:
  GroupPickler(hid_t group, std::string group_path) : group_(group), path_(std::move(group_path)) {}

  std::vector<uint8_t> pickle(const Node& dict) {
    write_dict(dict, true);
    return w_.finish();
  }

 private:
  static bool in_rabbit_layout(const Node& n) {
    if (n.visibility == Visibility::plain_only || n.kind == Node::Kind::axis) return false;
    // A plain group's `_order` list records its keys' order; Python dicts keep their order.
    return !(n.kind == Node::Kind::strings && n.key == "_order");
  }

  void write_dict(const Node& dict, bool top_level) {
    w_.empty_dict();
    bool any = false;
    for (const auto& c : dict.children) any = any || in_rabbit_layout(*c);
    if (!any) return;
    w_.mark();
    for (const auto& child : dict.children) {
      if (!in_rabbit_layout(*child)) continue;
      w_.string(child->key);
      write_value(*child);
      if (!top_level) continue;
      for (const Alias& alias : kAliases) {
        if (child->key != alias.key) continue;
        const uint32_t memo = w_.memoize();
        w_.string(alias.old_name);
        w_.get(memo);
      }
    }
    w_.setitems_from_mark();
  }

  void write_value(const Node& n) {
    switch (n.kind) {
      case Node::Kind::dict:
        write_dict(n, false);
        break;
      case Node::Kind::hist:
        write_proxy(n);
        break;
      case Node::Kind::real:
        w_.real(n.real);
        break;
      case Node::Kind::integer:
        w_.integer(n.integer);
        break;
      case Node::Kind::boolean:
        w_.boolean(n.boolean);
        break;
      case Node::Kind::text:
        w_.string(n.text);
        break;
      case Node::Kind::strings:
        write_name_array(n);
        break;
      case Node::Kind::integers:
        w_.empty_list();
        if (n.integers.empty()) break;
        w_.mark();
        for (int64_t v : n.integers) w_.integer(v);
        w_.appends_from_mark();
        break;
      case Node::Kind::pickled:
        // The input's meta re-emitted byte for byte: pickle.loads(<its own stream>).
        w_.global("pickle", "loads");
        w_.mark();
        w_.bytes(n.text.data(), n.text.size());
        w_.tuple_from_mark();
        w_.reduce();
        break;
      case Node::Kind::json:
        JsonToPickle(n.text, w_).run();
        break;
      case Node::Kind::axis:
        break;
    }
  }

  // numpy.array([b"..", ...], "O" | "S"): upstream's name arrays, without numpy's module names.
  void write_name_array(const Node& n) {
    w_.global("numpy", "array");
    w_.mark();
    w_.empty_list();
    if (!n.strings.empty()) {
      w_.mark();
      for (const auto& s : n.strings) w_.bytes(s.data(), s.size());
      w_.appends_from_mark();
    }
    w_.string(n.name_array == NameArray::fixed_bytes ? "S" : "O");
    w_.tuple_from_mark();
    w_.reduce();
  }

  void write_proxy(const Node& hist) {
    if (!proxied_.valid())
      proxied_ =
          check_id(H5Gcreate2(group_, "proxied_objects", H5P_DEFAULT, group_create_plist(), H5P_DEFAULT),
                   path_ + "/proxied_objects");
    const std::string name = fmt::format("proxied_object_{}", proxied_count_++);
    const std::string object_path = path_ + "/proxied_objects/" + name;
    auto object =
        check_id(H5Gcreate2(proxied_, name.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), object_path);
    mark_as_pickled(object);
    auto buffers = check_id(H5Gcreate2(object, "h5_buffers", H5P_DEFAULT, group_create_plist(), H5P_DEFAULT),
                            object_path + "/h5_buffers");
    const std::vector<double> storage = boost_histogram_storage(hist);
    write_bytes_dataset(buffers, "h5_buffer_0", storage.data(), storage.size() * sizeof(double));

    // wums.ioutils.make_Hist(axes, storage, metadata, label, name, H5Buffer): the hist is built
    // empty from its axes and the buffer read into its flow view.
    PickleWriter h;
    h.global("wums.ioutils", "make_Hist");
    h.mark();
    h.mark();
    for (const Axis& a : hist.axes)
      pickle::write_axis(h, pickled_axis(a), pickle::ArrayEncoding::numpy_frombuffer);
    h.tuple_from_mark();
    h.global("boost_histogram.storage", hist.variances.empty() ? "Double" : "Weight");
    h.empty_tuple();
    h.reduce();
    h.none();
    if (hist.label.empty())
      h.none();
    else
      h.string(hist.label);
    h.string(hist.key);
    pickle::h5_buffer(h, object_path + "/h5_buffers/h5_buffer_0");
    h.tuple_from_mark();
    h.reduce();
    const std::vector<uint8_t> stream = h.finish();
    write_bytes_dataset(object, "pickle_data", stream.data(), stream.size());

    pickle::h5_pickle_proxy(w_, object_path);
  }

  hid_t group_;
  std::string path_;
  PickleWriter w_;
  h5::Handle proxied_;
  int proxied_count_ = 0;
};

}  // namespace

std::vector<double> boost_histogram_storage(const Node& hist) {
  const size_t rank = hist.axes.size();
  std::vector<StorageAxis> axes;
  size_t full_size = 1, plain_size = 1;
  for (const Axis& a : hist.axes) {
    axes.push_back(storage_axis(a, hist.flow));
    full_size *= static_cast<size_t>(axes.back().full);
    plain_size *= static_cast<size_t>(axes.back().plain);
  }
  const bool weight = !hist.variances.empty();
  const size_t width = weight ? 2 : 1;
  std::vector<double> out(full_size * width, 0.0);
  if (plain_size != hist.values.size())
    throw Error(fmt::format("result file: histogram {} has {} values for {} bins", hist.key,
                            hist.values.size(), plain_size));
  // boost-histogram's memory order: the first axis varies fastest (view(flow=True) is
  // Fortran-contiguous, and wums reads the buffer into it byte for byte).
  std::vector<size_t> stride(rank, 1);
  for (size_t k = 1; k < rank; ++k) stride[k] = stride[k - 1] * static_cast<size_t>(axes[k - 1].full);
  if (hist.flow) {
    // Upstream fills the overflow slot of string categories with ones when a channel has flow.
    std::vector<int64_t> index(rank, 0);
    for (size_t flat = 0; flat < full_size; ++flat) {
      bool in_overflow = false;
      size_t target = 0;
      for (size_t k = 0; k < rank; ++k) {
        in_overflow = in_overflow || (axes[k].category_overflow && index[k] == axes[k].full - 1);
        target += static_cast<size_t>(index[k]) * stride[k];
      }
      if (in_overflow)
        for (size_t c = 0; c < width; ++c) out[target * width + c] = 1.0;
      for (size_t k = rank; k-- > 0;) {
        if (++index[k] < axes[k].full) break;
        index[k] = 0;
      }
    }
  }
  std::vector<int64_t> index(rank, 0);
  for (size_t flat = 0; flat < plain_size; ++flat) {
    size_t target = 0;
    for (size_t k = 0; k < rank; ++k) target += static_cast<size_t>(index[k] + axes[k].offset) * stride[k];
    out[target * width] = hist.values[flat];
    if (weight) out[target * width + 1] = hist.variances[flat];
    for (size_t k = rank; k-- > 0;) {
      if (++index[k] < axes[k].plain) break;
      index[k] = 0;
    }
  }
  return out;
}

void write_rabbit_group(hid_t file, const Node& group) {
  if (group.visibility == Visibility::plain_only) return;
  if (group.kind != Node::Kind::dict)
    throw Error("result file: top-level entry " + group.key + " is not a group");
  auto g = check_id(H5Gcreate2(file, group.key.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), group.key);
  mark_as_pickled(g);
  GroupPickler pickler(g, "/" + group.key);
  const std::vector<uint8_t> stream = pickler.pickle(group);
  write_bytes_dataset(g, "pickle_data", stream.data(), stream.size());
}

}  // namespace rabbit::result::detail
