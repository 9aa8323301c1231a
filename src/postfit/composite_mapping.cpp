// CompositeMapping (rabbit's mappings/mapping.py CompositeMapping, --compositeMapping): the outputs of
// several mappings one after the other as one mapping, so that the histogram covariance spans all of
// them (docs/output-format.md "Mappings"). Its channels are renamed "{sub key} {channel}".
#include <fmt/format.h>

#include <algorithm>

#include "rabbit/core/error.hpp"
#include "rabbit/postfit/mapping.hpp"

namespace rabbit::postfit {
namespace {

using Eigen::MatrixXd;
using Eigen::VectorXd;

// The sub-Jacobians one under the other (rows offset by each sub-mapping's outputs).
MappingJacobian stack(const std::vector<MappingJacobian>& parts, int64_t cols) {
  int64_t rows = 0, nnz = 0;
  for (const auto& p : parts) {
    rows += p.rows();
    nnz += p.nonZeros();
  }
  std::vector<Eigen::Triplet<double>> t;
  t.reserve(static_cast<size_t>(nnz));
  int64_t offset = 0;
  for (const auto& p : parts) {
    for (int64_t i = 0; i < p.outerSize(); ++i)
      for (MappingJacobian::InnerIterator it(p, i); it; ++it)
        t.emplace_back(offset + it.row(), it.col(), it.value());
    offset += p.rows();
  }
  MappingJacobian out(rows, cols);
  out.setFromTriplets(t.begin(), t.end());
  return out;
}

class CompositeMapping final : public Mapping {
 public:
  explicit CompositeMapping(std::vector<std::unique_ptr<Mapping>> parts) : parts_(std::move(parts)) {
    int64_t offset = 0;
    for (size_t k = 0; k < parts_.size(); ++k) {
      const Mapping& m = *parts_[k];
      for (ChannelInfo c : m.channels()) {
        c.name = m.key() + " " + c.name;
        c.start += offset;
        c.stop += offset;
        channels_.push_back(std::move(c));
      }
      ndf_reduction_ += m.ndf_reduction();
      // rabbit: the composite has data only when every sub-mapping has.
      has_data_ = has_data_ && m.has_data();
      offset += m.size();
    }
    if (!has_data_) return;
    // The data histograms and the chi2 take the leading observed_size() outputs; rabbit concatenates the
    // sub-mappings' observed outputs, which is the same only when no sub-mapping but the last has outputs
    // from masked channels (docs/differences-from-rabbit.md "Mappings").
    for (size_t k = 0; k + 1 < parts_.size(); ++k)
      if (parts_[k]->observed_size() != parts_[k]->size())
        throw OptionError(fmt::format(
            "--compositeMapping: mapping {} has outputs from masked channels; give it last (-m order)",
            parts_[k]->key()));
    observed_ = offset - parts_.back()->size() + parts_.back()->observed_size();
  }

  std::string name() const override { return "CompositeMapping"; }
  std::string key() const override { return "CompositeMapping"; }
  const std::vector<ChannelInfo>& channels() const override { return channels_; }
  int64_t observed_size() const override { return observed_; }
  bool has_data() const override { return has_data_; }
  int64_t ndf_reduction() const override { return ndf_reduction_; }
  // rabbit's CompositeMapping skips the per-process histograms when any part does (Ratio family,
  // AngularCoefficients): there is nothing to stack for that part.
  bool has_per_process() const override {
    return std::all_of(parts_.begin(), parts_.end(), [](const auto& m) { return m->has_per_process(); });
  }

  VectorXd apply(const VectorXd& nu_full) const override {
    VectorXd y(size());
    int64_t offset = 0;
    for (const auto& m : parts_) {
      y.segment(offset, m->size()) = m->apply(nu_full);
      offset += m->size();
    }
    return y;
  }
  MappingJacobian jacobian(const VectorXd& nu_full) const override {
    std::vector<MappingJacobian> parts;
    for (const auto& m : parts_) parts.push_back(m->jacobian(nu_full));
    return stack(parts, nu_full.size());
  }
  // A part of the per-process yields makes the whole one (its covariance spans every part): the others
  // enter through their default ∂y/∂vec(N), ∂y/∂ν repeated for every process.
  bool needs_processes() const override {
    return std::any_of(parts_.begin(), parts_.end(), [](const auto& m) { return m->needs_processes(); });
  }
  VectorXd apply_processes(const MatrixXd& n_full) const override {
    VectorXd y(size());
    int64_t offset = 0;
    for (const auto& m : parts_) {
      y.segment(offset, m->size()) = m->apply_processes(n_full);
      offset += m->size();
    }
    return y;
  }
  MappingJacobian jacobian_processes(const MatrixXd& n_full) const override {
    std::vector<MappingJacobian> parts;
    for (const auto& m : parts_) parts.push_back(m->jacobian_processes(n_full));
    return stack(parts, n_full.size());
  }
  MatrixXd apply_per_process(const MatrixXd& n_full) const override {
    MatrixXd y(size(), n_full.cols());
    int64_t offset = 0;
    for (const auto& m : parts_) {
      y.middleRows(offset, m->size()) = m->apply_per_process(n_full);
      offset += m->size();
    }
    return y;
  }
  MappingJacobian jacobian_per_process(const MatrixXd& n_full) const override {
    std::vector<MappingJacobian> parts;
    for (const auto& m : parts_) parts.push_back(m->jacobian_per_process(n_full));
    return stack(parts, n_full.size());
  }

 private:
  std::vector<std::unique_ptr<Mapping>> parts_;
  std::vector<ChannelInfo> channels_;
  int64_t ndf_reduction_ = 0;
  int64_t observed_ = 0;
  bool has_data_ = true;
};

}  // namespace

std::unique_ptr<Mapping> make_composite_mapping(std::vector<std::unique_ptr<Mapping>> parts) {
  if (parts.empty()) throw OptionError("--compositeMapping: no mapping given (-m or --saveHists)");
  return std::make_unique<CompositeMapping>(std::move(parts));
}

}  // namespace rabbit::postfit
