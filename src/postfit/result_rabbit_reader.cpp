// Reading rabbit's layout (docs/output-format.md "Rabbit's layout"), ours or upstream's: each
// group's pickle_data is parsed by our non-executing pickle reader (io/pickle.hpp); a histogram is
// a wums H5PickleProxy whose persistent id (H5Path) names its group, whose make_Hist pickle gives
// the axes and names the storage buffer dataset. Nothing is executed or imported.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>

#include "rabbit/core/error.hpp"
#include "rabbit/io/blosc_filters.hpp"
#include "rabbit/io/meta_info.hpp"
#include "rabbit/io/pickle.hpp"
#include "result_layouts.hpp"

namespace rabbit::result::detail {
namespace {

using pickle::Kind;
using pickle::Value;
using pickle::ValuePtr;

constexpr const char* kProtocolAttribute = "narf_h5py_pickle_protocol_version";

bool is_pickled_group(hid_t parent, const std::string& name) {
  h5::Handle g;
  H5E_BEGIN_TRY {
    g = h5::Handle(H5Gopen2(parent, name.c_str(), H5P_DEFAULT));
  }
  H5E_END_TRY;
  return g.valid() && H5Aexists(g, kProtocolAttribute) > 0;
}

bool is_global(const ValuePtr& v, const char* qualified_name) {
  return v && v->is(Kind::global) && v->qualified_name() == qualified_name;
}

// The object that REDUCE of `callable` built, or nullptr.
const Value* reduced(const Value* v, const char* callable) {
  return v && v->is(Kind::object) && is_global(v->cls, callable) ? v : nullptr;
}

const Value* argument(const Value& object, size_t i) {
  if (!object.args || !object.args->is(Kind::tuple) || i >= object.args->items.size()) return nullptr;
  return object.args->items[i].get();
}

std::vector<std::string> split_path(const std::string& path) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= path.size()) {
    const size_t slash = path.find('/', start);
    const std::string part =
        path.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
    if (!part.empty()) parts.push_back(unescape_key(part));
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  return parts;
}

// "1.0", "-2.5e-05": a label that is a number as a whole.
bool parse_number(const std::string& s, double& out) {
  if (s.empty()) return false;
  char* end = nullptr;
  out = std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size() && std::isfinite(out);
}

class RabbitReader : public ReaderBackend {
 public:
  RabbitReader(h5::Handle file, std::string path) : file_(std::move(file)), path_(std::move(path)) {}

  Layout layout() const override { return Layout::rabbit; }

  std::vector<std::string> result_groups() const override {
    std::vector<std::string> out;
    for (const std::string& name : link_names(file_))
      if (name.rfind("results", 0) == 0 && is_pickled_group(file_, name)) out.push_back(name);
    return out;
  }

  bool exists(const std::string& path) const override { return lookup(path) != nullptr; }

  Hist hist(const std::string& path, bool flow_bins) const override {
    const Value* proxy = reduced(lookup(path), "wums.ioutils.H5PickleProxy");
    if (proxy == nullptr) throw InputError(fmt::format("{}: {} is not a histogram", path_, path));
    const std::string object_path = referenced_path(argument(*proxy, 1), path);
    const ValuePtr root = parse_pickle_data(object_path);
    const Value* made = reduced(root.get(), "wums.ioutils.make_Hist");
    const bool plain_histogram = made == nullptr;
    if (plain_histogram)
      made = reduced(root.get(), "wums.ioutils.make_Histogram");  // boost_histogram.Histogram
    if (made == nullptr) throw InputError(fmt::format("{}: {} holds no histogram", path_, object_path));
    const Value* axes = argument(*made, 0);
    const Value* storage = argument(*made, 1);
    const Value* buffer = reduced(argument(*made, plain_histogram ? 3 : 5), "wums.ioutils.H5Buffer");
    if (!axes || !(axes->is(Kind::tuple) || axes->is(Kind::list)) || !storage || !buffer)
      throw InputError(fmt::format("{}: {}: not a wums make_Hist pickle", path_, object_path));

    Hist h;
    if (!plain_histogram)
      if (const Value* label = argument(*made, 3); label && label->is(Kind::string)) h.label = label->text;
    std::vector<AxisInfo> info;
    for (const auto& a : axes->items) {
      try {
        info.push_back(io::interpret_axis(*a));
      } catch (const pickle::DecodeError& e) {
        throw InputError(fmt::format("{}: {}: axis {}: {}", path_, path, info.size(), e.what()));
      }
    }
    const std::string storage_class =
        storage->cls && storage->cls->is(Kind::global) ? storage->cls->name : "";
    const bool weight = storage_class == "Weight" || storage_class == "weight";
    if (!weight && storage_class != "Double" && storage_class != "double")
      throw InputError(fmt::format("{}: {}: storage {} is not supported (Double or Weight)", path_, path,
                                   storage->describe()));
    const std::vector<uint8_t> bytes = read_bytes(referenced_path(argument(*buffer, 1), path));

    // boost-histogram's flow-inclusive storage -> the bins asked for, in C order.
    const size_t width = weight ? 2 : 1;
    size_t full_size = 1;
    std::vector<int64_t> full, start, count;
    for (const AxisInfo& a : info) {
      full.push_back(a.extent());
      const bool with_flow = flow_bins && a.kind != "category_str";
      start.push_back(!with_flow && a.underflow ? 1 : 0);
      count.push_back(with_flow ? a.extent() : a.size);
      full_size *= static_cast<size_t>(a.extent());
    }
    if (bytes.size() != full_size * width * sizeof(double))
      throw InputError(fmt::format("{}: {}: storage buffer has {} bytes, the axes need {}", path_, path,
                                   bytes.size(), full_size * width * sizeof(double)));
    // boost-histogram's memory order: the first axis varies fastest.
    std::vector<size_t> stride(info.size(), 1);
    for (size_t k = 1; k < info.size(); ++k) stride[k] = stride[k - 1] * static_cast<size_t>(full[k - 1]);
    size_t n = 1;
    for (int64_t c : count) n *= static_cast<size_t>(c);
    h.values.resize(n);
    if (weight) h.variances.resize(n);
    std::vector<int64_t> index(info.size(), 0);
    for (size_t flat = 0; flat < n; ++flat) {
      size_t source = 0;
      for (size_t k = 0; k < info.size(); ++k) source += static_cast<size_t>(index[k] + start[k]) * stride[k];
      std::memcpy(&h.values[flat], bytes.data() + source * width * sizeof(double), sizeof(double));
      if (weight)
        std::memcpy(&h.variances[flat], bytes.data() + (source * width + 1) * sizeof(double), sizeof(double));
      for (size_t k = info.size(); k-- > 0;) {
        if (++index[k] < count[k]) break;
        index[k] = 0;
      }
    }
    for (size_t k = 0; k < info.size(); ++k) {
      h.axis_names.push_back(info[k].name);
      h.axis_labels.push_back(info[k].categories_str);
      std::vector<double> numbers;
      for (const std::string& l : info[k].categories_str) {
        double v = 0;
        if (!parse_number(l, v)) {
          numbers.clear();
          break;
        }
        numbers.push_back(v);
      }
      // An IntCategory axis (a Ratio's a0, a1, ...) holds its categories as integers.
      for (int64_t c : info[k].categories_int) numbers.push_back(static_cast<double>(c));
      h.axis_values.push_back(numbers);
      h.shape.push_back(count[k]);
    }
    h.flow = flow_bins;
    return h;
  }

  double scalar(const std::string& path) const override {
    const Value* v = lookup(path);
    if (v == nullptr) throw InputError(fmt::format("{}: {} not found", path_, path));
    if (v->is(Kind::floating)) return v->floating;
    if (v->is(Kind::integer) && !v->big_integer) return static_cast<double>(v->integer);
    if (v->is(Kind::boolean)) return v->boolean ? 1.0 : 0.0;
    throw InputError(fmt::format("{}: {} is a {}, not a number", path_, path, v->describe()));
  }

  std::vector<std::string> strings(const std::string& path) const override {
    const Value* v = lookup(path);
    if (v == nullptr) throw InputError(fmt::format("{}: {} not found", path_, path));
    std::vector<std::string> out;
    if (v->is(Kind::string) || v->is(Kind::bytes)) return {v->text};
    if (const Value* array = reduced(v, "numpy.array"))
      v = argument(*array, 0);  // ours: numpy.array([b".."], "O")
    if (v && (v->is(Kind::list) || v->is(Kind::tuple) || (v->is(Kind::ndarray) && !v->items.empty()))) {
      for (const auto& item : v->items)
        if (item->is(Kind::string) || item->is(Kind::bytes)) out.push_back(item->text);
      return out;
    }
    if (v && v->is(Kind::ndarray) && v->dtype) {  // a fixed-width bytes array: |S<n>
      std::string t = v->dtype->text;
      if (!t.empty() && (t[0] == '|' || t[0] == '<' || t[0] == '>' || t[0] == '=')) t.erase(0, 1);
      const size_t width = t.size() > 1 && t[0] == 'S' ? std::strtoul(t.c_str() + 1, nullptr, 10) : 0;
      if (width > 0 && v->text.size() % width == 0) {
        for (size_t i = 0; i < v->text.size(); i += width) {
          std::string s = v->text.substr(i, width);
          out.push_back(s.substr(0, s.find('\0')));
        }
        return out;
      }
    }
    throw InputError(fmt::format("{}: {} is not a list of names", path_, path));
  }

  std::string attr_str(const std::string&, const std::string&) const override { return ""; }

  std::vector<ResultReader::Entry> members(const std::string& path) const override {
    const Value* v = lookup(path);
    if (v == nullptr || !v->is(Kind::dict))
      throw InputError(fmt::format("{}: {} is not a dictionary", path_, path));
    std::vector<ResultReader::Entry> out;
    std::vector<const Value*> seen;
    for (const auto& [key, value] : v->dict_items) {
      if (!key->is(Kind::string)) continue;
      // The same object under a second key: an alias for older readers (rabbit-fit 0.2.5's names).
      if (std::find(seen.begin(), seen.end(), value.get()) != seen.end()) continue;
      seen.push_back(value.get());
      ResultReader::Entry e;
      e.key = key->text;
      e.path = path + "/" + escape_key(key->text);
      e.type = type_name(*value);
      e.container = value->is(Kind::dict);
      out.push_back(std::move(e));
    }
    return out;
  }

 private:
  static std::string type_name(const Value& v) {
    switch (v.kind) {
      case Kind::dict:
        return "dict";
      case Kind::floating:
        return "float";
      case Kind::integer:
        return "int";
      case Kind::boolean:
        return "bool";
      case Kind::string:
        return "str";
      case Kind::ndarray:
        return "array";
      default:
        break;
    }
    if (reduced(&v, "wums.ioutils.H5PickleProxy")) return "hist";
    if (reduced(&v, "numpy.array")) return "array";
    return "";
  }

  // The absolute HDF5 path of an H5Path persistent id.
  std::string referenced_path(const Value* ref, const std::string& what) const {
    const Value* h5path = ref && ref->is(Kind::persistent_ref) ? ref->args.get() : nullptr;
    const Value* state = h5path && h5path->is(Kind::object) && is_global(h5path->cls, "wums.ioutils.H5Path")
                             ? h5path->state.get()
                             : nullptr;
    const Value* p = state ? state->get("path") : nullptr;
    if (p == nullptr || !p->is(Kind::string))
      throw InputError(fmt::format("{}: {}: expected a wums H5Path persistent id", path_, what));
    return p->text;
  }

  std::vector<uint8_t> read_bytes(const std::string& dataset_path) const {
    if (!link_exists(file_, dataset_path))
      throw InputError(fmt::format("{}: dataset {} not found", path_, dataset_path));
    h5::Handle ds(H5Dopen2(file_, dataset_path.c_str(), H5P_DEFAULT));
    h5::Handle space(H5Dget_space(ds));
    const hssize_t n = H5Sget_simple_extent_npoints(space);
    std::vector<uint8_t> out(static_cast<size_t>(std::max<hssize_t>(n, 0)));
    if (n > 0 && H5Dread(ds, H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data()) < 0) {
      const std::string cause = io::take_filter_error();
      throw InputError(
          fmt::format("{}: cannot read {}{}", path_, dataset_path, cause.empty() ? "" : ": " + cause));
    }
    return out;
  }

  ValuePtr parse_pickle_data(const std::string& group_path) const {
    const std::vector<uint8_t> bytes = read_bytes(group_path + "/pickle_data");
    try {
      return pickle::parse(bytes);
    } catch (const pickle::DecodeError& e) {
      throw InputError(fmt::format("{}: {}/pickle_data: {}", path_, group_path, e.what()));
    }
  }

  // The value at a path, or nullptr.
  const Value* lookup(const std::string& path) const {
    const std::vector<std::string> parts = split_path(path);
    if (parts.empty() || !is_pickled_group(file_, parts[0])) return nullptr;
    auto it = groups_.find(parts[0]);
    if (it == groups_.end()) it = groups_.emplace(parts[0], parse_pickle_data("/" + parts[0])).first;
    const Value* v = it->second.get();
    for (size_t i = 1; i < parts.size() && v != nullptr; ++i) v = v->get(parts[i]);
    return v;
  }

  h5::Handle file_;
  std::string path_;
  mutable std::map<std::string, ValuePtr> groups_;  // parsed top-level dicts
};

}  // namespace

bool has_rabbit_groups(hid_t file) {
  for (const std::string& name : link_names(file))
    if (is_pickled_group(file, name)) return true;
  return false;
}

std::unique_ptr<ReaderBackend> rabbit_reader(h5::Handle file, std::string file_path) {
  return std::make_unique<RabbitReader>(std::move(file), std::move(file_path));
}

}  // namespace rabbit::result::detail
