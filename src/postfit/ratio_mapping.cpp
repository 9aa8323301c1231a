// Ratio, Normratio, Difference, Asymmetry (rabbit's mappings/ratio.py): two Terms (term.hpp), a
// numerator n and a denominator d of equal bin counts, combined bin by bin:
//   Ratio       n / d
//   Normratio   (n / Σn) / (d / Σd)     ndf_reduction 1
//   Difference  n / Σn − d / Σd         (rabbit normalises both terms here too)
//   Asymmetry   (n − d) / (n + d)
// `-m Ratio NUM DEN [NUMPROCS DENPROCS] [NUMSEL DENSEL]`. A process selection on either side makes the
// histograms functions of the per-process yields (needs_processes) and leaves the mapping without data
// (rabbit's Term.has_data); there are no per-process histograms (rabbit's skip_per_process).
// docs/output-format.md "Mappings" lists the channel names and axes.
#include <fmt/format.h>

#include "mappings.hpp"
#include "rabbit/core/error.hpp"
#include "term.hpp"

namespace rabbit::postfit {
namespace {

using Eigen::MatrixXd;
using Eigen::VectorXd;
using Triplet = Eigen::Triplet<double>;

enum class Combine { ratio, normratio, difference, asymmetry };

// hist's axis equality, as rabbit compares the two terms' axes.
bool same_axis(const AxisInfo& a, const AxisInfo& b) {
  return a.kind == b.kind && a.name == b.name && a.size == b.size && a.edges == b.edges &&
         a.underflow == b.underflow && a.overflow == b.overflow && a.circular == b.circular &&
         a.categories_str == b.categories_str && a.categories_int == b.categories_int;
}

class RatioMapping final : public Mapping {
 public:
  RatioMapping(const FitInputData& input, const std::string& name, Combine combine,
               const std::vector<std::string>& a, const std::vector<std::string>& num_procs,
               const std::vector<std::string>& den_procs, const std::string& num_sel,
               const std::string& den_sel, std::string key)
      : name_(name),
        key_(std::move(key)),
        combine_(combine),
        num_(input, name, a[0], num_procs, num_sel),
        den_(input, name, a[1], den_procs, den_sel),
        by_process_(!num_procs.empty() || !den_procs.empty()) {
    const auto& na = num_.axes();
    const auto& da = den_.axes();
    bool same_sizes = na.size() == da.size(), same = same_sizes;
    for (size_t k = 0; same_sizes && k < na.size(); ++k) {
      same_sizes = na[k].size == da[k].size;
      same = same && same_sizes && same_axis(na[k], da[k]);
    }
    if (!same_sizes)
      throw OptionError(
          fmt::format("-m {}: the numerator's and the denominator's axes must have the same numbers "
                      "of bins",
                      name));
    ChannelInfo out;
    const bool one_channel = a[0] == a[1];
    if (one_channel) {
      out.name = a[0];
      out.flow = num_.channel().flow;
    } else {
      if (num_.channel().flow || den_.channel().flow)
        throw OptionError(
            fmt::format("-m {}: channels {} and {} differ and one has flow bins, which rabbit's "
                        "ratio of two channels leaves out of its axes",
                        name, a[0], a[1]));
      out.name = a[0] + "_" + a[1];
    }
    if (same) {
      out.axes = na;
    } else {
      // Equal bin counts under different axes: integer categories a0, a1, ... (rabbit's IntCategory).
      for (size_t k = 0; k < na.size(); ++k) {
        AxisInfo ax;
        ax.kind = "category_int";
        ax.name = "a" + std::to_string(k);
        ax.size = na[k].size;
        for (int64_t i = 0; i < ax.size; ++i) ax.categories_int.push_back(i);
        out.axes.push_back(ax);
      }
    }
    out.masked = num_.channel().masked || den_.channel().masked;
    out.start = 0;
    out.stop = num_.size();
    channels_ = {out};
    num_matrix_ = by_process_ ? num_.process_matrix() : num_.matrix();
    den_matrix_ = by_process_ ? den_.process_matrix() : den_.matrix();
  }

  std::string name() const override { return name_; }
  std::string key() const override { return key_; }
  const std::vector<ChannelInfo>& channels() const override { return channels_; }
  bool has_data() const override { return num_.has_data() && den_.has_data(); }
  int64_t observed_size() const override { return has_data() ? size() : 0; }
  int64_t ndf_reduction() const override { return combine_ == Combine::normratio ? 1 : 0; }
  bool needs_processes() const override { return by_process_; }
  bool has_per_process() const override { return false; }

  // The process-inclusive form (data, chi2): every process, as rabbit's Term.select of ν.
  VectorXd apply(const VectorXd& nu_full) const override {
    return combine(num_.select(nu_full), den_.select(nu_full));
  }
  MappingJacobian jacobian(const VectorXd& nu_full) const override {
    return chain(num_.select(nu_full), den_.select(nu_full), num_.matrix(), den_.matrix());
  }
  VectorXd apply_processes(const MatrixXd& n_full) const override {
    if (!by_process_) return apply(n_full.rowwise().sum());
    return combine(num_.select_processes(n_full), den_.select_processes(n_full));
  }
  MappingJacobian jacobian_processes(const MatrixXd& n_full) const override {
    if (!by_process_) return Mapping::jacobian_processes(n_full);
    return chain(num_.select_processes(n_full), den_.select_processes(n_full), num_matrix_, den_matrix_);
  }
  MatrixXd apply_per_process(const MatrixXd&) const override {
    throw Error(fmt::format("{} has no per-process histograms (has_per_process is false)", key_));
  }
  MappingJacobian jacobian_per_process(const MatrixXd&) const override {
    throw Error(fmt::format("{} has no per-process histograms (has_per_process is false)", key_));
  }

 private:
  VectorXd combine(const VectorXd& n, const VectorXd& d) const {
    switch (combine_) {
      case Combine::ratio:
        return n.cwiseQuotient(d);
      case Combine::normratio:
        return (n / n.sum()).cwiseQuotient(d / d.sum());
      case Combine::difference:
        return n / n.sum() - d / d.sum();
      case Combine::asymmetry:
        return (n - d).cwiseQuotient(n + d);
    }
    return {};
  }

  // ∂y/∂(inputs) = Dn Mn + Dd Md, with Dn = ∂y/∂n and Dd = ∂y/∂d [size × size]: diagonal for Ratio and
  // Asymmetry; a diagonal plus a rank-one part (the sums) for the normalised ones, so dense over the
  // terms' bins, as Normalize is over its channel.
  MappingJacobian chain(const VectorXd& n, const VectorXd& d, const MappingJacobian& Mn,
                        const MappingJacobian& Md) const {
    const int64_t m = n.size();
    std::vector<Triplet> tn, td;
    const double Sn = n.sum(), Sd = d.sum();
    const VectorXd y = combine(n, d);
    for (int64_t i = 0; i < m; ++i) {
      switch (combine_) {
        case Combine::ratio:
          tn.emplace_back(i, i, 1.0 / d(i));
          td.emplace_back(i, i, -n(i) / (d(i) * d(i)));
          break;
        case Combine::asymmetry: {
          const double s = n(i) + d(i);
          tn.emplace_back(i, i, 2.0 * d(i) / (s * s));
          td.emplace_back(i, i, -2.0 * n(i) / (s * s));
          break;
        }
        case Combine::normratio:
          // y_i = n_i Sd / (d_i Sn): ∂y_i/∂n_j = δ_ij y_i/n_i − y_i/Sn, ∂y_i/∂d_j = −δ_ij y_i/d_i + y_i/Sd.
          for (int64_t j = 0; j < m; ++j) {
            tn.emplace_back(i, j, (i == j ? Sd / (d(i) * Sn) : 0.0) - y(i) / Sn);
            td.emplace_back(i, j, (i == j ? -y(i) / d(i) : 0.0) + y(i) / Sd);
          }
          break;
        case Combine::difference:
          for (int64_t j = 0; j < m; ++j) {
            tn.emplace_back(i, j, (i == j ? 1.0 / Sn : 0.0) - n(i) / (Sn * Sn));
            td.emplace_back(i, j, (i == j ? -1.0 / Sd : 0.0) + d(i) / (Sd * Sd));
          }
          break;
      }
    }
    MappingJacobian Dn(m, m), Dd(m, m);
    Dn.setFromTriplets(tn.begin(), tn.end());
    Dd.setFromTriplets(td.begin(), td.end());
    return MappingJacobian(Dn * Mn + Dd * Md);
  }

  std::string name_, key_;
  Combine combine_;
  Term num_, den_;
  bool by_process_;
  std::vector<ChannelInfo> channels_;
  MappingJacobian num_matrix_, den_matrix_;
};

// rabbit's Ratio.parse_args, shared by the four.
std::unique_ptr<Mapping> make_ratio_like(const FitInputData& input, const std::string& name, Combine combine,
                                         const std::vector<std::string>& args) {
  if (args.size() < 2)
    throw OptionError(fmt::format("-m {}: a numerator and a denominator channel are required", name));
  std::vector<std::string> num_procs, den_procs, sels;
  size_t next = 2;
  if (args.size() > 2 && !is_axis_selection(args[2])) {
    if (args.size() < 4 || is_axis_selection(args[3]))
      throw OptionError(
          fmt::format("-m {}: processes {} for the numerator need the denominator's too (None for "
                      "all)",
                      name, args[2]));
    num_procs = parse_process_list(args[2]);
    den_procs = parse_process_list(args[3]);
    next = 4;
  }
  for (size_t k = next; k < args.size(); ++k) {
    if (!is_axis_selection(args[k]))
      throw OptionError(fmt::format("-m {}: unexpected argument {}", name, args[k]));
    sels.push_back(args[k]);
  }
  if (sels.size() == 1)
    throw OptionError(
        fmt::format("-m {}: selection {} for the numerator needs the denominator's too (None:None "
                    "for none)",
                    name, sels[0]));
  if (sels.size() > 2) throw OptionError(fmt::format("-m {}: unexpected argument {}", name, sels[2]));
  if (sels.empty()) sels = {"None:None", "None:None"};
  std::string key = name;
  for (const auto& a : args) key += " " + a;
  return std::make_unique<RatioMapping>(input, name, combine, args, num_procs, den_procs, sels[0], sels[1],
                                        key);
}

}  // namespace

std::unique_ptr<Mapping> make_ratio_mapping(const FitInputData& input, const std::vector<std::string>& args) {
  return make_ratio_like(input, "Ratio", Combine::ratio, args);
}
std::unique_ptr<Mapping> make_normratio_mapping(const FitInputData& input,
                                                const std::vector<std::string>& args) {
  return make_ratio_like(input, "Normratio", Combine::normratio, args);
}
std::unique_ptr<Mapping> make_difference_mapping(const FitInputData& input,
                                                 const std::vector<std::string>& args) {
  return make_ratio_like(input, "Difference", Combine::difference, args);
}
std::unique_ptr<Mapping> make_asymmetry_mapping(const FitInputData& input,
                                                const std::vector<std::string>& args) {
  return make_ratio_like(input, "Asymmetry", Combine::asymmetry, args);
}

}  // namespace rabbit::postfit
