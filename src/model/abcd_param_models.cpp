// ABCD and extended ABCD (docs/model.md "Bin-dependent param models"): one background process whose rate
// in the regions' bins is a free positive parameter per bin (the square of a fit variable), and whose rate
// in the signal region D is a monomial of them, D = f · Π_k s_k^{e_k} (ABCD: a·c/b; extended ABCD:
// c·ax·b²/(bx·a²)), f the optional MC correction. As in rabbit, a zero denominator s_k is replaced by 1e-10.
#include "abcd_param_models.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "abcd_regions.hpp"
#include "bin_dependent_param_model.hpp"
#include "rabbit/io/fit_input_data.hpp"
#include "rabbit/model/model_options.hpp"

namespace rabbit {
namespace {

using namespace abcd;

/// The global bins of a region, in row-major order over its free axes (rabbit's flatten), and the
/// parameter names of its bins ("<process>_<channel>_<axis><i>_...", every axis with its index).
std::vector<int64_t> region_bins(const std::string& model, const FitInputData& in, const RegionSpec& r,
                                 const std::string& process, std::vector<std::string>* names) {
  const ResolvedRegion region = resolve_region(model, in, r);
  const ChannelInfo& ch = in.channels[region.channel];
  const int64_t nax = static_cast<int64_t>(ch.axes.size());
  std::vector<int64_t> bins;
  std::vector<int64_t> idx(nax, 0);
  int64_t total = 1;
  for (const auto& a : ch.axes) total *= a.size;
  for (int64_t flat = 0; flat < total; ++flat) {
    int64_t rest = flat;
    for (int64_t j = nax - 1; j >= 0; --j) {
      idx[j] = rest % ch.axes[j].size;
      rest /= ch.axes[j].size;
    }
    bool selected = true;
    for (int64_t j = 0; j < nax; ++j)
      selected = selected && (region.fixed[j] < 0 || idx[j] == region.fixed[j]);
    if (!selected) continue;
    bins.push_back(ch.start + flat);
    if (names) {
      std::string label;
      for (int64_t j = 0; j < nax; ++j) label += fmt::format("{}{}{}", j ? "_" : "", ch.axes[j].name, idx[j]);
      names->push_back(fmt::format("{}_{}_{}", process, r.channel, label));
    }
  }
  return bins;
}

class AbcdFamilyModel final : public BinDependentParamModel {
 public:
  AbcdFamilyModel(const FitInputData& in, const FamilyShape& shape, const Regions& spec)
      : shape_(shape), nproc_(in.nproc), nbinsfull_(in.nbinsfull), process_(spec.process) {
    const std::string model = shape.name;
    proc_ = process_index(model, in, process_);
    const size_t nregions = shape.nregions();
    for (size_t k = 0; k < nregions; ++k) {
      const bool free = k + 1 < nregions;
      bins_.push_back(region_bins(model, in, spec.regions[k], process_, free ? &names_ : nullptr));
    }
    n_ = static_cast<int64_t>(bins_[0].size());
    for (size_t k = 1; k < nregions; ++k)
      if (static_cast<int64_t>(bins_[k].size()) != n_)
        fail(model, fmt::format("all regions must have the same number of bins; {} has {}, {} has {}",
                                shape.free_regions[0], n_, k + 1 < nregions ? shape.free_regions[k] : "D",
                                bins_[k].size()));
    slot_of_ = region_slots(model, nbinsfull_, bins_);
    mc_factor_ = Eigen::VectorXd::Ones(n_);
    if (spec.yield_correction) mc_factor_ = mc_correction(in, proc_, shape_, bins_);
  }

  int64_t npoi() const override { return 0; }
  int64_t npou() const override { return nfree() * n_; }
  std::vector<std::string> names() const override { return names_; }
  Eigen::VectorXd default_values() const override { return Eigen::VectorXd::Ones(npou()); }

  void bin_rates(const Eigen::VectorXd& pi, int64_t b0, int64_t b1, Eigen::MatrixXd& r) const override {
    r = Eigen::MatrixXd::Ones(b1 - b0, nproc_);
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t s = slot_of_[b];
      if (s < 0) continue;
      const int64_t k = s / n_, i = s % n_;
      r(b - b0, proc_) = k < nfree() ? pi[k * n_ + i] * pi[k * n_ + i] : signal_region_rate(pi, i);
    }
  }

  Eigen::SparseMatrix<double, Eigen::RowMajor> rate_jacobian(const Eigen::VectorXd& pi, int64_t b0,
                                                             int64_t b1) const override {
    std::vector<Eigen::Triplet<double>> nz;
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t s = slot_of_[b];
      if (s < 0) continue;
      const int64_t k = s / n_, i = s % n_, row = (b - b0) * nproc_ + proc_;
      if (k < nfree()) {
        nz.emplace_back(row, k * n_ + i, 2.0 * pi[k * n_ + i]);
        continue;
      }
      Eigen::VectorXd g;
      signal_region_derivatives(pi, i, g, nullptr);
      for (int64_t j = 0; j < nfree(); ++j) nz.emplace_back(row, j * n_ + i, g[j]);
    }
    Eigen::SparseMatrix<double, Eigen::RowMajor> out((b1 - b0) * nproc_, npou());
    out.setFromTriplets(nz.begin(), nz.end());
    return out;
  }

  Eigen::MatrixXd curvature_product(const Eigen::VectorXd& pi, int64_t b0, int64_t b1,
                                    const Eigen::MatrixXd& w, const Eigen::MatrixXd& v) const override {
    Eigen::MatrixXd out = Eigen::MatrixXd::Zero(npou(), v.cols());
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t s = slot_of_[b];
      const double wb = s >= 0 ? w(b - b0, proc_) : 0.0;
      if (wb == 0.0) continue;
      const int64_t k = s / n_, i = s % n_;
      if (k < nfree()) {  // ∂²(x²)/∂x² = 2
        out.row(k * n_ + i) += (2.0 * wb) * v.row(k * n_ + i);
        continue;
      }
      Eigen::VectorXd g;
      Eigen::MatrixXd h;
      signal_region_derivatives(pi, i, g, &h);
      for (int64_t a = 0; a < nfree(); ++a)
        for (int64_t c = 0; c < nfree(); ++c) out.row(a * n_ + i) += (wb * h(a, c)) * v.row(c * n_ + i);
    }
    return out;
  }

  bool is_linear() const override { return false; }

 private:
  std::string model_name() const override { return shape_.name; }
  int64_t nfree() const { return static_cast<int64_t>(shape_.free_regions.size()); }

  /// Whether s_k of bin i is a denominator that rabbit replaces by the constant 1e-10 (it is zero).
  bool replaced(const Eigen::VectorXd& pi, int param, int64_t i, bool denominator) const {
    const double x = pi[param * n_ + i];
    return denominator && x * x == 0.0;
  }
  /// s_k of bin i: the squared variable, or 1e-10 where replaced.
  double factor_value(const Eigen::VectorXd& pi, int param, int64_t i, bool denominator) const {
    const double x = pi[param * n_ + i];
    return replaced(pi, param, i, denominator) ? 1e-10 : x * x;
  }

  double signal_region_rate(const Eigen::VectorXd& pi, int64_t i) const {
    double num = 1.0, den = 1.0;
    for (const auto& f : shape_.numerator) num *= std::pow(factor_value(pi, f.param, i, false), f.power);
    for (const auto& f : shape_.denominator) den *= std::pow(factor_value(pi, f.param, i, true), f.power);
    return num / den * mc_factor_[i];
  }

  /// Gradient g [nfree] and Hessian h [nfree × nfree] of D_i in the fit variables of bin i: with
  /// D = f Π s_k^{e_k}, ∂D/∂x_k = f e_k s_k^{e_k−1} s'_k Π_{j≠k} s_j^{e_j}, and the second derivatives
  /// by the product rule (s'' = 2, or 0 for a replaced denominator).
  void signal_region_derivatives(const Eigen::VectorXd& pi, int64_t i, Eigen::VectorXd& g,
                                 Eigen::MatrixXd* h) const {
    const int64_t K = nfree();
    Eigen::VectorXd s = Eigen::VectorXd::Ones(K), ds = Eigen::VectorXd::Zero(K),
                    d2s = Eigen::VectorXd::Zero(K);
    Eigen::VectorXi e = Eigen::VectorXi::Zero(K);
    for (const bool den : {false, true})
      for (const auto& f : den ? shape_.denominator : shape_.numerator) {
        const bool constant = replaced(pi, f.param, i, den);
        s[f.param] = factor_value(pi, f.param, i, den);
        ds[f.param] = constant ? 0.0 : 2.0 * pi[f.param * n_ + i];
        d2s[f.param] = constant ? 0.0 : 2.0;
        e[f.param] = den ? -f.power : f.power;
      }
    // p_k = s_k^{e_k}, p1_k = d p_k/dx_k, p2_k = d² p_k/dx_k²
    Eigen::VectorXd p(K), p1(K), p2(K);
    for (int64_t k = 0; k < K; ++k) {
      const int ek = e[k];
      p[k] = std::pow(s[k], ek);
      p1[k] = ek == 0 ? 0.0 : ek * std::pow(s[k], ek - 1) * ds[k];
      p2[k] = ek == 0 ? 0.0 : ek * std::pow(s[k], ek - 1) * d2s[k];
      if (ek * (ek - 1) != 0) p2[k] += ek * (ek - 1) * std::pow(s[k], ek - 2) * ds[k] * ds[k];
    }
    auto others = [&](int64_t a, int64_t c) {
      double prod = mc_factor_[i];
      for (int64_t j = 0; j < K; ++j)
        if (j != a && j != c) prod *= p[j];
      return prod;
    };
    g.resize(K);
    for (int64_t k = 0; k < K; ++k) g[k] = p1[k] * others(k, k);
    if (!h) return;
    h->resize(K, K);
    for (int64_t a = 0; a < K; ++a)
      for (int64_t c = 0; c < K; ++c)
        (*h)(a, c) = a == c ? p2[a] * others(a, a) : p1[a] * p1[c] * others(a, c);
  }

  FamilyShape shape_;
  int64_t nproc_, nbinsfull_;
  std::string process_;
  int64_t proc_ = 0;
  int64_t n_ = 0;                           // bins per region
  std::vector<std::vector<int64_t>> bins_;  // per region (free ones in parameter order, then D)
  std::vector<int64_t> slot_of_;            // global bin → region·n + i, or −1
  std::vector<std::string> names_;
  Eigen::VectorXd mc_factor_;
};

}  // namespace

std::shared_ptr<const ParamModel> make_abcd_family(const FitInputData& input, const FamilyShape& shape,
                                                   const Regions& regions) {
  return std::make_shared<AbcdFamilyModel>(input, shape, regions);
}

namespace {

/// [yieldCorrection:0|1] PROCESS and the regions, as rabbit's ABCD and ExtendedABCD read them.
std::shared_ptr<const ParamModel> parse_and_make(const FitInputData& input, const FamilyShape& shape,
                                                 const std::vector<std::string>& args) {
  const std::string model = shape.name;
  if (args.size() < shape.nregions() + 1)
    fail(model, fmt::format("expected [yieldCorrection:0|1] PROCESS and {} regions (CHANNEL [AXIS:INDEX ...] "
                            "each), got {} argument(s)",
                            shape.nregions(), args.size()));
  size_t t = 0;
  int64_t yield_correction = 0;
  take_integer_option(model, args, t, "yieldCorrection", yield_correction);
  return make_abcd_family(input, shape,
                          parse_process_and_regions(model, shape, input, args, t, yield_correction != 0));
}

}  // namespace

std::shared_ptr<const ParamModel> make_abcd(const FitInputData& input, const ParamModelSpec& spec,
                                            const ExpectSignal&, bool) {
  return parse_and_make(input, abcd_shape(), spec.args);
}

std::shared_ptr<const ParamModel> make_extended_abcd(const FitInputData& input, const ParamModelSpec& spec,
                                                     const ExpectSignal&, bool) {
  return parse_and_make(input, extended_abcd_shape(), spec.args);
}

}  // namespace rabbit
