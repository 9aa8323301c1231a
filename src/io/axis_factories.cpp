// Axis factories: see rabbit/io/axis_factories.hpp, docs/tensor-writer.md "The writer API".
#include "rabbit/io/axis_factories.hpp"

#include "rabbit/core/error.hpp"
#include "rabbit/io/pickle_writer.hpp"

namespace rabbit {

namespace axis {
namespace {
AxisInfo make(std::string kind, int64_t size, std::string name, std::string label, bool underflow,
              bool overflow) {
  AxisInfo a;
  a.kind = std::move(kind);
  a.size = size;
  a.name = std::move(name);
  a.label = std::move(label);
  a.underflow = underflow;
  a.overflow = overflow;
  return a;
}
}  // namespace

AxisInfo regular(int64_t bins, double start, double stop, std::string name, bool underflow, bool overflow,
                 std::string label) {
  if (bins <= 0 || !(stop > start))
    throw Error("axis::regular '" + name + "': need bins > 0 and stop > start");
  AxisInfo a = make("regular", bins, std::move(name), std::move(label), underflow, overflow);
  // boost-histogram stores min and delta = stop - start; edges follow its regular::value
  // (docs/input-reader.md "Per axis"), so they match what Python and the reader report bit for bit.
  const double delta = stop - start;
  for (int64_t i = 0; i <= bins; ++i) {
    const double z = static_cast<double>(i) / static_cast<double>(bins);
    a.edges.push_back((1.0 - z) * start + z * (start + delta));
  }
  a.core_class = pickle::core_class_for(a);
  return a;
}

AxisInfo variable(std::vector<double> edges, std::string name, bool underflow, bool overflow,
                  std::string label) {
  if (edges.size() < 2) throw Error("axis::variable '" + name + "': need at least 2 edges");
  for (size_t i = 1; i < edges.size(); ++i)
    if (!(edges[i] > edges[i - 1]))
      throw Error("axis::variable '" + name + "': edges must be strictly increasing");
  AxisInfo a = make("variable", static_cast<int64_t>(edges.size()) - 1, std::move(name), std::move(label),
                    underflow, overflow);
  a.edges = std::move(edges);
  a.core_class = pickle::core_class_for(a);
  return a;
}

AxisInfo integer(int64_t start, int64_t stop, std::string name, bool underflow, bool overflow,
                 std::string label) {
  if (stop <= start) throw Error("axis::integer '" + name + "': need stop > start");
  AxisInfo a = make("integer", stop - start, std::move(name), std::move(label), underflow, overflow);
  for (int64_t v = start; v <= stop; ++v) a.edges.push_back(static_cast<double>(v));
  a.core_class = pickle::core_class_for(a);
  return a;
}

AxisInfo str_category(std::vector<std::string> categories, std::string name, bool overflow,
                      std::string label) {
  if (categories.empty()) throw Error("axis::str_category '" + name + "': no categories");
  AxisInfo a = make("category_str", static_cast<int64_t>(categories.size()), std::move(name),
                    std::move(label), false, overflow);
  a.categories_str = std::move(categories);
  for (int64_t i = 0; i <= a.size; ++i) a.edges.push_back(static_cast<double>(i));  // by convention
  a.core_class = pickle::core_class_for(a);
  return a;
}

AxisInfo int_category(std::vector<int64_t> categories, std::string name, bool overflow, std::string label) {
  if (categories.empty()) throw Error("axis::int_category '" + name + "': no categories");
  AxisInfo a = make("category_int", static_cast<int64_t>(categories.size()), std::move(name),
                    std::move(label), false, overflow);
  a.categories_int = std::move(categories);
  for (int64_t i = 0; i <= a.size; ++i) a.edges.push_back(static_cast<double>(i));  // by convention
  a.core_class = pickle::core_class_for(a);
  return a;
}

AxisInfo boolean(std::string name, std::string label) {
  AxisInfo a = make("boolean", 2, std::move(name), std::move(label), false, false);
  a.edges = {0.0, 1.0, 2.0};
  a.core_class = pickle::core_class_for(a);
  return a;
}

std::vector<double> centers(const AxisInfo& a) {
  if (a.edges.size() != static_cast<size_t>(a.size) + 1)
    throw Error("axis::centers: axis '" + a.name + "' has no edges");
  std::vector<double> c(static_cast<size_t>(a.size));
  for (size_t i = 0; i < c.size(); ++i) c[i] = 0.5 * (a.edges[i] + a.edges[i + 1]);
  return c;
}
}  // namespace axis

}  // namespace rabbit
