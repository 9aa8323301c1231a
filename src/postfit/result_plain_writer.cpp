// The plain HDF5 layout (docs/output-format.md "The plain layout"), written from the recorded
// tree: groups with `key`/`rabbit_type` attributes, histograms as groups of datasets, scalars as
// 0-d datasets. Written with the HDF5 C API only (no pickles, no filter plugins).
#include <algorithm>

#include "rabbit/core/error.hpp"
#include "result_layouts.hpp"

namespace rabbit::result::detail {
namespace {

// Dataset creation: chunked + shuffle + deflate(4) above 4096 elements.
h5::Handle dataset_plist(const std::vector<hsize_t>& dims) {
  h5::Handle dcpl(H5Pcreate(H5P_DATASET_CREATE));
  hsize_t n = 1;
  for (auto d : dims) n *= d;
  if (n > 4096 && !dims.empty()) {
    std::vector<hsize_t> chunk(dims);
    // Aim for chunks of about 64k elements: shrink the leading dimensions first.
    hsize_t total = n;
    for (size_t k = 0; k < chunk.size() && total > 65536; ++k) {
      hsize_t rest = total / chunk[k];
      hsize_t want = std::max<hsize_t>(1, 65536 / std::max<hsize_t>(1, rest));
      if (want < chunk[k]) {
        chunk[k] = want;
      }
      total = rest * chunk[k];
    }
    H5Pset_chunk(dcpl, static_cast<int>(chunk.size()), chunk.data());
    H5Pset_shuffle(dcpl);
    H5Pset_deflate(dcpl, 4);
  }
  return dcpl;
}

void write_doubles(hid_t group, const std::string& name, const std::vector<hsize_t>& dims,
                   const double* data) {
  h5::Handle space(dims.empty() ? H5Screate(H5S_SCALAR)
                                : H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr));
  auto dcpl = dataset_plist(dims);
  auto ds =
      check_id(H5Dcreate2(group, name.c_str(), H5T_IEEE_F64LE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT), name);
  check(H5Dwrite(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, write_plist(), data), name);
}

h5::Handle create_group(hid_t parent, const std::string& key, const std::string& rabbit_type) {
  auto gcpl = group_create_plist();
  auto g =
      check_id(H5Gcreate2(parent, escape_key(key).c_str(), H5P_DEFAULT, gcpl, H5P_DEFAULT), "group " + key);
  write_attribute(g, {"key", key});
  if (!rabbit_type.empty()) write_attribute(g, {"rabbit_type", rabbit_type});
  return g;
}

void write_strings(hid_t group, const std::string& name, const std::vector<std::string>& values) {
  auto type = utf8_string_type();
  hsize_t n = values.size();
  h5::Handle space(H5Screate_simple(1, &n, nullptr));
  auto ds =
      check_id(H5Dcreate2(group, name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), name);
  std::vector<const char*> ptrs;
  for (const auto& v : values) ptrs.push_back(v.c_str());
  if (n > 0) check(H5Dwrite(ds, type, H5S_ALL, H5S_ALL, write_plist(), ptrs.data()), name);
}

void write_int64s(hid_t group, const std::string& name, const std::vector<int64_t>& values) {
  hsize_t n = values.size();
  h5::Handle space(H5Screate_simple(1, &n, nullptr));
  auto ds = check_id(
      H5Dcreate2(group, name.c_str(), H5T_STD_I64LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), name);
  if (n > 0) check(H5Dwrite(ds, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, write_plist(), values.data()), name);
}

// A 0-d dataset with attributes rabbit_type and key.
void write_scalar(hid_t group, const Node& n) {
  const std::string name = escape_key(n.key);
  h5::Handle space(H5Screate(H5S_SCALAR));
  h5::Handle ds;
  std::string type;
  switch (n.kind) {
    case Node::Kind::real:
      write_doubles(group, name, {}, &n.real);
      ds = h5::Handle(H5Dopen2(group, name.c_str(), H5P_DEFAULT));
      type = "float";
      break;
    case Node::Kind::integer:
      ds = check_id(
          H5Dcreate2(group, name.c_str(), H5T_STD_I64LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
          n.key);
      check(H5Dwrite(ds, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, write_plist(), &n.integer), n.key);
      type = "int";
      break;
    case Node::Kind::boolean: {
      ds = check_id(
          H5Dcreate2(group, name.c_str(), H5T_STD_U8LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), n.key);
      const uint8_t v = n.boolean ? 1 : 0;
      check(H5Dwrite(ds, H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, write_plist(), &v), n.key);
      type = "bool";
      break;
    }
    default: {
      auto t = utf8_string_type();
      ds = check_id(H5Dcreate2(group, name.c_str(), t, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), n.key);
      const char* p = n.text.c_str();
      check(H5Dwrite(ds, t, H5S_ALL, H5S_ALL, write_plist(), &p), n.key);
      type = "str";
      break;
    }
  }
  write_attribute(ds, {"rabbit_type", type});
  write_attribute(ds, {"key", n.key});
}

void write_hist(hid_t group, const Node& n) {
  auto g = create_group(group, n.key, "hist");
  write_attribute(g, {"storage", std::string(n.variances.empty() ? "double" : "weight")});
  if (!n.label.empty()) write_attribute(g, {"label", n.label});
  write_attribute(g, {"flow", n.flow});
  std::vector<hsize_t> dims;
  for (size_t k = 0; k < n.axes.size(); ++k) {
    const Axis& a = n.axes[k];
    std::string link = "axis" + std::to_string(k);
    if (!a.shared_id.empty()) {
      check(H5Lcreate_soft(("/axes/" + a.shared_id).c_str(), g, link.c_str(), H5P_DEFAULT, H5P_DEFAULT),
            link);
    } else {
      write_plain_axis(g, link, a);
    }
    dims.push_back(static_cast<hsize_t>(plain_extent(a, n.flow)));
  }
  write_doubles(g, "values", dims, n.values.data());
  if (!n.variances.empty()) write_doubles(g, "variances", dims, n.variances.data());
}

void write_node(hid_t parent, const Node& n) {
  if (n.visibility == Visibility::rabbit_only) return;
  switch (n.kind) {
    case Node::Kind::dict: {
      auto g = create_group(parent, n.key, n.rabbit_type);
      for (const Attribute& a : n.attributes) write_attribute(g, a);
      for (const auto& child : n.children) write_node(g, *child);
      break;
    }
    case Node::Kind::hist:
      write_hist(parent, n);
      break;
    case Node::Kind::real:
    case Node::Kind::integer:
    case Node::Kind::boolean:
    case Node::Kind::text:
      write_scalar(parent, n);
      break;
    case Node::Kind::strings:
      write_strings(parent, n.key, n.strings);
      break;
    case Node::Kind::integers:
      write_int64s(parent, n.key, n.integers);
      break;
    case Node::Kind::axis:
      write_plain_axis(parent, n.key, n.axis);
      break;
    case Node::Kind::pickled:
    case Node::Kind::json:
      break;  // rabbit layout only
  }
}

}  // namespace

void write_plain_root_attributes(hid_t file) {
  write_attribute(file, {"rabbit_plain_format", std::string("rabbit-fitresults-plain")});
  write_attribute(file, {"rabbit_plain_version", int64_t{1}});
  write_attribute(file, {"producer", std::string("rabbit-cpp 0.1.0")});
  write_attribute(file, {"rabbit_reference", std::string("WMass/rabbit@948a94a")});
}

void write_plain_axis(hid_t parent, const std::string& link_name, const Axis& a) {
  auto gcpl = group_create_plist();
  auto g = check_id(H5Gcreate2(parent, link_name.c_str(), H5P_DEFAULT, gcpl, H5P_DEFAULT), "axis " + a.name);
  write_attribute(g, {"rabbit_type", std::string("axis")});
  write_attribute(g, {"name", a.name});
  if (!a.label.empty()) write_attribute(g, {"label", a.label});
  write_attribute(g, {"axis_type", a.type});
  if (a.type == "regular" || a.type == "variable" || a.type == "integer") {
    write_attribute(g, {"underflow", a.underflow});
    write_attribute(g, {"overflow", a.overflow});
  }
  if (a.type == "strcategory" || a.type == "intcategory") write_attribute(g, {"overflow", a.overflow});
  if (a.type == "regular") {
    write_attribute(g, {"circular", a.circular});
    write_attribute(g, {"bins", a.bins});
    write_attribute(g, {"lower", a.lower});
    write_attribute(g, {"upper", a.upper});
  }
  if (a.type == "integer") {
    write_attribute(g, {"lower", static_cast<int64_t>(a.lower)});
    write_attribute(g, {"upper", static_cast<int64_t>(a.upper)});
  }
  if (a.type == "variable") write_doubles(g, "edges", {static_cast<hsize_t>(a.edges.size())}, a.edges.data());
  if (a.type == "strcategory") write_strings(g, "labels", a.labels);
  if (a.type == "intcategory") write_int64s(g, "values", a.int_values);
  if (a.type == "floatcategory")
    write_doubles(g, "values", {static_cast<hsize_t>(a.float_values.size())}, a.float_values.data());
}

void write_plain_group(hid_t file, const Node& group) {
  write_node(file, group);
}

}  // namespace rabbit::result::detail
