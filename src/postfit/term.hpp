#pragma once
// A Term: one channel's bins, optionally one set of its processes, cut and merged by axis selections
// (rabbit's mappings/helpers.py Term and parse_axis_selection), as the linear map from the yields to the
// term's bins. Select is one Term; the Ratio family divides two (docs/architecture.md "Terms").
//
// Selection syntax, `AXIS:SEL,AXIS:SEL,...` (commas inside parentheses belong to the SEL), or the whole
// string `None:None` for none; SEL is one of
//   i                   one bin (index i, or a value `Nj`), the axis summed away
//   slice(a,b[,s])      bins a..b-1 (ints, None, or values `Nj`); with a step s every s-th bin, on an
//                       axis of (b−a)/s bins merged s by s, as rabbit does
//   sum                 the axis summed away
//   rebin(e0,e1,...)    bins merged onto new edges, which must be edges of the axis; bins outside
//                       [e0, elast] are dropped
//   None                the axis as it is
// A value `Nj` (or `M+Nj`) is rabbit's (hist's) value location: the bin holding N, moved by M bins.
#include <cstdint>
#include <string>
#include <vector>

#include "rabbit/io/fit_input_data.hpp"
#include "rabbit/postfit/mapping.hpp"

namespace rabbit::postfit {

class Term {
 public:
  /// `mapping` names the -m mapping in error messages (OptionError, one line); `processes` empty means
  /// all of them; `selection` as above.
  Term(const FitInputData& input, const std::string& mapping, const std::string& channel,
       const std::vector<std::string>& processes, const std::string& selection);

  const ChannelInfo& channel() const { return channel_; }
  /// The term's axes: the channel's, sliced and rebinned, summed ones left out (rabbit's channel_axes).
  const std::vector<AxisInfo>& axes() const { return axes_; }
  /// Number of the term's bins (1 when every axis is summed).
  int64_t size() const { return size_; }
  /// Indices of the selected processes in input order; empty when none was selected (all of them).
  const std::vector<int64_t>& processes() const { return processes_; }
  /// rabbit's Term.has_data: the channel is not masked and no process is selected.
  bool has_data() const { return !channel_.masked && processes_.empty(); }

  /// The term's bins from the process-inclusive yields ν [nbinsfull]: every process, as rabbit's
  /// Term.select of a one-dimensional input (its process selection then does not apply).
  Eigen::VectorXd select(const Eigen::VectorXd& nu_full) const;
  /// The term's bins from the per-process yields N [nbinsfull × nproc], summed over the selected
  /// processes (rabbit's Term.select with inclusive=True).
  Eigen::VectorXd select_processes(const Eigen::MatrixXd& n_full) const;
  /// Per process: [size() × nsel], one column per selected process (all when none was selected).
  Eigen::MatrixXd select_per_process(const Eigen::MatrixXd& n_full) const;

  /// ∂select/∂ν [size() × nbinsfull]: one 1 per channel bin that the term keeps.
  MappingJacobian matrix() const;
  /// ∂select_processes/∂vec(N) [size() × nbinsfull·nproc], columns b·nproc + p.
  MappingJacobian process_matrix() const;
  /// ∂vec(select_per_process)/∂vec(N), rows i·nsel + k and columns b·nproc + p.
  MappingJacobian per_process_matrix() const;

 private:
  std::vector<int64_t> selected_or_all() const;

  ChannelInfo channel_;
  std::vector<AxisInfo> axes_;
  std::vector<int64_t> processes_;
  std::vector<int64_t> target_;  // term bin of each channel bin, −1 where the selection drops it
  int64_t size_ = 1, nbinsfull_ = 0, nproc_ = 0;
};

/// Whether a mapping argument is an axis selection (rabbit's parse_args tests for a ':').
bool is_axis_selection(const std::string& arg);
/// rabbit's comma-separated process list of a mapping argument, "None" entries dropped.
std::vector<std::string> parse_process_list(const std::string& arg);

}  // namespace rabbit::postfit
