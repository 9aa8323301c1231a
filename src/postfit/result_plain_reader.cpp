// Reading the plain HDF5 layout (docs/output-format.md "The plain layout"): paths are HDF5 paths.
#include <fmt/format.h>

#include "rabbit/core/error.hpp"
#include "result_layouts.hpp"

namespace rabbit::result::detail {
namespace {

std::vector<std::string> read_strings(hid_t ds) {
  h5::Handle space(H5Dget_space(ds));
  hssize_t n = H5Sget_simple_extent_npoints(space);
  std::vector<char*> ptrs(static_cast<size_t>(n), nullptr);
  auto type = utf8_string_type();
  std::vector<std::string> out;
  if (n > 0 && H5Dread(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, ptrs.data()) >= 0) {
    for (auto* p : ptrs) out.emplace_back(p ? p : "");
    H5Dvlen_reclaim(type, space, H5P_DEFAULT, ptrs.data());
  }
  return out;
}

std::vector<double> read_doubles(hid_t ds, std::vector<int64_t>* shape) {
  h5::Handle space(H5Dget_space(ds));
  int rank = H5Sget_simple_extent_ndims(space);
  std::vector<hsize_t> dims(static_cast<size_t>(std::max(rank, 0)));
  if (rank > 0) H5Sget_simple_extent_dims(space, dims.data(), nullptr);
  hsize_t n = 1;
  for (auto d : dims) n *= d;
  std::vector<double> out(n);
  if (n > 0) H5Dread(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data());
  if (shape) shape->assign(dims.begin(), dims.end());
  return out;
}

bool read_u8_attribute(hid_t obj, const char* name) {
  if (H5Aexists(obj, name) <= 0) return false;
  h5::Handle attr(H5Aopen(obj, name, H5P_DEFAULT));
  uint8_t v = 0;
  H5Aread(attr, H5T_NATIVE_UINT8, &v);
  return v != 0;
}

// One axis of a stored histogram: whether it has flow bins at all (not string or float categories),
// which, and whether the stored values include them (written with flow).
struct FlowAxis {
  bool can_flow, underflow, overflow, stored_with_flow;
};

// The stored values with the flow bins asked for (`flow_bins`) or without them; flow bins that
// were not stored are zero, as rabbit's layout holds them.
std::vector<double> remap(const std::vector<double>& stored, const std::vector<int64_t>& stored_shape,
                          const std::vector<FlowAxis>& axes, bool flow_bins, std::vector<int64_t>* shape) {
  const size_t rank = axes.size();
  std::vector<int64_t> inner(rank), extent(rank), stored_offset(rank), target_offset(rank);
  std::vector<size_t> stride(rank, 1);
  size_t n = 1;
  for (size_t k = 0; k < rank; ++k) {
    const FlowAxis& a = axes[k];
    const int64_t flow = (a.underflow ? 1 : 0) + (a.overflow ? 1 : 0);
    inner[k] = stored_shape[k] - (a.stored_with_flow ? flow : 0);
    stored_offset[k] = a.stored_with_flow && a.underflow ? 1 : 0;
    const bool with_flow = flow_bins && a.can_flow;
    extent[k] = inner[k] + (with_flow ? flow : 0);
    target_offset[k] = with_flow && a.underflow ? 1 : 0;
    n *= static_cast<size_t>(extent[k]);
  }
  for (size_t k = rank; k-- > 1;) stride[k - 1] = stride[k] * static_cast<size_t>(stored_shape[k]);
  std::vector<double> out(n, 0.0);
  std::vector<int64_t> index(rank, 0);
  for (size_t flat = 0; flat < n; ++flat) {
    bool stored_bin = true;
    size_t source = 0;
    for (size_t k = 0; k < rank && stored_bin; ++k) {
      const int64_t s = index[k] - target_offset[k] + stored_offset[k];
      stored_bin = s >= 0 && s < stored_shape[k];
      source += static_cast<size_t>(s) * stride[k];
    }
    if (stored_bin) out[flat] = stored[source];
    for (size_t k = rank; k-- > 0;) {
      if (++index[k] < extent[k]) break;
      index[k] = 0;
    }
  }
  if (shape) *shape = extent;
  return out;
}

class PlainReader : public ReaderBackend {
 public:
  PlainReader(h5::Handle file, std::string path) : file_(std::move(file)), path_(std::move(path)) {}

  Layout layout() const override { return Layout::plain; }

  std::vector<std::string> result_groups() const override {
    std::vector<std::string> out;
    for (const std::string& name : link_names(file_)) {
      h5::Handle g(H5Oopen(file_, name.c_str(), H5P_DEFAULT));
      if (read_string_attribute(g, "rabbit_type") == "result") out.push_back(read_string_attribute(g, "key"));
    }
    return out;
  }

  bool exists(const std::string& path) const override { return link_exists(file_, path); }

  Hist hist(const std::string& path, bool flow_bins) const override {
    if (!exists(path)) throw InputError(fmt::format("{}: histogram {} not found", path_, path));
    h5::Handle g(H5Gopen2(file_, path.c_str(), H5P_DEFAULT));
    Hist h;
    h.label = read_string_attribute(g, "label");
    const bool stored_flow = read_u8_attribute(g, "flow");
    std::vector<FlowAxis> flow_axes;
    for (int k = 0;; ++k) {
      std::string link = "axis" + std::to_string(k);
      if (H5Lexists(g, link.c_str(), H5P_DEFAULT) <= 0) break;
      h5::Handle a(H5Gopen2(g, link.c_str(), H5P_DEFAULT));
      h.axis_names.push_back(read_string_attribute(a, "name"));
      std::vector<std::string> labels;
      if (H5Lexists(a, "labels", H5P_DEFAULT) > 0) {
        h5::Handle ds(H5Dopen2(a, "labels", H5P_DEFAULT));
        labels = read_strings(ds);
      }
      h.axis_labels.push_back(labels);
      std::vector<double> values;
      if (read_string_attribute(a, "axis_type") == "floatcategory" &&
          H5Lexists(a, "values", H5P_DEFAULT) > 0) {
        h5::Handle ds(H5Dopen2(a, "values", H5P_DEFAULT));
        values = read_doubles(ds, nullptr);
      }
      h.axis_values.push_back(values);
      const std::string type = read_string_attribute(a, "axis_type");
      flow_axes.push_back({type != "strcategory" && type != "floatcategory",
                           read_u8_attribute(a, "underflow"), read_u8_attribute(a, "overflow"),
                           stored_flow && type != "strcategory"});
    }
    std::vector<int64_t> stored_shape;
    std::vector<double> values, variances;
    {
      h5::Handle ds(H5Dopen2(g, "values", H5P_DEFAULT));
      values = read_doubles(ds, &stored_shape);
    }
    if (H5Lexists(g, "variances", H5P_DEFAULT) > 0) {
      h5::Handle ds(H5Dopen2(g, "variances", H5P_DEFAULT));
      variances = read_doubles(ds, nullptr);
    }
    if (stored_shape.size() != flow_axes.size())
      throw InputError(fmt::format("{}: {}: {} axes for values of rank {}", path_, path, flow_axes.size(),
                                   stored_shape.size()));
    h.values = remap(values, stored_shape, flow_axes, flow_bins, &h.shape);
    if (!variances.empty()) h.variances = remap(variances, stored_shape, flow_axes, flow_bins, nullptr);
    h.flow = flow_bins;
    return h;
  }

  double scalar(const std::string& path) const override {
    if (!exists(path)) throw InputError(fmt::format("{}: dataset {} not found", path_, path));
    h5::Handle ds(H5Dopen2(file_, path.c_str(), H5P_DEFAULT));
    double v = 0;
    H5Dread(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, &v);
    return v;
  }

  std::vector<std::string> strings(const std::string& path) const override {
    if (!exists(path)) throw InputError(fmt::format("{}: dataset {} not found", path_, path));
    h5::Handle ds(H5Dopen2(file_, path.c_str(), H5P_DEFAULT));
    return read_strings(ds);
  }

  std::string attr_str(const std::string& path, const std::string& name) const override {
    if (!exists(path)) return "";
    h5::Handle o(H5Oopen(file_, path.c_str(), H5P_DEFAULT));
    return read_string_attribute(o, name.c_str());
  }

  std::vector<ResultReader::Entry> members(const std::string& path) const override {
    if (!exists(path)) throw InputError(fmt::format("{}: no group {}", path_, path));
    h5::Handle group(H5Gopen2(file_, path.c_str(), H5P_DEFAULT));
    if (!group.valid()) throw InputError(fmt::format("{}: {} is not a group", path_, path));
    std::vector<ResultReader::Entry> out;
    for (const std::string& name : link_names(group)) {
      if (name == "_order") continue;  // the order of a dictionary's keys: the listing's own order
      h5::Handle object;
      H5E_BEGIN_TRY {
        object = h5::Handle(H5Oopen(group, name.c_str(), H5P_DEFAULT));
      }
      H5E_END_TRY;
      if (!object.valid()) continue;
      ResultReader::Entry e;
      e.key = read_string_attribute(object, "key");
      if (e.key.empty()) e.key = unescape_key(name);
      e.path = path + "/" + name;
      e.type = read_string_attribute(object, "rabbit_type");
      if (e.type.empty() && H5Iget_type(object) == H5I_DATASET) {
        h5::Handle type(H5Dget_type(object));
        if (H5Tget_class(type) == H5T_STRING) e.type = "strings";
      }
      e.container = H5Iget_type(object) == H5I_GROUP && e.type != "hist" && e.type != "axis";
      out.push_back(std::move(e));
    }
    return out;
  }

 private:
  h5::Handle file_;
  std::string path_;
};

}  // namespace

std::unique_ptr<ReaderBackend> plain_reader(h5::Handle file, std::string file_path) {
  return std::make_unique<PlainReader>(std::move(file), std::move(file_path));
}

}  // namespace rabbit::result::detail
