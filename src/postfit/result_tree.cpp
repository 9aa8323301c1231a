// Recording the result tree (result_tree.hpp); serialised by result_plain_writer.cpp and
// result_rabbit_writer.cpp.
#include "rabbit/postfit/result_tree.hpp"

#include <algorithm>

#include "rabbit/core/error.hpp"

namespace rabbit::result {
namespace {

Node& add_child(Group parent, Node::Kind kind, const std::string& key) {
  Node* p = parent.node();
  if (p == nullptr) throw Error("result file: writing '" + key + "' into a group that does not exist");
  if (p->written)
    throw Error("result file: writing '" + key + "' into group '" + p->key + "' after it was written");
  auto child = std::make_unique<Node>();
  child->kind = kind;
  child->key = key;
  child->visibility = parent.visibility();
  p->children.push_back(std::move(child));
  return *p->children.back();
}

void add_attribute(Group group, Attribute attribute) {
  if (group.node() == nullptr)
    throw Error("result file: attribute " + attribute.name + " of a missing group");
  group.node()->attributes.push_back(std::move(attribute));
}

}  // namespace

int64_t Axis::size() const {
  if (type == "strcategory") return static_cast<int64_t>(labels.size());
  if (type == "intcategory") return static_cast<int64_t>(int_values.size());
  if (type == "floatcategory") return static_cast<int64_t>(float_values.size());
  if (type == "variable") return static_cast<int64_t>(edges.size()) - 1;
  if (type == "integer") return static_cast<int64_t>(upper - lower);
  if (type == "boolean") return 2;
  return bins;
}

Axis Axis::strcat(std::string name, std::vector<std::string> labels, std::string shared_id) {
  Axis a;
  a.type = "strcategory";
  a.name = std::move(name);
  a.labels = std::move(labels);
  a.overflow = true;
  a.shared_id = std::move(shared_id);
  return a;
}

Axis Axis::integer(std::string name, int64_t lower, int64_t upper) {
  Axis a;
  a.type = "integer";
  a.name = std::move(name);
  a.lower = static_cast<double>(lower);
  a.upper = static_cast<double>(upper);
  return a;
}

Axis Axis::floatcat(std::string name, std::vector<double> values) {
  Axis a;
  a.type = "floatcategory";
  a.name = std::move(name);
  a.float_values = std::move(values);
  a.overflow = true;
  return a;
}

Axis Axis::down_up() {
  Axis a;
  a.type = "regular";
  a.name = "downUpVar";
  a.bins = 2;
  a.lower = -2;
  a.upper = 2;
  a.shared_id = "downUpVar";
  return a;
}

int64_t plain_extent(const Axis& axis, bool flow) {
  int64_t extent = axis.size();
  if (flow && axis.type != "strcategory") extent += (axis.underflow ? 1 : 0) + (axis.overflow ? 1 : 0);
  return extent;
}

std::string escape_key(const std::string& key) {
  if (key == ".") return "%2E";
  std::string out;
  for (char c : key) {
    if (c == '%')
      out += "%25";
    else if (c == '/')
      out += "%2F";
    else
      out += c;
  }
  return out;
}

Group only_in(Group group, Layout layout) {
  const Visibility wanted = layout == Layout::plain ? Visibility::plain_only : Visibility::rabbit_only;
  if (group.visibility() != Visibility::both && group.visibility() != wanted)
    throw Error("result file: a group restricted to one layout cannot be restricted to the other");
  return Group(group.node(), wanted);
}

Group create_group(Group parent, const std::string& key, const std::string& rabbit_type) {
  Node& n = add_child(parent, Node::Kind::dict, key);
  n.rabbit_type = rabbit_type;
  return Group(&n, parent.visibility());
}

void set_attr(Group group, const std::string& name, const std::string& value) {
  add_attribute(group, {name, value});
}
void set_attr(Group group, const std::string& name, int64_t value) {
  add_attribute(group, {name, value});
}
void set_attr(Group group, const std::string& name, double value) {
  add_attribute(group, {name, value});
}
void set_attr_u8(Group group, const std::string& name, bool value) {
  add_attribute(group, {name, value});
}

void write_strings(Group group, const std::string& name, const std::vector<std::string>& values,
                   NameArray as) {
  Node& n = add_child(group, Node::Kind::strings, name);
  n.strings = values;
  n.name_array = as;
}

void write_int64s(Group group, const std::string& name, const std::vector<int64_t>& values) {
  add_child(group, Node::Kind::integers, name).integers = values;
}

void write_scalar(Group group, const std::string& key, double value) {
  add_child(group, Node::Kind::real, key).real = value;
}

void write_scalar(Group group, const std::string& key, int64_t value) {
  add_child(group, Node::Kind::integer, key).integer = value;
}

void write_scalar_bool(Group group, const std::string& key, bool value) {
  add_child(group, Node::Kind::boolean, key).boolean = value;
}

void write_scalar_str(Group group, const std::string& key, const std::string& value) {
  add_child(group, Node::Kind::text, key).text = value;
}

void write_hist(Group group, const std::string& key, const std::vector<Axis>& axes, const double* values,
                const double* variances, const std::string& label, bool flow) {
  Node& n = add_child(group, Node::Kind::hist, key);
  n.axes = axes;
  n.label = label;
  n.flow = flow;
  size_t count = 1;
  for (const Axis& a : axes) count *= static_cast<size_t>(std::max<int64_t>(plain_extent(a, flow), 0));
  n.values.assign(values, values + count);
  if (variances) n.variances.assign(variances, variances + count);
}

void write_axis(Group parent, const std::string& link_name, const Axis& axis) {
  Node& n = add_child(only_in(parent, Layout::plain), Node::Kind::axis, link_name);
  n.axis = axis;
}

void write_pickled(Group group, const std::string& key, std::vector<uint8_t> pickle_stream) {
  Node& n = add_child(only_in(group, Layout::rabbit), Node::Kind::pickled, key);
  n.text.assign(pickle_stream.begin(), pickle_stream.end());
}

void write_json(Group group, const std::string& key, std::string json_text) {
  add_child(only_in(group, Layout::rabbit), Node::Kind::json, key).text = std::move(json_text);
}

}  // namespace rabbit::result
