// Select (rabbit's mappings/mapping.py Select, a ChannelMapping): one channel through one Term
// (term.hpp), `-m Select CHANNEL [PROC,PROC,...] [AXIS:SEL,...]`. As in rabbit, the process selection
// applies to the per-process histograms only: rabbit's ChannelMapping does not ask for per-process
// yields, so its inclusive histograms, data and chi2 are those of every process
// (docs/user-guide.md "Mappings").
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "mappings.hpp"
#include "rabbit/core/error.hpp"
#include "term.hpp"

namespace rabbit::postfit {
namespace {

using Eigen::MatrixXd;
using Eigen::VectorXd;

class SelectMapping final : public Mapping {
 public:
  SelectMapping(const FitInputData& input, const std::string& channel, const std::vector<std::string>& procs,
                const std::string& selection, std::string key)
      : term_(input, "Select", channel, procs, selection), key_(std::move(key)) {
    ChannelInfo out;
    out.name = channel;
    out.axes = term_.axes();
    out.flow = term_.channel().flow;
    out.masked = term_.channel().masked;
    out.start = 0;
    out.stop = term_.size();
    channels_ = {out};
    matrix_ = term_.matrix();
  }

  std::string name() const override { return "Select"; }
  std::string key() const override { return key_; }
  const std::vector<ChannelInfo>& channels() const override { return channels_; }
  // rabbit's ChannelMapping: has_data = not masked, whatever the process selection.
  bool has_data() const override { return !term_.channel().masked; }
  int64_t observed_size() const override { return has_data() ? size() : 0; }
  std::vector<int64_t> process_selection() const override { return term_.processes(); }

  VectorXd apply(const VectorXd& nu_full) const override { return term_.select(nu_full); }
  MappingJacobian jacobian(const VectorXd&) const override { return matrix_; }
  MatrixXd apply_per_process(const MatrixXd& n_full) const override {
    return term_.select_per_process(n_full);
  }
  MappingJacobian jacobian_per_process(const MatrixXd&) const override { return term_.per_process_matrix(); }

 private:
  Term term_;
  std::string key_;
  std::vector<ChannelInfo> channels_;
  MappingJacobian matrix_;
};

}  // namespace

std::unique_ptr<Mapping> make_select_mapping(const FitInputData& input,
                                             const std::vector<std::string>& args) {
  if (args.empty()) throw OptionError("-m Select: a channel name is required");
  // rabbit's Select.parse_args: the processes are the first argument after the channel when it has no
  // ':', the selection the first argument with one; the key leaves the channel out.
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  std::vector<std::string> procs;
  if (!rest.empty() && !is_axis_selection(rest[0])) procs = parse_process_list(rest[0]);
  std::string selection = "None:None";
  for (const auto& a : rest)
    if (is_axis_selection(a)) {
      selection = a;
      break;
    }
  for (size_t k = 0; k < rest.size(); ++k)
    if ((k > 0 || is_axis_selection(rest[k])) && rest[k] != selection)
      throw OptionError(fmt::format(
          "-m Select: unexpected argument {} (expected CHANNEL [PROCESSES] [SELECTION])", rest[k]));
  if (rest.size() > 2) throw OptionError("-m Select: at most CHANNEL PROCESSES SELECTION");
  std::string key = "Select";
  for (const auto& a : rest) key += " " + a;
  return std::make_unique<SelectMapping>(input, args[0], procs, selection, key);
}

}  // namespace rabbit::postfit
