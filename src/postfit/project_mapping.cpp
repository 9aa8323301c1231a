// Project and Normalize (rabbit's mappings/project.py): one channel summed over the axes not named,
// the kept axes in the order given; Normalize also divides by the channel's total (all processes in the
// per-process form, as rabbit's reduce_sum over the whole tensor). Channel bins are row-major over the
// channel's axes, flow bins included when the channel has flow (docs/output-format.md "Mappings").
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "mappings.hpp"
#include "rabbit/core/error.hpp"

namespace rabbit::postfit {
namespace {

using Eigen::MatrixXd;
using Eigen::VectorXd;
using Triplet = Eigen::Triplet<double>;

class ProjectMapping final : public Mapping {
 public:
  ProjectMapping(const FitInputData& input, const std::string& name, const std::vector<std::string>& args,
                 bool normalize)
      : name_(name), normalize_(normalize), nbinsfull_(input.nbinsfull) {
    if (args.empty()) throw OptionError(fmt::format("-m {}: a channel name is required", name));
    key_ = fmt::format("{} {}", name, fmt::join(args, " "));
    const ChannelInfo* ch = nullptr;
    for (const auto& c : input.channels)
      if (c.name == args[0]) ch = &c;
    if (!ch) throw OptionError(fmt::format("-m {}: unknown channel {}", name, args[0]));
    start_ = ch->start;
    const size_t nax = ch->axes.size();
    std::vector<int64_t> extent(nax);
    for (size_t a = 0; a < nax; ++a) extent[a] = ch->flow ? ch->axes[a].extent() : ch->axes[a].size;
    std::vector<size_t> kept;  // channel axis index of each output axis, in the order given
    for (size_t k = 1; k < args.size(); ++k) {
      auto it = std::find_if(ch->axes.begin(), ch->axes.end(),
                             [&](const AxisInfo& a) { return a.name == args[k]; });
      if (it == ch->axes.end())
        throw OptionError(fmt::format("-m {}: unknown axis {} of channel {}", name, args[k], args[0]));
      const size_t idx = static_cast<size_t>(it - ch->axes.begin());
      if (std::find(kept.begin(), kept.end(), idx) != kept.end())
        throw OptionError(fmt::format("-m {}: axis {} given twice", name, args[k]));
      kept.push_back(idx);
    }
    ChannelInfo out;
    out.name = ch->name;
    out.flow = ch->flow;
    out.masked = ch->masked;
    for (size_t idx : kept) out.axes.push_back(ch->axes[idx]);
    // Output strides, row-major over the kept axes in the order given.
    std::vector<int64_t> stride(kept.size(), 1);
    int64_t nout = 1;
    for (size_t k = kept.size(); k-- > 0;) {
      stride[k] = nout;
      nout *= extent[kept[k]];
    }
    out.start = 0;
    out.stop = nout;
    channels_ = {out};
    // Every channel bin goes to one output bin: decompose its row-major index over all channel axes.
    const int64_t nin = ch->nbins();
    target_.resize(nin);
    std::vector<int64_t> coord(nax);
    for (int64_t b = 0; b < nin; ++b) {
      int64_t rest = b;
      for (size_t a = nax; a-- > 0;) {
        coord[a] = rest % extent[a];
        rest /= extent[a];
      }
      int64_t o = 0;
      for (size_t k = 0; k < kept.size(); ++k) o += coord[kept[k]] * stride[k];
      target_[b] = o;
    }
  }

  std::string name() const override { return name_; }
  std::string key() const override { return key_; }
  const std::vector<ChannelInfo>& channels() const override { return channels_; }
  // rabbit's has_data = not masked: the data of an unmasked channel maps as the prediction does.
  int64_t observed_size() const override { return has_data() ? size() : 0; }
  bool has_data() const override { return !channels_[0].masked; }
  int64_t ndf_reduction() const override { return normalize_ ? 1 : 0; }

  VectorXd apply(const VectorXd& nu_full) const override {
    VectorXd y = VectorXd::Zero(size());
    for (size_t b = 0; b < target_.size(); ++b) y(target_[b]) += nu_full(start_ + b);
    if (normalize_) y /= total(nu_full);
    return y;
  }
  MappingJacobian jacobian(const VectorXd& nu_full) const override {
    std::vector<Triplet> t;
    const int64_t nin = static_cast<int64_t>(target_.size());
    if (!normalize_) {
      for (int64_t b = 0; b < nin; ++b) t.emplace_back(target_[b], start_ + b, 1.0);
    } else {
      // ∂(s_i/S)/∂ν_b = (δ_{i,t(b)} − y_i)/S: dense within the channel, zero elsewhere.
      const double S = total(nu_full);
      const VectorXd y = apply(nu_full);
      for (int64_t i = 0; i < size(); ++i)
        for (int64_t b = 0; b < nin; ++b)
          t.emplace_back(i, start_ + b, ((target_[b] == i ? 1.0 : 0.0) - y(i)) / S);
    }
    MappingJacobian a(size(), nbinsfull_);
    a.setFromTriplets(t.begin(), t.end());
    return a;
  }
  MatrixXd apply_per_process(const MatrixXd& n_full) const override {
    MatrixXd y = MatrixXd::Zero(size(), n_full.cols());
    for (size_t b = 0; b < target_.size(); ++b) y.row(target_[b]) += n_full.row(start_ + b);
    if (normalize_) y /= total(n_full);
    return y;
  }
  MappingJacobian jacobian_per_process(const MatrixXd& n_full) const override {
    const int64_t P = n_full.cols(), nin = static_cast<int64_t>(target_.size());
    std::vector<Triplet> t;
    if (!normalize_) {
      for (int64_t b = 0; b < nin; ++b)
        for (int64_t p = 0; p < P; ++p) t.emplace_back(target_[b] * P + p, (start_ + b) * P + p, 1.0);
    } else {
      // ∂(s_ip/S)/∂N_bq = (δ_{i,t(b)} δ_pq − Y_ip)/S with S the channel's sum over all processes.
      const double S = total(n_full);
      const MatrixXd y = apply_per_process(n_full);
      for (int64_t i = 0; i < size(); ++i)
        for (int64_t p = 0; p < P; ++p)
          for (int64_t b = 0; b < nin; ++b)
            for (int64_t q = 0; q < P; ++q)
              t.emplace_back(i * P + p, (start_ + b) * P + q,
                             ((target_[b] == i && p == q ? 1.0 : 0.0) - y(i, p)) / S);
    }
    MappingJacobian a(size() * P, nbinsfull_ * P);
    a.setFromTriplets(t.begin(), t.end());
    return a;
  }

 private:
  template <class M>
  double total(const M& n_full) const {
    return n_full.middleRows(start_, static_cast<int64_t>(target_.size())).sum();
  }

  std::string name_, key_;
  bool normalize_;
  int64_t nbinsfull_, start_ = 0;
  std::vector<ChannelInfo> channels_;
  std::vector<int64_t> target_;  // output bin of each channel bin
};

}  // namespace

std::unique_ptr<Mapping> make_project_mapping(const FitInputData& input,
                                              const std::vector<std::string>& args) {
  return std::make_unique<ProjectMapping>(input, "Project", args, false);
}

std::unique_ptr<Mapping> make_normalize_mapping(const FitInputData& input,
                                                const std::vector<std::string>& args) {
  return std::make_unique<ProjectMapping>(input, "Normalize", args, true);
}

}  // namespace rabbit::postfit
