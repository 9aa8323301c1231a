// BaseMapping: y = ν over all channels in input order, masked channels included (rabbit's
// BaseMapping; docs/output-format.md "File tree"). Its data histograms and chi2 cover the unmasked bins.
#include <fmt/format.h>

#include "mappings.hpp"
#include "rabbit/core/error.hpp"

namespace rabbit::postfit {
namespace {

class BaseMapping final : public Mapping {
 public:
  explicit BaseMapping(const FitInputData& input)
      : channels_(input.channels), nbins_(input.nbins), nbinsfull_(input.nbinsfull) {}

  std::string name() const override { return "BaseMapping"; }
  std::string key() const override { return "BaseMapping"; }
  const std::vector<ChannelInfo>& channels() const override { return channels_; }
  int64_t observed_size() const override { return nbins_; }
  bool has_data() const override { return true; }
  bool is_identity() const override { return true; }

  Eigen::VectorXd apply(const Eigen::VectorXd& nu_full) const override { return nu_full; }
  MappingJacobian jacobian(const Eigen::VectorXd&) const override { return identity(nbinsfull_); }
  Eigen::MatrixXd apply_per_process(const Eigen::MatrixXd& n_full) const override { return n_full; }
  MappingJacobian jacobian_per_process(const Eigen::MatrixXd& n_full) const override {
    return identity(n_full.size());
  }

 private:
  static MappingJacobian identity(int64_t n) {
    MappingJacobian a(n, n);
    a.setIdentity();
    return a;
  }

  std::vector<ChannelInfo> channels_;
  int64_t nbins_, nbinsfull_;
};

}  // namespace

std::unique_ptr<Mapping> make_base_mapping(const FitInputData& input, const std::vector<std::string>& args) {
  // rabbit's BaseMapping takes no arguments either (its constructor would fail on them).
  if (!args.empty()) throw OptionError(fmt::format("-m BaseMapping takes no arguments, got {}", args.size()));
  return std::make_unique<BaseMapping>(input);
}

}  // namespace rabbit::postfit
