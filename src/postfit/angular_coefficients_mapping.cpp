// AngularCoefficients and LamTung (rabbit's mappings/angular_coefficients.py): a channel with a helicity
// axis ("helicitySig", else "helicity") through two Terms (term.hpp) of the same selection,
//   σ_i   = the helicity bins 1, 2, ...   (numerator, the axis kept and renamed "ai")
//   σ_UL  = the helicity bin 0            (denominator, the axis summed away)
// and A_i = σ_i / σ_UL bin by bin, σ_UL broadcast along ai; LamTung is A_0 − A_2 with ai removed.
// `-m AngularCoefficients CHANNEL [PROC,PROC,... SELECTION]` (rabbit's parse_args: the processes only
// when a third argument follows; the selection is the first argument with a ':'). As in rabbit, the
// histograms are functions of ν (its need_processes is false, so the process selection does not enter
// them), there are no data and no per-process histograms (docs/user-guide.md "Mappings";
// docs/differences-from-rabbit.md).
#include <fmt/format.h>

#include "mappings.hpp"
#include "rabbit/core/error.hpp"
#include "term.hpp"

namespace rabbit::postfit {
namespace {

using Eigen::MatrixXd;
using Eigen::VectorXd;
using Triplet = Eigen::Triplet<double>;

std::string helicity_axis(const FitInputData& input, const std::string& name, const std::string& channel) {
  for (const auto& ch : input.channels) {
    if (ch.name != channel) continue;
    for (const char* h : {"helicitySig", "helicity"})
      for (const auto& a : ch.axes)
        if (a.name == h) return h;
    std::string names;
    for (const auto& a : ch.axes) names += (names.empty() ? "" : ", ") + a.name;
    throw OptionError(fmt::format(
        "-m {}: channel {} has no helicity axis (helicitySig or helicity; it has {})", name, channel, names));
  }
  throw OptionError(fmt::format("-m {}: unknown channel {}", name, channel));
}

// The Term selection: the helicity cut first, then the user's (rabbit's {h: ..., **selection}).
std::string with_helicity(const std::string& cut, const std::string& selection) {
  return selection == "None:None" ? cut : cut + "," + selection;
}

class AngularCoefficientsMapping final : public Mapping {
 public:
  AngularCoefficientsMapping(const FitInputData& input, const std::string& name, bool lam_tung,
                             const std::string& channel, const std::vector<std::string>& procs,
                             const std::string& selection, std::string key)
      : name_(name),
        key_(std::move(key)),
        lam_tung_(lam_tung),
        helicity_(helicity_axis(input, name, channel)),
        num_(input, name, channel, procs, with_helicity(helicity_ + ":slice(1,None)", selection)),
        den_(input, name, channel, procs, with_helicity(helicity_ + ":0", selection)) {
    // Where the helicity axis sits among σ_i's axes; σ_UL's axes are the same without it (a selection
    // naming the helicity axis never gets here: the Term refuses an axis given twice).
    const auto& na = num_.axes();
    int64_t h = -1;
    for (size_t k = 0; k < na.size(); ++k)
      if (na[k].name == helicity_) h = static_cast<int64_t>(k);
    if (h < 0 || den_.axes().size() + 1 != na.size())
      throw OptionError(fmt::format("-m {}: the selection {} must leave the helicity axis {} alone", name,
                                    selection, helicity_));
    nhel_ = na[h].size;
    inner_ = 1;
    for (size_t k = h + 1; k < na.size(); ++k) inner_ *= na[k].size;
    if (lam_tung_ && nhel_ < 3)
      throw OptionError(fmt::format("-m {}: A_0 - A_2 needs helicity bins 1 and 3 of {} ({} bins above 0)",
                                    name, helicity_, nhel_));
    ChannelInfo out;
    out.name = channel;
    out.flow = num_.channel().flow;
    out.masked = num_.channel().masked;
    for (size_t k = 0; k < na.size(); ++k) {
      if (static_cast<int64_t>(k) != h) {
        out.axes.push_back(na[k]);
      } else if (!lam_tung_) {
        out.axes.push_back(na[k]);
        out.axes.back().name = "ai";
      }
    }
    out.start = 0;
    out.stop = lam_tung_ ? den_.size() : num_.size();
    channels_ = {out};
    num_matrix_ = num_.matrix();
    den_matrix_ = den_.matrix();
  }

  std::string name() const override { return name_; }
  std::string key() const override { return key_; }
  const std::vector<ChannelInfo>& channels() const override { return channels_; }
  bool has_data() const override { return false; }
  int64_t observed_size() const override { return 0; }
  bool has_per_process() const override { return false; }

  VectorXd apply(const VectorXd& nu_full) const override {
    const VectorXd n = num_.select(nu_full), d = den_.select(nu_full);
    VectorXd y(size());
    if (lam_tung_) {
      for (int64_t o = 0; o < d.size(); ++o) y(o) = (n(num_index(o, 0)) - n(num_index(o, 2))) / d(o);
    } else {
      for (int64_t i = 0; i < n.size(); ++i) y(i) = n(i) / d(den_index(i));
    }
    return y;
  }

  // ∂y/∂ν = Dn Mn + Dd Md with Dn = ∂y/∂σ_i, Dd = ∂y/∂σ_UL (sparse: each output bin touches one σ_UL
  // bin and one, or for LamTung two, σ_i bins).
  MappingJacobian jacobian(const VectorXd& nu_full) const override {
    const VectorXd n = num_.select(nu_full), d = den_.select(nu_full);
    std::vector<Triplet> tn, td;
    if (lam_tung_) {
      for (int64_t o = 0; o < d.size(); ++o) {
        const int64_t i0 = num_index(o, 0), i2 = num_index(o, 2);
        tn.emplace_back(o, i0, 1.0 / d(o));
        tn.emplace_back(o, i2, -1.0 / d(o));
        td.emplace_back(o, o, -(n(i0) - n(i2)) / (d(o) * d(o)));
      }
    } else {
      for (int64_t i = 0; i < n.size(); ++i) {
        const int64_t o = den_index(i);
        tn.emplace_back(i, i, 1.0 / d(o));
        td.emplace_back(i, o, -n(i) / (d(o) * d(o)));
      }
    }
    MappingJacobian Dn(size(), n.size()), Dd(size(), d.size());
    Dn.setFromTriplets(tn.begin(), tn.end());
    Dd.setFromTriplets(td.begin(), td.end());
    return MappingJacobian(Dn * num_matrix_ + Dd * den_matrix_);
  }

  // rabbit's compute_flat_per_process is broken here (docs/differences-from-rabbit.md), and its
  // skip_per_process is set: no per-process histograms.
  MatrixXd apply_per_process(const MatrixXd&) const override {
    throw Error(fmt::format("{} has no per-process histograms (has_per_process is false)", key_));
  }
  MappingJacobian jacobian_per_process(const MatrixXd&) const override {
    throw Error(fmt::format("{} has no per-process histograms (has_per_process is false)", key_));
  }

 private:
  // σ_UL bin of σ_i bin i (row-major, the helicity axis dropped) and σ_i bin of (σ_UL bin o, ai bin j).
  int64_t den_index(int64_t i) const { return (i / (nhel_ * inner_)) * inner_ + i % inner_; }
  int64_t num_index(int64_t o, int64_t j) const {
    return (o / inner_) * nhel_ * inner_ + j * inner_ + o % inner_;
  }

  std::string name_, key_;
  bool lam_tung_;
  std::string helicity_;
  Term num_, den_;
  int64_t nhel_ = 0, inner_ = 1;
  std::vector<ChannelInfo> channels_;
  MappingJacobian num_matrix_, den_matrix_;
};

// rabbit's AngularCoefficients.parse_args, shared by LamTung. Arguments rabbit would silently ignore are
// refused here.
std::unique_ptr<Mapping> make_angular(const FitInputData& input, const std::string& name, bool lam_tung,
                                      const std::vector<std::string>& args) {
  if (args.empty()) throw OptionError(fmt::format("-m {}: a channel name is required", name));
  std::vector<std::string> procs;
  size_t next = 1;
  if (args.size() > 2 && !is_axis_selection(args[1])) {
    procs = parse_process_list(args[1]);
    next = 2;
  }
  std::string selection = "None:None";
  for (size_t k = next; k < args.size(); ++k) {
    if (k == next && is_axis_selection(args[k])) {
      selection = args[k];
      continue;
    }
    throw OptionError(fmt::format(
        "-m {}: unexpected argument {} (expected CHANNEL [PROCESSES SELECTION] or CHANNEL [SELECTION])", name,
        args[k]));
  }
  std::string key = name;
  for (const auto& a : args) key += " " + a;
  return std::make_unique<AngularCoefficientsMapping>(input, name, lam_tung, args[0], procs, selection, key);
}

}  // namespace

std::unique_ptr<Mapping> make_angular_coefficients_mapping(const FitInputData& input,
                                                           const std::vector<std::string>& args) {
  return make_angular(input, "AngularCoefficients", false, args);
}
std::unique_ptr<Mapping> make_lam_tung_mapping(const FitInputData& input,
                                               const std::vector<std::string>& args) {
  return make_angular(input, "LamTung", true, args);
}

}  // namespace rabbit::postfit
