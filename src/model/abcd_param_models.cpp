// ABCD and extended ABCD (docs/model.md "Bin-dependent param models"): one background process whose rate
// in the regions' bins is a free positive parameter per bin (the square of a fit variable), and whose rate
// in the signal region D is a monomial of them, D = f · Π_k s_k^{e_k} (ABCD: a·c/b; extended ABCD:
// c·ax·b²/(bx·a²)), f the optional MC correction. As in rabbit, a zero denominator s_k is replaced by 1e-10.
#include "abcd_param_models.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

#include "bin_dependent_param_model.hpp"
#include "rabbit/io/fit_input_data.hpp"
#include "rabbit/model/model_options.hpp"

namespace rabbit {
namespace {

/// One region as the command line names it: a channel and fixed axis indices ("ax:val").
struct RegionSpec {
  std::string channel;
  std::vector<std::pair<std::string, int64_t>> fixed;
};

/// A factor s_k^{power} of the monomial of D; `param` indexes the free regions.
struct Factor {
  int param;
  int power;
};

/// What distinguishes the members of the family: the free regions in parameter order, the order in which
/// the command line gives them (D last) and the monomial of D.
struct FamilyShape {
  const char* name;
  std::vector<const char*> free_regions;  // parameter order, e.g. A, B, C
  std::vector<int> cli_order;             // indices into free_regions in command-line order
  std::vector<Factor> numerator, denominator;
};

[[noreturn]] void fail(const std::string& model, const std::string& what) {
  throw OptionError(fmt::format("--paramModel {}: {}", model, what));
}

int64_t parse_int(const std::string& model, const std::string& token, const std::string& value) {
  int64_t v = 0;
  const auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  if (ec != std::errc() || ptr != value.data() + value.size() || value.empty())
    fail(model, fmt::format("'{}': '{}' is not an integer", token, value));
  return v;
}

/// The global bins of a region, in row-major order over its free axes (rabbit's flatten), and the
/// parameter names of its bins ("<process>_<channel>_<axis><i>_...", every axis with its index).
std::vector<int64_t> region_bins(const std::string& model, const FitInputData& in, const RegionSpec& r,
                                 const std::string& process, std::vector<std::string>* names) {
  auto ch = std::find_if(in.channels.begin(), in.channels.end(),
                         [&](const ChannelInfo& c) { return c.name == r.channel; });
  if (ch == in.channels.end()) {
    std::vector<std::string> known;
    for (const auto& c : in.channels) known.push_back(c.name);
    fail(model, fmt::format("channel '{}' not found; channels: [{}]", r.channel, fmt::join(known, ", ")));
  }
  if (ch->flow)
    fail(model, fmt::format("channel '{}' has flow bins, which the ABCD regions do not address", r.channel));
  const int64_t nax = static_cast<int64_t>(ch->axes.size());
  std::vector<int64_t> fixed(nax, -1);
  for (const auto& [ax, val] : r.fixed) {
    auto it = std::find_if(ch->axes.begin(), ch->axes.end(), [&](const AxisInfo& a) { return a.name == ax; });
    if (it == ch->axes.end()) {
      std::vector<std::string> known;
      for (const auto& a : ch->axes) known.push_back(a.name);
      fail(model, fmt::format("axis '{}' not found in channel '{}'; axes: [{}]", ax, r.channel,
                              fmt::join(known, ", ")));
    }
    if (val < 0 || val >= it->size)
      fail(model, fmt::format("'{}:{}': index outside the {} bins of axis '{}' of channel '{}'", ax, val,
                              it->size, ax, r.channel));
    fixed[it - ch->axes.begin()] = val;
  }
  std::vector<int64_t> bins;
  std::vector<int64_t> idx(nax, 0);
  int64_t total = 1;
  for (const auto& a : ch->axes) total *= a.size;
  for (int64_t flat = 0; flat < total; ++flat) {
    int64_t rest = flat;
    for (int64_t j = nax - 1; j >= 0; --j) {
      idx[j] = rest % ch->axes[j].size;
      rest /= ch->axes[j].size;
    }
    bool selected = true;
    for (int64_t j = 0; j < nax; ++j) selected = selected && (fixed[j] < 0 || idx[j] == fixed[j]);
    if (!selected) continue;
    bins.push_back(ch->start + flat);
    if (names) {
      std::string label;
      for (int64_t j = 0; j < nax; ++j)
        label += fmt::format("{}{}{}", j ? "_" : "", ch->axes[j].name, idx[j]);
      names->push_back(fmt::format("{}_{}_{}", process, r.channel, label));
    }
  }
  return bins;
}

class AbcdFamilyModel final : public BinDependentParamModel {
 public:
  AbcdFamilyModel(const FitInputData& in, const FamilyShape& shape, const std::vector<std::string>& args)
      : shape_(shape), nproc_(in.nproc), nbinsfull_(in.nbinsfull) {
    const std::string model = shape.name;
    const size_t nregions = shape.free_regions.size() + 1;
    if (args.size() < nregions + 1)
      fail(model,
           fmt::format("expected [yieldCorrection:0|1] PROCESS and {} regions (CHANNEL [AXIS:INDEX ...] "
                       "each), got {} argument(s)",
                       nregions, args.size()));
    size_t t = 0;
    bool yield_correction = false;
    const std::string yc = "yieldCorrection:";
    if (args[t].rfind(yc, 0) == 0) {
      yield_correction = parse_int(model, args[t], args[t].substr(yc.size())) != 0;
      ++t;
    }
    process_ = args[t++];
    auto pit = std::find(in.procs.begin(), in.procs.end(), process_);
    if (pit == in.procs.end())
      fail(model,
           fmt::format("process '{}' not found; processes: [{}]", process_, fmt::join(in.procs, ", ")));
    proc_ = pit - in.procs.begin();
    // regions in command-line order: the free ones as cli_order lists them, then D
    std::vector<RegionSpec> specs(nregions);
    for (size_t k = 0; k < nregions; ++k) {
      const size_t slot = k + 1 < nregions ? static_cast<size_t>(shape.cli_order[k]) : nregions - 1;
      const std::string label = slot + 1 < nregions ? shape.free_regions[slot] : "D";
      if (t >= args.size() || args[t].find(':') != std::string::npos)
        fail(model, fmt::format("expected a channel name for region {}, got '{}'", label,
                                t < args.size() ? args[t] : "<end>"));
      specs[slot].channel = args[t++];
      while (t < args.size() && args[t].find(':') != std::string::npos) {
        const auto colon = args[t].find(':');
        specs[slot].fixed.emplace_back(args[t].substr(0, colon),
                                       parse_int(model, args[t], args[t].substr(colon + 1)));
        ++t;
      }
    }
    if (t < args.size()) fail(model, fmt::format("unexpected argument(s) after region D: '{}'", args[t]));
    for (size_t k = 0; k < nregions; ++k) {
      const bool free = k + 1 < nregions;
      bins_.push_back(region_bins(model, in, specs[k], process_, free ? &names_ : nullptr));
    }
    n_ = static_cast<int64_t>(bins_[0].size());
    for (size_t k = 1; k < nregions; ++k)
      if (static_cast<int64_t>(bins_[k].size()) != n_)
        fail(model, fmt::format("all regions must have the same number of bins; {} has {}, {} has {}",
                                shape.free_regions[0], n_, k + 1 < nregions ? shape.free_regions[k] : "D",
                                bins_[k].size()));
    // which region bin each global bin is (one region per bin: rabbit's scatter would be ill-defined)
    slot_of_.assign(nbinsfull_, -1);
    for (size_t k = 0; k < nregions; ++k)
      for (int64_t i = 0; i < n_; ++i) {
        auto& s = slot_of_[bins_[k][i]];
        if (s >= 0) fail(model, fmt::format("bin {} of the input is in more than one region", bins_[k][i]));
        s = static_cast<int64_t>(k) * n_ + i;
      }
    mc_factor_ = Eigen::VectorXd::Ones(n_);
    if (yield_correction) mc_factor_ = mc_correction(in);
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

  /// f_i = Π_k N_k^{e_k} / N_D of the process' MC templates (rabbit's mc_factor_D), a zero template in a
  /// denominator replaced by 1.
  Eigen::VectorXd mc_correction(const FitInputData& in) const {
    auto nominal = [&](int64_t b) -> double {
      const int64_t idx = b * nproc_ + proc_;
      if (!in.sparse) return in.norm[idx];
      auto it = std::lower_bound(in.norm_index.begin(), in.norm_index.end(), idx);
      return it != in.norm_index.end() && *it == idx ? in.norm[it - in.norm_index.begin()] : 0.0;
    };
    auto safe = [](double x) { return x == 0.0 ? 1.0 : x; };
    Eigen::VectorXd f(n_);
    for (int64_t i = 0; i < n_; ++i) {
      double num = 1.0, den = 1.0;
      for (const auto& t : shape_.numerator) num *= std::pow(nominal(bins_[t.param][i]), t.power);
      for (const auto& t : shape_.denominator) den *= std::pow(safe(nominal(bins_[t.param][i])), t.power);
      den *= safe(nominal(bins_[nfree()][i]));
      f[i] = num / den;
    }
    return f;
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

std::shared_ptr<const ParamModel> make_abcd(const FitInputData& input, const ParamModelSpec& spec,
                                            const ExpectSignal&, bool) {
  // D = a·c/b; the command line gives A B C D.
  static const FamilyShape shape{"ABCD", {"A", "B", "C"}, {0, 1, 2}, {{0, 1}, {2, 1}}, {{1, 1}}};
  return std::make_shared<AbcdFamilyModel>(input, shape, spec.args);
}

std::shared_ptr<const ParamModel> make_extended_abcd(const FitInputData& input, const ParamModelSpec& spec,
                                                     const ExpectSignal&, bool) {
  // D = c·ax·b²/(bx·a²); parameters A B C Ax Bx; the command line gives Ax Bx A B C D.
  static const FamilyShape shape{"ExtendedABCD",
                                 {"A", "B", "C", "Ax", "Bx"},
                                 {3, 4, 0, 1, 2},
                                 {{2, 1}, {3, 1}, {1, 2}},
                                 {{4, 1}, {0, 2}}};
  return std::make_shared<AbcdFamilyModel>(input, shape, spec.args);
}

}  // namespace rabbit
