// SmoothABCD and SmoothExtendedABCD (docs/model.md "Smooth ABCD"): the ABCD family with the free
// regions' rates along one smoothing axis given by an exponential Chebyshev polynomial per outer bin,
// s(x) = exp(Σ_j p_j T_j(x̃)), x̃ the bin centre mapped from the axis edges onto [−1, 1]. D is the family's
// monomial of them (times the MC correction), a zero denominator replaced by 1e-10 as in rabbit.
// With u_k = log s_k, D = f Π_k s_k^{e_k} has ∂D/∂u_k = e_k D and ∂²D/∂u_a∂u_c = e_a e_c D, and each u_k
// is linear in its coefficients, so every derivative is a product of D (or s) with Chebyshev values.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "abcd_param_models.hpp"
#include "abcd_regions.hpp"
#include "bin_dependent_param_model.hpp"
#include "rabbit/io/fit_input_data.hpp"
#include "rabbit/model/model_options.hpp"

namespace rabbit {
namespace {

using namespace abcd;

/// A region's bins laid out as rabbit's smooth models lay them: outer bins (every free axis but the
/// smoothing one, row-major in the channel's axis order) × smoothing-axis bins, and the outer labels.
struct SmoothRegion {
  std::vector<int64_t> bins;  // [outer · n_smooth + s]
  std::vector<std::string> outer_labels;
  int64_t n_smooth = 0, n_outer = 0;
  int64_t channel = 0, smooth_axis = 0;
};

SmoothRegion smooth_region(const std::string& model, const FitInputData& in, const RegionSpec& r,
                           const std::string& label, const std::string& smoothing_axis) {
  const ResolvedRegion region = resolve_region(model, in, r);
  const ChannelInfo& ch = in.channels[region.channel];
  SmoothRegion out;
  out.channel = region.channel;
  std::vector<int64_t> outer;  // axis positions
  std::vector<std::string> free_names;
  out.smooth_axis = -1;
  for (int64_t j = 0; j < static_cast<int64_t>(ch.axes.size()); ++j) {
    if (region.fixed[j] >= 0) continue;
    free_names.push_back(ch.axes[j].name);
    if (ch.axes[j].name == smoothing_axis)
      out.smooth_axis = j;
    else
      outer.push_back(j);
  }
  if (out.smooth_axis < 0)
    fail(model,
         fmt::format("smoothing axis '{}' not found among the free axes of channel '{}' for region {}; "
                     "free axes: [{}]",
                     smoothing_axis, r.channel, label, fmt::join(free_names, ", ")));
  out.n_smooth = ch.axes[out.smooth_axis].size;
  out.n_outer = 1;
  for (int64_t j : outer) out.n_outer *= ch.axes[j].size;
  std::vector<int64_t> idx = region.fixed;
  for (int64_t m = 0; m < out.n_outer; ++m) {
    int64_t rest = m;
    for (auto j = static_cast<int64_t>(outer.size()) - 1; j >= 0; --j) {
      idx[outer[j]] = rest % ch.axes[outer[j]].size;
      rest /= ch.axes[outer[j]].size;
    }
    std::string outer_label;
    for (size_t j = 0; j < outer.size(); ++j)
      outer_label += fmt::format("{}{}{}", j ? "_" : "", ch.axes[outer[j]].name, idx[outer[j]]);
    out.outer_labels.push_back(outer.empty() ? "outer0" : outer_label);
    for (int64_t s = 0; s < out.n_smooth; ++s) {
      idx[out.smooth_axis] = s;
      out.bins.push_back(global_bin(in, out.channel, idx));
    }
  }
  return out;
}

/// T_j(x̃_s) [order+1 × n_smooth] at the bin centres of the axis, x̃ = 2(x − x_min)/(x_max − x_min) − 1
/// (0 for an axis of zero width), as rabbit's basis.
Eigen::MatrixXd chebyshev_basis(const std::string& model, const ChannelInfo& ch, const AxisInfo& axis,
                                int64_t order) {
  if (static_cast<int64_t>(axis.edges.size()) != axis.size + 1)
    fail(model, fmt::format("smoothing axis '{}' of channel '{}' has no bin edges (a {} axis)", axis.name,
                            ch.name, axis.kind));
  const double x_min = axis.edges.front(), x_max = axis.edges.back();
  Eigen::MatrixXd basis(order + 1, axis.size);
  for (int64_t s = 0; s < axis.size; ++s) {
    const double centre = 0.5 * (axis.edges[s] + axis.edges[s + 1]);
    const double x = x_max > x_min ? 2.0 * (centre - x_min) / (x_max - x_min) - 1.0 : 0.0;
    basis(0, s) = 1.0;
    if (order >= 1) basis(1, s) = x;
    for (int64_t j = 2; j <= order; ++j) basis(j, s) = 2.0 * x * basis(j - 1, s) - basis(j - 2, s);
  }
  return basis;
}

class SmoothAbcdFamilyModel final : public BinDependentParamModel {
 public:
  SmoothAbcdFamilyModel(const FitInputData& in, const FamilyShape& shape, const Regions& spec,
                        const std::string& smoothing_axis, int64_t order, const std::vector<double>& initial)
      : shape_(shape), nproc_(in.nproc), order_(order) {
    const std::string model = shape.name;
    if (order < 0) fail(model, fmt::format("order:{}: the polynomial order must be 0 or more", order));
    proc_ = process_index(model, in, spec.process);
    const size_t nregions = shape.nregions();
    std::vector<SmoothRegion> regions;
    for (size_t k = 0; k < nregions; ++k) {
      const std::string label = k + 1 < nregions ? shape.free_regions[k] : "D";
      regions.push_back(smooth_region(model, in, spec.regions[k], label, smoothing_axis));
      const SmoothRegion& r = regions.back();
      if (r.n_smooth != regions[0].n_smooth)
        fail(model,
             fmt::format("smoothing axis '{}' has {} bins in region {} but {} in region {}", smoothing_axis,
                         r.n_smooth, label, regions[0].n_smooth, shape.free_regions[0]));
      if (r.n_outer != regions[0].n_outer)
        fail(model, fmt::format("region {} has {} outer bins, region {} has {}", label, r.n_outer,
                                shape.free_regions[0], regions[0].n_outer));
      bins_.push_back(r.bins);
    }
    n_smooth_ = regions[0].n_smooth;
    n_outer_ = regions[0].n_outer;
    n_ = n_outer_ * n_smooth_;
    slot_of_ = region_slots(model, in.nbinsfull, bins_);
    const ChannelInfo& ch = in.channels[regions[0].channel];
    basis_ = chebyshev_basis(model, ch, ch.axes[regions[0].smooth_axis], order);
    for (int64_t k = 0; k < nfree(); ++k)
      for (const auto& outer : regions[k].outer_labels)
        for (int64_t j = 0; j <= order; ++j)
          names_.push_back(fmt::format("{}_{}_{}_{}_poly{}", spec.process,
                                       in.channels[regions[k].channel].name, shape.free_regions[k], outer,
                                       j));
    defaults_ = Eigen::VectorXd::Zero(npou());
    if (!initial.empty()) {
      if (static_cast<int64_t>(initial.size()) != npou())
        fail(model,
             fmt::format("the starting values have {} entries, expected {} = {} regions · {} outer bins · "
                         "(order {} + 1)",
                         initial.size(), npou(), nfree(), n_outer_, order));
      // rabbit stores them as float32 before its float64 fit (np.asarray(..., dtype=np.float32))
      for (int64_t i = 0; i < npou(); ++i) defaults_[i] = static_cast<double>(static_cast<float>(initial[i]));
    }
    mc_factor_ = Eigen::VectorXd::Ones(n_);
    if (spec.yield_correction) mc_factor_ = mc_correction(in, proc_, shape_, bins_);
    exponent_.assign(nfree(), 0);
    for (const auto& f : shape_.numerator) exponent_[f.param] += f.power;
    for (const auto& f : shape_.denominator) exponent_[f.param] -= f.power;
  }

  int64_t npoi() const override { return 0; }
  int64_t npou() const override { return nfree() * n_outer_ * (order_ + 1); }
  std::vector<std::string> names() const override { return names_; }
  Eigen::VectorXd default_values() const override { return defaults_; }
  bool is_linear() const override { return false; }

  void bin_rates(const Eigen::VectorXd& pi, int64_t b0, int64_t b1, Eigen::MatrixXd& r) const override {
    r = Eigen::MatrixXd::Ones(b1 - b0, nproc_);
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t s = slot_of_[b];
      if (s < 0) continue;
      const int64_t k = s / n_, i = s % n_;
      r(b - b0, proc_) = k < nfree() ? region_rate(pi, k, i) : signal_region(pi, i).rate;
    }
  }

  Eigen::SparseMatrix<double, Eigen::RowMajor> rate_jacobian(const Eigen::VectorXd& pi, int64_t b0,
                                                             int64_t b1) const override {
    std::vector<Eigen::Triplet<double>> nz;
    const int64_t J = order_ + 1;
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t slot = slot_of_[b];
      if (slot < 0) continue;
      const int64_t k = slot / n_, i = slot % n_, m = i / n_smooth_, s = i % n_smooth_;
      const int64_t row = (b - b0) * nproc_ + proc_;
      if (k < nfree()) {  // ∂s/∂p_j = s T_j
        const double rate = region_rate(pi, k, i);
        for (int64_t j = 0; j < J; ++j) nz.emplace_back(row, offset(k, m) + j, rate * basis_(j, s));
        continue;
      }
      const SignalRegion d = signal_region(pi, i);
      for (int64_t c = 0; c < nfree(); ++c)
        if (d.slope[c] != 0.0)
          for (int64_t j = 0; j < J; ++j) nz.emplace_back(row, offset(c, m) + j, d.slope[c] * basis_(j, s));
    }
    Eigen::SparseMatrix<double, Eigen::RowMajor> out((b1 - b0) * nproc_, npou());
    out.setFromTriplets(nz.begin(), nz.end());
    return out;
  }

  Eigen::MatrixXd curvature_product(const Eigen::VectorXd& pi, int64_t b0, int64_t b1,
                                    const Eigen::MatrixXd& w, const Eigen::MatrixXd& v) const override {
    Eigen::MatrixXd out = Eigen::MatrixXd::Zero(npou(), v.cols());
    const int64_t J = order_ + 1;
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t slot = slot_of_[b];
      const double wb = slot >= 0 ? w(b - b0, proc_) : 0.0;
      if (wb == 0.0) continue;
      const int64_t k = slot / n_, i = slot % n_, m = i / n_smooth_, s = i % n_smooth_;
      auto direction = [&](int64_t c) {  // Σ_l T_l v(p_{c,m,l}) per column of v
        return (basis_.col(s).transpose() * v.middleRows(offset(c, m), J)).eval();
      };
      if (k < nfree()) {  // ∂²s/∂p_j∂p_l = s T_j T_l
        const Eigen::RowVectorXd t = (wb * region_rate(pi, k, i)) * direction(k);
        for (int64_t j = 0; j < J; ++j) out.row(offset(k, m) + j) += basis_(j, s) * t;
        continue;
      }
      // ∂²D/∂p_{a,j}∂p_{c,l} = (e_a D T_j)(e_c T_l): the slope of a over D times the slope of c
      const SignalRegion d = signal_region(pi, i);
      if (d.rate == 0.0) continue;
      Eigen::RowVectorXd t = Eigen::RowVectorXd::Zero(v.cols());
      for (int64_t c = 0; c < nfree(); ++c)
        if (d.slope[c] != 0.0) t += (d.slope[c] / d.rate) * direction(c);
      for (int64_t a = 0; a < nfree(); ++a)
        if (d.slope[a] != 0.0)
          for (int64_t j = 0; j < J; ++j) out.row(offset(a, m) + j) += (wb * d.slope[a] * basis_(j, s)) * t;
    }
    return out;
  }

 private:
  std::string model_name() const override { return shape_.name; }
  int64_t nfree() const { return static_cast<int64_t>(shape_.free_regions.size()); }
  /// First coefficient of free region k's outer bin m.
  int64_t offset(int64_t k, int64_t m) const { return (k * n_outer_ + m) * (order_ + 1); }

  /// s = exp(Σ_j p_j T_j(x̃_s)) of free region k at its bin i.
  double region_rate(const Eigen::VectorXd& pi, int64_t k, int64_t i) const {
    const int64_t m = i / n_smooth_, s = i % n_smooth_;
    return std::exp(pi.segment(offset(k, m), order_ + 1).dot(basis_.col(s)));
  }

  /// D at bin i and ∂D/∂u_k (e_k D, 0 for a denominator replaced by 1e-10).
  struct SignalRegion {
    double rate;
    Eigen::VectorXd slope;
  };
  SignalRegion signal_region(const Eigen::VectorXd& pi, int64_t i) const {
    std::vector<double> s(nfree());
    for (int64_t k = 0; k < nfree(); ++k) s[k] = region_rate(pi, k, i);
    double num = 1.0, den = 1.0;
    std::vector<bool> replaced(nfree(), false);
    for (const auto& f : shape_.numerator) num *= std::pow(s[f.param], f.power);
    for (const auto& f : shape_.denominator) {
      replaced[f.param] = s[f.param] == 0.0;
      den *= std::pow(replaced[f.param] ? 1e-10 : s[f.param], f.power);
    }
    SignalRegion d{num / den * mc_factor_[i], Eigen::VectorXd::Zero(nfree())};
    for (int64_t k = 0; k < nfree(); ++k) {
      int e = exponent_[k];
      if (replaced[k])  // the constant 1e-10 has no slope; what remains is the numerator's power
        for (const auto& f : shape_.denominator)
          if (f.param == k) e += f.power;
      d.slope[k] = e * d.rate;
    }
    return d;
  }

  FamilyShape shape_;
  int64_t nproc_, order_;
  int64_t proc_ = 0;
  int64_t n_smooth_ = 0, n_outer_ = 0, n_ = 0;  // n = bins per region
  std::vector<std::vector<int64_t>> bins_;      // per region (free ones in parameter order, then D)
  std::vector<int64_t> slot_of_;                // global bin → region·n + i, or −1
  std::vector<int> exponent_;                   // e_k of D's monomial per free region
  Eigen::MatrixXd basis_;                       // [order+1 × n_smooth]
  std::vector<std::string> names_;
  Eigen::VectorXd defaults_, mc_factor_;
};

/// AXIS [params:FILE | order:N] [yieldCorrection:0|1] PROCESS and the regions, as rabbit's SmoothABCD
/// and SmoothExtendedABCD read them (params: only for the extended model, as in rabbit).
std::shared_ptr<const ParamModel> parse_and_make(const FitInputData& input, const FamilyShape& shape,
                                                 const std::string& model, bool takes_params,
                                                 const std::vector<std::string>& args) {
  if (args.size() < shape.nregions() + 2)
    fail(model, fmt::format("expected AXIS {}[yieldCorrection:0|1] PROCESS and {} regions (CHANNEL "
                            "[AXIS:INDEX ...] each), got {} argument(s)",
                            takes_params ? "[params:FILE | order:N] " : "[order:N] ", shape.nregions(),
                            args.size()));
  size_t t = 0;
  const std::string axis = args[t++];
  if (axis.find(':') != std::string::npos)
    fail(model, fmt::format("expected the smoothing axis name first, got '{}'", axis));
  int64_t order = 1, yield_correction = 0;
  std::vector<double> initial;
  if (takes_params && args[t].rfind("params:", 0) == 0)
    read_starting_values(model, args[t++], initial, order);
  else
    take_integer_option(model, args, t, "order", order);
  take_integer_option(model, args, t, "yieldCorrection", yield_correction);
  return make_smooth_abcd_family(
      input, shape, parse_process_and_regions(model, shape, input, args, t, yield_correction != 0), axis,
      order, initial);
}

}  // namespace

std::shared_ptr<const ParamModel> make_smooth_abcd_family(const FitInputData& input, const FamilyShape& shape,
                                                          const Regions& regions,
                                                          const std::string& smoothing_axis, int64_t order,
                                                          const std::vector<double>& initial) {
  return std::make_shared<SmoothAbcdFamilyModel>(input, shape, regions, smoothing_axis, order, initial);
}

std::shared_ptr<const ParamModel> make_smooth_abcd(const FitInputData& input, const ParamModelSpec& spec,
                                                   const ExpectSignal&, bool) {
  static const FamilyShape shape = [] {
    FamilyShape s = abcd_shape();
    s.name = "SmoothABCD";
    return s;
  }();
  return parse_and_make(input, shape, "SmoothABCD", false, spec.args);
}

std::shared_ptr<const ParamModel> make_smooth_extended_abcd(const FitInputData& input,
                                                            const ParamModelSpec& spec, const ExpectSignal&,
                                                            bool) {
  static const FamilyShape shape = [] {
    FamilyShape s = extended_abcd_shape();
    s.name = "SmoothExtendedABCD";
    return s;
  }();
  return parse_and_make(input, shape, "SmoothExtendedABCD", true, spec.args);
}

}  // namespace rabbit
