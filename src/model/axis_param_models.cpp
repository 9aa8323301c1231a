// The Axis-type param models (docs/model.md "Axis-type param models"): in one channel, each selected
// process gets its own parameters per cell of a set of axes, and its rate in a bin is a function of the
// few parameters of that bin's cell; every other (bin, process) keeps rate 1. Each rate depends on at
// most two parameters, so the Jacobian has at most two nonzeros per row and the curvature is a 2×2 block.
#include "axis_param_models.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "abcd_regions.hpp"
#include "bin_dependent_param_model.hpp"
#include "name_list.hpp"
#include "rabbit/core/error.hpp"
#include "rabbit/io/fit_input_data.hpp"
#include "rabbit/model/model_options.hpp"

namespace rabbit {
namespace {

using abcd::fail;  // "--paramModel MODEL: what", one message for all param models

/// The channel, the selected processes and the axes of a cell, as the command line names them.
struct Selection {
  int64_t channel = 0;
  std::vector<int64_t> procs;  // process indices, in the order given ("all": input order)
  std::vector<std::string> proc_names;
};

Selection select(const std::string& model, const FitInputData& in, const std::string& channel,
                 const std::string& proc_spec) {
  Selection s;
  std::vector<std::string> channels;
  for (const auto& c : in.channels) channels.push_back(c.name);
  const auto ch = std::find(channels.begin(), channels.end(), channel);
  if (ch == channels.end())
    fail(model, fmt::format("channel '{}' not found; channels: [{}]", channel, fmt::join(channels, ", ")));
  s.channel = ch - channels.begin();
  // Rabbit sizes the channel by its regular bins only; a channel that stores flow bins is not addressed.
  if (in.channels[s.channel].flow)
    fail(model, fmt::format("channel '{}' has flow bins, which the Axis models do not address", channel));
  s.proc_names = proc_spec == "all" ? in.procs : split_commas(proc_spec, Blanks::strip);
  for (const auto& p : s.proc_names) {
    const auto it = std::find(in.procs.begin(), in.procs.end(), p);
    if (it == in.procs.end())
      fail(model, fmt::format("process '{}' not found; processes: [{}]", p, fmt::join(in.procs, ", ")));
    if (std::find(s.procs.begin(), s.procs.end(), it - in.procs.begin()) != s.procs.end())
      fail(model, fmt::format("process '{}' is listed more than once", p));
    s.procs.push_back(it - in.procs.begin());
  }
  return s;
}

/// Positions in the channel's axes of the comma-listed axis names (`role` names them in errors).
std::vector<int64_t> axis_positions(const std::string& model, const ChannelInfo& ch, const std::string& csv,
                                    const std::string& role) {
  std::vector<std::string> available;
  for (const auto& a : ch.axes) available.push_back(a.name);
  std::vector<int64_t> out;
  for (const auto& name : split_commas(csv, Blanks::strip)) {
    const auto it = std::find(available.begin(), available.end(), name);
    if (it == available.end())
      fail(model, fmt::format("{} '{}' not found in channel '{}'; axes: [{}]", role, name, ch.name,
                              fmt::join(available, ", ")));
    if (std::find(out.begin(), out.end(), it - available.begin()) != out.end())
      fail(model, fmt::format("{} '{}' is listed more than once", role, name));
    out.push_back(it - available.begin());
  }
  return out;
}

/// Parameter labels "<axis><index>_..." over the cells of the axes, row-major in the order given.
std::vector<std::string> cell_labels(const ChannelInfo& ch, const std::vector<int64_t>& axes) {
  std::vector<std::string> out{""};
  for (size_t j = 0; j < axes.size(); ++j) {
    std::vector<std::string> next;
    for (const auto& prefix : out)
      for (int64_t i = 0; i < ch.axes[axes[j]].size; ++i)
        next.push_back(fmt::format("{}{}{}{}", prefix, j ? "_" : "", ch.axes[axes[j]].name, i));
    out = std::move(next);
  }
  return out;
}

/// Cell of each channel bin: row-major over the given axes taken in the *channel's* axis order. Rabbit
/// reshapes the parameters that way while it names them in the order given, so the two agree only when
/// the axes are given in channel order (docs/model.md "Axis-type param models").
std::vector<int64_t> cell_of_bins(const ChannelInfo& ch, std::vector<int64_t> axes) {
  std::sort(axes.begin(), axes.end());
  std::vector<int64_t> out(ch.nbins());
  std::vector<int64_t> idx(ch.axes.size(), 0);
  for (int64_t b = 0; b < ch.nbins(); ++b) {
    int64_t rest = b;
    for (auto j = static_cast<int64_t>(ch.axes.size()) - 1; j >= 0; --j) {
      idx[j] = rest % ch.axes[j].size;
      rest /= ch.axes[j].size;
    }
    int64_t cell = 0;
    for (int64_t j : axes) cell = cell * ch.axes[j].size + idx[j];
    out[b] = cell;
  }
  return out;
}

/// Index along channel axis j of each channel bin.
std::vector<int64_t> axis_index_of_bins(const ChannelInfo& ch, int64_t j) {
  int64_t inner = 1;
  for (size_t k = j + 1; k < ch.axes.size(); ++k) inner *= ch.axes[k].size;
  std::vector<int64_t> out(ch.nbins());
  for (int64_t b = 0; b < ch.nbins(); ++b) out[b] = (b / inner) % ch.axes[j].size;
  return out;
}

/// x_m ∈ [0, 1] at the bin centres of the shape axis: (c_m − c_0)/(c_last − c_0), the span at least 1e-6.
/// Rabbit computes it in float32 (np.asarray(centers, dtype=np.float32)), so we round as it does.
std::vector<double> normalised_centres(const std::string& model, const ChannelInfo& ch,
                                       const AxisInfo& axis) {
  if (static_cast<int64_t>(axis.edges.size()) != axis.size + 1)
    fail(model, fmt::format("shape axis '{}' of channel '{}' has no bin edges (a {} axis)", axis.name,
                            ch.name, axis.kind));
  std::vector<float> c(axis.size);
  for (int64_t m = 0; m < axis.size; ++m)
    c[m] = static_cast<float>(0.5 * (axis.edges[m] + axis.edges[m + 1]));
  const float diff = c.back() - c.front();
  const float span = static_cast<double>(diff) >= 1e-6 ? diff : static_cast<float>(1e-6);
  std::vector<double> x(axis.size);
  for (int64_t m = 0; m < axis.size; ++m) x[m] = static_cast<double>((c[m] - c.front()) / span);
  return x;
}

/// What the rate of one (bin, selected process) is made of: its parameters (k of them, 1 or 2), its value,
/// gradient and Hessian in those parameters.
struct LocalRate {
  int k = 0;
  int64_t index[2] = {0, 0};
  double value = 1.0;
  double grad[2] = {0.0, 0.0};
  double hess[2][2] = {{0.0, 0.0}, {0.0, 0.0}};
};

class AxisParamModel : public BinDependentParamModel {
 public:
  AxisParamModel(std::string name, const FitInputData& in, const Selection& sel,
                 std::vector<std::string> names, Eigen::VectorXd defaults)
      : name_(std::move(name)),
        nproc_(in.nproc),
        start_(in.channels[sel.channel].start),
        stop_(in.channels[sel.channel].stop),
        procs_(sel.procs),
        names_(std::move(names)),
        defaults_(std::move(defaults)) {}

  int64_t npoi() const override { return static_cast<int64_t>(names_.size()); }
  int64_t npou() const override { return 0; }
  std::vector<std::string> names() const override { return names_; }
  Eigen::VectorXd default_values() const override { return defaults_; }
  // The models keep their rates positive themselves, so rabbit passes the raw parameters through.
  bool allow_negative_param() const override { return true; }
  bool is_linear() const override { return false; }

  void bin_rates(const Eigen::VectorXd& pi, int64_t b0, int64_t b1, Eigen::MatrixXd& r) const override {
    r = Eigen::MatrixXd::Ones(b1 - b0, nproc_);
    for (int64_t b = std::max(b0, start_); b < std::min(b1, stop_); ++b)
      for (size_t i = 0; i < procs_.size(); ++i) r(b - b0, procs_[i]) = local(pi, i, b - start_).value;
  }

  Eigen::SparseMatrix<double, Eigen::RowMajor> rate_jacobian(const Eigen::VectorXd& pi, int64_t b0,
                                                             int64_t b1) const override {
    std::vector<Eigen::Triplet<double>> nz;
    for (int64_t b = std::max(b0, start_); b < std::min(b1, stop_); ++b)
      for (size_t i = 0; i < procs_.size(); ++i) {
        const LocalRate l = local(pi, i, b - start_);
        for (int a = 0; a < l.k; ++a) nz.emplace_back((b - b0) * nproc_ + procs_[i], l.index[a], l.grad[a]);
      }
    Eigen::SparseMatrix<double, Eigen::RowMajor> out((b1 - b0) * nproc_, npoi());
    out.setFromTriplets(nz.begin(), nz.end());
    return out;
  }

  Eigen::MatrixXd curvature_product(const Eigen::VectorXd& pi, int64_t b0, int64_t b1,
                                    const Eigen::MatrixXd& w, const Eigen::MatrixXd& v) const override {
    Eigen::MatrixXd out = Eigen::MatrixXd::Zero(npoi(), v.cols());
    for (int64_t b = std::max(b0, start_); b < std::min(b1, stop_); ++b)
      for (size_t i = 0; i < procs_.size(); ++i) {
        const double wb = w(b - b0, procs_[i]);
        if (wb == 0.0) continue;
        const LocalRate l = local(pi, i, b - start_);
        for (int a = 0; a < l.k; ++a)
          for (int c = 0; c < l.k; ++c)
            if (l.hess[a][c] != 0.0) out.row(l.index[a]) += (wb * l.hess[a][c]) * v.row(l.index[c]);
      }
    return out;
  }

 protected:
  std::string model_name() const override { return name_; }
  /// The rate of selected process i in channel bin b (0-based within the channel).
  virtual LocalRate local(const Eigen::VectorXd& pi, size_t i, int64_t b) const = 0;

 private:
  std::string name_;
  int64_t nproc_, start_, stop_;
  std::vector<int64_t> procs_;
  std::vector<std::string> names_;
  Eigen::VectorXd defaults_;
};

/// AxisNormModel: r = x² for the parameter x of the bin's cell (x² keeps the norm non-negative while the
/// fitter sees an unconstrained x; rabbit's default x = √1 = 1).
class AxisNormModel final : public AxisParamModel {
 public:
  AxisNormModel(const FitInputData& in, const Selection& sel, std::vector<std::string> names,
                Eigen::VectorXd defaults, std::vector<int64_t> cell_of, int64_t n_cell)
      : AxisParamModel("AxisNormModel", in, sel, std::move(names), std::move(defaults)),
        cell_of_(std::move(cell_of)),
        n_cell_(n_cell) {}

 protected:
  LocalRate local(const Eigen::VectorXd& pi, size_t i, int64_t b) const override {
    LocalRate l;
    l.k = 1;
    l.index[0] = static_cast<int64_t>(i) * n_cell_ + cell_of_[b];
    const double x = pi[l.index[0]];
    l.value = x * x;
    l.grad[0] = 2.0 * x;
    l.hess[0][0] = 2.0;
    return l;
  }

 private:
  std::vector<int64_t> cell_of_;
  int64_t n_cell_;
};

/// AxisExpModel: r = exp(a + s·x) with the log-amplitude a of the bin's cell, the slope s of its slope
/// cell and x the normalised centre of its shape-axis bin; ∂r/∂(a, s) = r (1, x), ∂²r = r [[1, x], [x, x²]].
class AxisExpModel final : public AxisParamModel {
 public:
  AxisExpModel(const FitInputData& in, const Selection& sel, std::vector<std::string> names,
               std::vector<int64_t> cell_of, int64_t n_cell, std::vector<int64_t> slope_of, int64_t n_slope,
               std::vector<double> x_of)
      : AxisParamModel("AxisExpModel", in, sel, names,
                       Eigen::VectorXd::Zero(static_cast<int64_t>(names.size()))),
        cell_of_(std::move(cell_of)),
        slope_of_(std::move(slope_of)),
        x_of_(std::move(x_of)),
        n_cell_(n_cell),
        n_slope_(n_slope) {}

 protected:
  LocalRate local(const Eigen::VectorXd& pi, size_t i, int64_t b) const override {
    LocalRate l;
    l.k = 2;
    const int64_t base = static_cast<int64_t>(i) * (n_cell_ + n_slope_);
    l.index[0] = base + cell_of_[b];
    l.index[1] = base + n_cell_ + slope_of_[b];
    const double x = x_of_[b];
    l.value = std::exp(pi[l.index[0]] + pi[l.index[1]] * x);
    l.grad[0] = l.value;
    l.grad[1] = l.value * x;
    l.hess[0][0] = l.value;
    l.hess[0][1] = l.hess[1][0] = l.value * x;
    l.hess[1][1] = l.value * x * x;
    return l;
  }

 private:
  std::vector<int64_t> cell_of_, slope_of_;
  std::vector<double> x_of_;  // per channel bin
  int64_t n_cell_, n_slope_;
};

/// softplus(u) = log(1 + e^u), evaluated without overflow; its derivative is the logistic σ(u).
double softplus(double u) {
  return u > 0.0 ? u + std::log1p(std::exp(-u)) : std::log1p(std::exp(u));
}
double logistic(double u) {
  return 1.0 / (1.0 + std::exp(-u));
}

/// AxisBernsteinModel: r = c0 (1 − x) + c1 x with c = softplus(u) of the raw parameters u0, u1 of the
/// bin's cell (softplus keeps the endpoints positive); ∂r/∂u0 = σ(u0)(1 − x), ∂r/∂u1 = σ(u1) x and the
/// Hessian is diagonal, σ'(u) = σ(u)(1 − σ(u)) times the same weights.
class AxisBernsteinModel final : public AxisParamModel {
 public:
  AxisBernsteinModel(const FitInputData& in, const Selection& sel, std::vector<std::string> names,
                     std::vector<int64_t> cell_of, int64_t n_cell, std::vector<double> x_of)
      // rabbit's default u = softplus⁻¹(1) = log(e − 1): c0 = c1 = 1, a flat unit rate
      : AxisParamModel(
            "AxisBernsteinModel", in, sel, names,
            Eigen::VectorXd::Constant(static_cast<int64_t>(names.size()), std::log(std::exp(1.0) - 1.0))),
        cell_of_(std::move(cell_of)),
        x_of_(std::move(x_of)),
        n_cell_(n_cell) {}

 protected:
  LocalRate local(const Eigen::VectorXd& pi, size_t i, int64_t b) const override {
    LocalRate l;
    l.k = 2;
    l.index[0] = static_cast<int64_t>(i) * 2 * n_cell_ + cell_of_[b];
    l.index[1] = l.index[0] + n_cell_;
    const double x = x_of_[b], weight[2] = {1.0 - x, x};
    l.value = 0.0;
    for (int a = 0; a < 2; ++a) {
      const double u = pi[l.index[a]], sigma = logistic(u);
      l.value += softplus(u) * weight[a];
      l.grad[a] = sigma * weight[a];
      l.hess[a][a] = sigma * (1.0 - sigma) * weight[a];
    }
    return l;
  }

 private:
  std::vector<int64_t> cell_of_;
  std::vector<double> x_of_;  // per channel bin
  int64_t n_cell_;
};

/// The shape axis (one name) and the cell axes of AxisExpModel and AxisBernsteinModel, checked alike.
struct ShapeAndCells {
  int64_t shape;
  std::vector<int64_t> cells;
};
ShapeAndCells shape_and_cells(const std::string& model, const ChannelInfo& ch, const std::string& shape_arg,
                              const std::string& cells_arg) {
  if (shape_arg.find(',') != std::string::npos)
    fail(model, fmt::format("the shape axis is one axis, got '{}'", shape_arg));
  ShapeAndCells out{axis_positions(model, ch, shape_arg, "shape axis").front(),
                    axis_positions(model, ch, cells_arg, "cell axis")};
  if (std::find(out.cells.begin(), out.cells.end(), out.shape) != out.cells.end())
    fail(model, fmt::format("axis '{}' is both the shape axis and a cell axis", ch.axes[out.shape].name));
  return out;
}

/// x of each channel bin: the normalised centre of its shape-axis bin.
std::vector<double> shape_x_of_bins(const std::string& model, const ChannelInfo& ch, int64_t shape) {
  const auto x_m = normalised_centres(model, ch, ch.axes[shape]);
  std::vector<double> x_of;
  for (int64_t m : axis_index_of_bins(ch, shape)) x_of.push_back(x_m[m]);
  return x_of;
}

}  // namespace

std::shared_ptr<const ParamModel> make_axis_exp(const FitInputData& in, const ParamModelSpec& spec,
                                                const std::vector<std::pair<std::string, double>>&, bool) {
  // Rabbit's AxisExpModel does not read --expectSignal: it always starts flat at amplitude 1.
  const std::string model = "AxisExpModel";
  if (spec.args.size() != 4 && spec.args.size() != 5)
    fail(model, fmt::format("expected 4 or 5 arguments (CHANNEL PROCS SHAPE_AXIS CELL_AXES [SLOPE_AXES]; "
                            "PROCS 'all' or a comma list, the axes comma lists), got {}",
                            spec.args.size()));
  const Selection sel = select(model, in, spec.args[0], spec.args[1]);
  const ChannelInfo& ch = in.channels[sel.channel];
  const auto [shape, cells] = shape_and_cells(model, ch, spec.args[2], spec.args[3]);
  const auto slopes = spec.args.size() == 5 ? axis_positions(model, ch, spec.args[4], "slope axis") : cells;
  for (int64_t j : slopes)
    if (std::find(cells.begin(), cells.end(), j) == cells.end())
      fail(model,
           fmt::format("slope axis '{}' is not a cell axis ({}); slope axes are a subset of the cell axes",
                       ch.axes[j].name, spec.args[3]));
  const auto cell_names = cell_labels(ch, cells), slope_names = cell_labels(ch, slopes);
  std::vector<std::string> names;
  for (const auto& p : sel.proc_names) {
    for (const auto& label : cell_names) names.push_back(fmt::format("lnAmpl_{}_{}", p, label));
    for (const auto& label : slope_names) names.push_back(fmt::format("slope_{}_{}", p, label));
  }
  const auto x_m = normalised_centres(model, ch, ch.axes[shape]);
  std::vector<double> x_of;
  for (int64_t m : axis_index_of_bins(ch, shape)) x_of.push_back(x_m[m]);
  return std::make_shared<AxisExpModel>(
      in, sel, names, cell_of_bins(ch, cells), static_cast<int64_t>(cell_names.size()),
      cell_of_bins(ch, slopes), static_cast<int64_t>(slope_names.size()), shape_x_of_bins(model, ch, shape));
}

std::shared_ptr<const ParamModel> make_axis_bernstein(
    const FitInputData& in, const ParamModelSpec& spec,
    const std::vector<std::pair<std::string, double>>& expect_signal, bool) {
  const std::string model = "AxisBernsteinModel";
  if (spec.args.size() != 4)
    fail(model,
         fmt::format("expected exactly 4 arguments (CHANNEL PROCS SHAPE_AXIS CELL_AXES; PROCS 'all' or a "
                     "comma list, CELL_AXES a comma list), got {}",
                     spec.args.size()));
  // as rabbit: any --expectSignal is refused while this model is loaded (its endpoints have no such default)
  if (!expect_signal.empty())
    throw OptionError(
        fmt::format("--expectSignal {}: param model {} does not take --expectSignal (rabbit refuses "
                    "it too)",
                    expect_signal.front().first, model));
  const Selection sel = select(model, in, spec.args[0], spec.args[1]);
  const ChannelInfo& ch = in.channels[sel.channel];
  const auto [shape, cells] = shape_and_cells(model, ch, spec.args[2], spec.args[3]);
  const auto labels = cell_labels(ch, cells);
  std::vector<std::string> names;
  for (const auto& p : sel.proc_names)
    for (const char* prefix : {"c0", "c1"})
      for (const auto& label : labels) names.push_back(fmt::format("{}_{}_{}", prefix, p, label));
  return std::make_shared<AxisBernsteinModel>(in, sel, names, cell_of_bins(ch, cells),
                                              static_cast<int64_t>(labels.size()),
                                              shape_x_of_bins(model, ch, shape));
}

std::shared_ptr<const ParamModel> make_axis_norm(
    const FitInputData& in, const ParamModelSpec& spec,
    const std::vector<std::pair<std::string, double>>& expect_signal, bool) {
  const std::string model = "AxisNormModel";
  if (spec.args.size() != 3)
    fail(model, fmt::format("expected exactly 3 arguments (CHANNEL PROCS AXES; PROCS 'all' or a comma list, "
                            "AXES a comma list), got {}",
                            spec.args.size()));
  const Selection sel = select(model, in, spec.args[0], spec.args[1]);
  const ChannelInfo& ch = in.channels[sel.channel];
  const auto axes = axis_positions(model, ch, spec.args[2], "axis");
  const auto labels = cell_labels(ch, axes);
  std::vector<std::string> names;
  for (const auto& p : sel.proc_names)
    for (const auto& label : labels) names.push_back(fmt::format("norm_{}_{}", p, label));
  // --expectSignal sets the norm itself; the parameter starts at its square root (as rabbit).
  Eigen::VectorXd defaults = Eigen::VectorXd::Ones(static_cast<int64_t>(names.size()));
  for (const auto& [name, value] : expect_signal) {
    const auto it = std::find(names.begin(), names.end(), name);
    if (it == names.end())
      throw OptionError(
          fmt::format("--expectSignal: '{}' is not a parameter of param model {} (its "
                      "parameters: [{}])",
                      name, model, fmt::join(names, ", ")));
    if (value < 0.0)
      throw OptionError(
          fmt::format("--expectSignal {} {}: an {} norm cannot be negative", name, value, model));
    defaults[it - names.begin()] = std::sqrt(value);
  }
  return std::make_shared<AxisNormModel>(in, sel, std::move(names), std::move(defaults),
                                         cell_of_bins(ch, axes), static_cast<int64_t>(labels.size()));
}

}  // namespace rabbit
