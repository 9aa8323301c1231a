// Term (term.hpp): rabbit's helpers.Term and parse_axis_selection. Every selection acts on one axis, so
// the term is one map per axis (channel coordinate → term coordinate or dropped) and, composed over the
// axes, one target bin per channel bin: a sparse 0/1 matrix, never dense in the channel's bins.
#include "term.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <stdexcept>

#include "rabbit/core/error.hpp"

namespace rabbit::postfit {
namespace {

using Triplet = Eigen::Triplet<double>;

// One bound of slice(...) or one index: an int, or hist's value location M+Nj (bin of N, plus M).
struct Location {
  int64_t offset = 0;
  std::optional<double> value;
};

// Splits s on `sep` outside parentheses (rabbit's re.split(r",(?![^()]*\))")).
std::vector<std::string> split_outside_parentheses(const std::string& s, char sep) {
  std::vector<std::string> out(1);
  int depth = 0;
  for (char c : s) {
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (c == sep && depth == 0)
      out.emplace_back();
    else
      out.back() += c;
  }
  return out;
}

class SelectionParser {
 public:
  SelectionParser(const std::string& mapping, const std::string& text) : mapping_(mapping), text_(text) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw OptionError(fmt::format("-m {}: bad axis selection {}: {}", mapping_, text_, what));
  }

  int64_t integer(const std::string& s) const {
    size_t used = 0;
    int64_t v = 0;
    try {
      v = std::stoll(s, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (s.empty() || used != s.size()) fail(fmt::format("'{}' is not an integer", s));
    return v;
  }
  double real(const std::string& s) const {
    size_t used = 0;
    double v = 0;
    try {
      v = std::stod(s, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (s.empty() || used != s.size()) fail(fmt::format("'{}' is not a number", s));
    return v;
  }
  // "3", "2j", "1+2.5j", "-1-0.5j" (Python's complex() spellings that rabbit passes to hist).
  Location location(const std::string& s) const {
    if (s.empty() || s.back() != 'j') return {integer(s), std::nullopt};
    const std::string body = s.substr(0, s.size() - 1);
    size_t split = std::string::npos;
    for (size_t i = body.size(); i-- > 1;)
      if ((body[i] == '+' || body[i] == '-') && body[i - 1] != 'e' && body[i - 1] != 'E') {
        split = i;
        break;
      }
    if (split == std::string::npos) return {0, real(body)};
    const double offset = real(body.substr(0, split));
    if (offset != std::floor(offset))
      fail(fmt::format("'{}': the real part must be a whole number of bins", s));
    return {static_cast<int64_t>(offset), real(body.substr(split))};
  }

 private:
  std::string mapping_, text_;
};

// What one axis's selection does, in the order rabbit applies it: slice, then rebin, then sum.
struct AxisSelection {
  bool sliced = false;
  std::optional<Location> start, stop;
  int64_t step = 1;
  std::vector<double> rebin_edges;
  bool sum = false;
};

// The bin of value v on axis a (hist's index(): −1 below, size above), as rabbit's value locations use.
int64_t value_index(const AxisInfo& a, double v) {
  if (a.edges.size() != static_cast<size_t>(a.size + 1)) return -2;  // no edges: not a binned axis
  if (v < a.edges.front()) return -1;
  if (v >= a.edges.back()) return a.size;
  return static_cast<int64_t>(std::upper_bound(a.edges.begin(), a.edges.end(), v) - a.edges.begin()) - 1;
}

}  // namespace

Term::Term(const FitInputData& input, const std::string& mapping, const std::string& channel,
           const std::vector<std::string>& processes, const std::string& selection)
    : nbinsfull_(input.nbinsfull), nproc_(input.nproc) {
  const auto ch = std::find_if(input.channels.begin(), input.channels.end(),
                               [&](const ChannelInfo& c) { return c.name == channel; });
  if (ch == input.channels.end())
    throw OptionError(fmt::format("-m {}: unknown channel {}", mapping, channel));
  channel_ = *ch;
  for (const auto& p : processes)
    if (std::find(input.procs.begin(), input.procs.end(), p) == input.procs.end())
      throw OptionError(fmt::format("-m {}: unknown process {} (the input has {})", mapping, p,
                                    fmt::join(input.procs, ", ")));
  for (size_t p = 0; p < input.procs.size(); ++p)
    if (std::find(processes.begin(), processes.end(), input.procs[p]) != processes.end())
      processes_.push_back(static_cast<int64_t>(p));

  const size_t nax = channel_.axes.size();
  std::vector<AxisSelection> sel(nax);
  const SelectionParser parse(mapping, selection);
  if (selection != "None:None") {
    std::vector<bool> seen(nax, false);
    for (const std::string& item : split_outside_parentheses(selection, ',')) {
      const auto colon = item.find(':');
      if (colon == std::string::npos || item.find(':', colon + 1) != std::string::npos)
        parse.fail(fmt::format("'{}' is not AXIS:SELECTION", item));
      const std::string name = item.substr(0, colon), v = item.substr(colon + 1);
      const auto it = std::find_if(channel_.axes.begin(), channel_.axes.end(),
                                   [&](const AxisInfo& a) { return a.name == name; });
      if (it == channel_.axes.end())
        throw OptionError(fmt::format("-m {}: unknown axis {} of channel {}", mapping, name, channel));
      const auto a = static_cast<size_t>(it - channel_.axes.begin());
      if (seen[a]) parse.fail(fmt::format("axis {} given twice", name));
      seen[a] = true;
      AxisSelection& s = sel[a];
      if (v.rfind("slice(", 0) == 0 && v.back() == ')') {
        const auto args = split_outside_parentheses(v.substr(6, v.size() - 7), ',');
        if (args.size() < 1 || args.size() > 3)
          parse.fail(fmt::format("'{}' takes one to three arguments", v));
        std::vector<std::optional<Location>> bound;
        for (const auto& x : args)
          bound.push_back(x == "None" ? std::nullopt : std::optional(parse.location(x)));
        s.sliced = true;
        if (args.size() == 1) {
          s.stop = bound[0];  // Python's slice(stop)
        } else {
          s.start = bound[0];
          s.stop = bound[1];
        }
        if (args.size() == 3 && bound[2]) {
          if (bound[2]->value || bound[2]->offset < 1)
            parse.fail(fmt::format("'{}': the step must be a positive integer", v));
          s.step = bound[2]->offset;
        }
      } else if (v == "sum") {
        s.sum = true;
      } else if (v.rfind("rebin(", 0) == 0 && v.back() == ')') {
        for (const auto& x : split_outside_parentheses(v.substr(6, v.size() - 7), ','))
          s.rebin_edges.push_back(parse.real(x));
        if (s.rebin_edges.size() < 2) parse.fail(fmt::format("'{}' needs at least two edges", v));
      } else if (v != "None") {
        const Location at = parse.location(v);  // one bin, and the axis summed away
        s.sliced = true;
        s.start = at;
        s.stop = Location{at.offset + 1, at.value};
        s.sum = true;
      }
    }
  }

  // Per axis: coordinate map over the channel's stored bins, and the resulting axis.
  std::vector<std::vector<int64_t>> coord_map(nax);
  std::vector<int64_t> extent(nax), term_extent(nax);
  for (size_t a = 0; a < nax; ++a) {
    const AxisInfo& in = channel_.axes[a];
    const AxisSelection& s = sel[a];
    extent[a] = channel_.flow ? in.extent() : in.size;
    if (channel_.flow && (s.sliced || !s.rebin_edges.empty()))
      parse.fail(
          fmt::format("axis {}: channel {} has flow bins, which rabbit's Term slices as regular bins; "
                      "only sum and None apply there",
                      in.name, channel));
    AxisInfo out = in;
    std::vector<int64_t> map(static_cast<size_t>(extent[a]));
    for (int64_t c = 0; c < extent[a]; ++c) map[c] = c;
    if (s.sliced) {
      auto resolve = [&](const std::optional<Location>& l, int64_t fallback) -> int64_t {
        if (!l) return fallback;
        int64_t i = l->offset;
        if (l->value) {
          const int64_t at = value_index(in, *l->value);
          if (at == -2) parse.fail(fmt::format("axis {} has no bin edges for a value location", in.name));
          i += at;
        } else if (i < 0) {
          i += in.size;  // Python's negative indices
        }
        return std::clamp<int64_t>(i, 0, in.size);
      };
      const int64_t b0 = resolve(s.start, 0), b1 = std::max(b0, resolve(s.stop, in.size));
      if (b1 == b0) parse.fail(fmt::format("axis {}: the selection keeps no bin", in.name));
      if ((b1 - b0) % s.step != 0)
        parse.fail(fmt::format("axis {}: {} bins do not merge {} by {}", in.name, b1 - b0, s.step, s.step));
      for (int64_t c = 0; c < in.size; ++c)
        map[c] = (c >= b0 && c < b1 && (c - b0) % s.step == 0) ? (c - b0) / s.step : -1;
      out.size = (b1 - b0) / s.step;
      out.core_class.clear();
      if (!in.edges.empty()) {
        std::vector<double> e;
        for (int64_t k = b0; k <= b1; k += s.step) e.push_back(in.edges[k]);
        out.edges = e;
      }
      if (!in.categories_str.empty() || !in.categories_int.empty()) {
        if (s.step != 1) parse.fail(fmt::format("axis {}: a category axis cannot be merged", in.name));
        if (!in.categories_str.empty())
          out.categories_str.assign(in.categories_str.begin() + b0, in.categories_str.begin() + b1);
        if (!in.categories_int.empty())
          out.categories_int.assign(in.categories_int.begin() + b0, in.categories_int.begin() + b1);
      }
    }
    if (!s.rebin_edges.empty()) {
      // rabbit's segment ids: a new segment starts at every old lower edge equal to a new edge; old
      // bins before the first new edge, and after the last one when it is below the axis's end, drop.
      const auto& old = out.edges;
      if (old.size() != static_cast<size_t>(out.size + 1))
        parse.fail(fmt::format("axis {} has no bin edges to rebin", in.name));
      auto close = [](double x, double y) { return std::abs(x - y) <= 1e-8 + 1e-5 * std::abs(y); };
      std::vector<double> kept;
      for (double e : s.rebin_edges) {
        const auto it = std::find_if(old.begin(), old.end(), [&](double o) { return close(o, e); });
        if (it == old.end()) parse.fail(fmt::format("rebin edge {} is not an edge of axis {}", e, in.name));
        if (!kept.empty() && *it <= kept.back())
          parse.fail(fmt::format("rebin edges of axis {} must increase", in.name));
        kept.push_back(*it);
      }
      std::vector<int64_t> segment(static_cast<size_t>(out.size));
      int64_t seg = -1;
      for (int64_t k = 0; k < out.size; ++k) {
        if (std::any_of(kept.begin(), kept.end(), [&](double e) { return close(old[k], e); })) ++seg;
        segment[k] = seg;
      }
      if (!close(kept.back(), old.back()))
        for (auto& g : segment)
          if (g == seg) g = -1;
      for (int64_t c = 0; c < extent[a]; ++c)
        if (map[c] >= 0) map[c] = segment[map[c]];
      out.kind = "variable";  // rabbit's rebinHist makes a variable axis
      out.core_class.clear();
      out.edges = kept;
      out.size = static_cast<int64_t>(kept.size()) - 1;
    }
    coord_map[a] = std::move(map);
    term_extent[a] = channel_.flow ? out.extent() : out.size;
    if (!s.sum) axes_.push_back(std::move(out));
  }

  // Term bins row-major over the kept axes (stored bins: flow included when the channel has flow).
  std::vector<int64_t> stride(nax, 0);
  size_ = 1;
  for (size_t a = nax; a-- > 0;) {
    if (sel[a].sum) continue;
    stride[a] = size_;
    size_ *= term_extent[a];
  }
  target_.assign(static_cast<size_t>(channel_.nbins()), -1);
  std::vector<int64_t> coord(nax);
  for (int64_t b = 0; b < channel_.nbins(); ++b) {
    int64_t rest = b, t = 0;
    bool kept = true;
    for (size_t a = nax; a-- > 0;) {
      const int64_t m = coord_map[a][rest % extent[a]];
      rest /= extent[a];
      if (m < 0) kept = false;
      t += m * stride[a];
    }
    if (kept) target_[b] = t;
  }
}

std::vector<int64_t> Term::selected_or_all() const {
  if (!processes_.empty()) return processes_;
  std::vector<int64_t> all(static_cast<size_t>(nproc_));
  for (int64_t p = 0; p < nproc_; ++p) all[p] = p;
  return all;
}

Eigen::VectorXd Term::select(const Eigen::VectorXd& nu_full) const {
  Eigen::VectorXd y = Eigen::VectorXd::Zero(size_);
  for (size_t b = 0; b < target_.size(); ++b)
    if (target_[b] >= 0) y(target_[b]) += nu_full(channel_.start + static_cast<int64_t>(b));
  return y;
}

Eigen::VectorXd Term::select_processes(const Eigen::MatrixXd& n_full) const {
  return select_per_process(n_full).rowwise().sum();
}

Eigen::MatrixXd Term::select_per_process(const Eigen::MatrixXd& n_full) const {
  const auto procs = selected_or_all();
  Eigen::MatrixXd y = Eigen::MatrixXd::Zero(size_, static_cast<int64_t>(procs.size()));
  for (size_t b = 0; b < target_.size(); ++b) {
    if (target_[b] < 0) continue;
    for (size_t k = 0; k < procs.size(); ++k)
      y(target_[b], static_cast<int64_t>(k)) += n_full(channel_.start + static_cast<int64_t>(b), procs[k]);
  }
  return y;
}

MappingJacobian Term::matrix() const {
  std::vector<Triplet> t;
  for (size_t b = 0; b < target_.size(); ++b)
    if (target_[b] >= 0) t.emplace_back(target_[b], channel_.start + static_cast<int64_t>(b), 1.0);
  MappingJacobian m(size_, nbinsfull_);
  m.setFromTriplets(t.begin(), t.end());
  return m;
}

MappingJacobian Term::process_matrix() const {
  std::vector<Triplet> t;
  for (size_t b = 0; b < target_.size(); ++b)
    if (target_[b] >= 0)
      for (int64_t p : selected_or_all())
        t.emplace_back(target_[b], (channel_.start + static_cast<int64_t>(b)) * nproc_ + p, 1.0);
  MappingJacobian m(size_, nbinsfull_ * nproc_);
  m.setFromTriplets(t.begin(), t.end());
  return m;
}

MappingJacobian Term::per_process_matrix() const {
  const auto procs = selected_or_all();
  const auto nsel = static_cast<int64_t>(procs.size());
  std::vector<Triplet> t;
  for (size_t b = 0; b < target_.size(); ++b)
    if (target_[b] >= 0)
      for (int64_t k = 0; k < nsel; ++k)
        t.emplace_back(target_[b] * nsel + k, (channel_.start + static_cast<int64_t>(b)) * nproc_ + procs[k],
                       1.0);
  MappingJacobian m(size_ * nsel, nbinsfull_ * nproc_);
  m.setFromTriplets(t.begin(), t.end());
  return m;
}

bool is_axis_selection(const std::string& arg) {
  return arg.find(':') != std::string::npos;
}

std::vector<std::string> parse_process_list(const std::string& arg) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : arg + ",") {
    if (c != ',') {
      cur += c;
      continue;
    }
    if (cur != "None") out.push_back(cur);
    cur.clear();
  }
  return out;
}

}  // namespace rabbit::postfit
