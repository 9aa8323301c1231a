#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "compare_internal.hpp"

namespace rabbit::compare::detail {
namespace {

// Category labels that read as numbers compare by value: upstream writes scan points as numpy's
// str(), a result file may store the float64 itself ("0.1" and 0.1000000000000000055 match).
std::string label_key(const std::string& label) {
  if (label.empty()) return label;
  const char* begin = label.c_str();
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(begin, &end);
  if (end != begin + label.size() || errno == ERANGE || label.front() == ' ') return label;
  std::string key(1, '\x01');  // cannot collide with a label that is not a number
  return key += number_label(v);
}

// In-range bins and the offset of the first one, for a binned axis; `other` decides for a side that
// stores more entries than the other side's known bins (its flow bins, the underflow first).
std::pair<int64_t, int64_t> in_range(const TreeAxis& x, const TreeAxis& other) {
  if (x.bins >= 0) return {x.bins, (x.extent > x.bins && x.underflow) ? 1 : 0};
  if (other.bins >= 0 && x.extent > other.bins) return {other.bins, other.underflow ? 1 : 0};
  return {x.extent, 0};
}

std::string axis_name(size_t i, const TreeAxis& axis) {
  return "axis " + std::to_string(i) + (axis.name.empty() ? "" : " (" + axis.name + ")");
}

std::string match_axis(size_t i, const TreeAxis& a, const TreeAxis& b, AxisMatch& m,
                       std::vector<std::string>& only_in_b) {
  if (a.category != b.category) return axis_name(i, a) + " is a category axis on one side only";
  if (a.category) {
    std::unordered_map<std::string, long> in_b;
    for (size_t k = 0; k < b.labels.size(); ++k) in_b.emplace(label_key(b.labels[k]), static_cast<long>(k));
    std::unordered_set<std::string> in_a;
    for (size_t k = 0; k < a.labels.size(); ++k) {
      const std::string key = label_key(a.labels[k]);
      const auto it = in_b.find(key);
      m.a.push_back(static_cast<long>(k));
      m.b.push_back(it == in_b.end() ? -1 : it->second);
      m.labels.push_back(a.labels[k]);
      in_a.insert(key);
    }
    for (const auto& l : b.labels)
      if (!in_a.count(label_key(l))) only_in_b.push_back(axis_name(i, b) + ": " + l);
    return "";
  }
  const auto [na, offset_a] = in_range(a, b);
  const auto [nb, offset_b] = in_range(b, a);
  if (na != nb || a.extent < na + offset_a || b.extent < nb + offset_b)
    return axis_name(i, a) + " has " + std::to_string(a.extent) + " entries (" + std::to_string(na) +
           " bins) in A, " + std::to_string(b.extent) + " (" + std::to_string(nb) + " bins) in B";
  auto add = [&m](int64_t ka, int64_t kb, std::string label) {
    m.a.push_back(static_cast<long>(ka));
    m.b.push_back(static_cast<long>(kb));
    m.labels.push_back(std::move(label));
  };
  // Flow bins are compared where both sides store the same ones (two result files).
  const bool same_flow = a.extent - na == b.extent - nb && offset_a == offset_b;
  if (same_flow && offset_a == 1) add(0, 0, "underflow");
  for (int64_t k = 0; k < na; ++k) add(k + offset_a, k + offset_b, std::to_string(k));
  if (same_flow && a.extent - na - offset_a == 1) add(a.extent - 1, b.extent - 1, "overflow");
  return "";
}

size_t total_extent(const TreeHist& h) {
  size_t n = 1;
  for (const auto& axis : h.axes) n *= static_cast<size_t>(std::max<int64_t>(axis.extent, 0));
  return n;
}

}  // namespace

Alignment align(const TreeHist& a, const TreeHist& b) {
  Alignment out;
  if (a.axes.size() != b.axes.size()) {
    out.error = "rank " + std::to_string(a.axes.size()) + " in A, " + std::to_string(b.axes.size()) + " in B";
    return out;
  }
  for (const auto* h : {&a, &b}) {
    const bool variances_fit = h->variances.empty() || h->variances.size() == h->values.size();
    if (h->values.size() != total_extent(*h) || !variances_fit) {
      out.error = std::string(h == &a ? "A" : "B") + "'s values do not fill its axes";
      return out;
    }
  }
  out.axes.resize(a.axes.size());
  for (size_t i = 0; i < a.axes.size(); ++i) {
    out.error = match_axis(i, a.axes[i], b.axes[i], out.axes[i], out.only_in_b);
    if (!out.error.empty()) return out;
    out.a_extent.push_back(static_cast<long>(a.axes[i].extent));
    out.b_extent.push_back(static_cast<long>(b.axes[i].extent));
  }
  return out;
}

size_t Alignment::size() const {
  size_t n = 1;
  for (const auto& m : axes) n *= m.a.size();
  return error.empty() ? n : 0;
}

long Alignment::a(size_t entry) const {
  long flat = 0, stride = 1;
  for (size_t i = axes.size(); i-- > 0;) {
    const size_t n = axes[i].a.size();
    flat += axes[i].a[entry % n] * stride;
    stride *= a_extent[i];
    entry /= n;
  }
  return flat;
}

long Alignment::b(size_t entry) const {
  long flat = 0, stride = 1;
  for (size_t i = axes.size(); i-- > 0;) {
    const size_t n = axes[i].b.size();
    const long k = axes[i].b[entry % n];
    if (k < 0) return -1;
    flat += k * stride;
    stride *= b_extent[i];
    entry /= n;
  }
  return flat;
}

std::string Alignment::label(size_t entry) const {
  std::vector<const std::string*> parts(axes.size());
  for (size_t i = axes.size(); i-- > 0;) {
    const size_t n = axes[i].labels.size();
    parts[i] = &axes[i].labels[entry % n];
    entry /= n;
  }
  std::string out = "[";
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? "," : "") + *parts[i];
  return out + "]";
}

}  // namespace rabbit::compare::detail
