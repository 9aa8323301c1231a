#pragma once
// The result file of a run (docs/output-format.md): rabbit's layout or the plain one, the meta
// group, the shared axes, and per fit the mapping dict with the observed and expected histograms.
// What is computed lives in postfit/; this class decides where it goes and under which names.
#include <Eigen/Core>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "fit_context.hpp"
#include "rabbit/postfit/mapping.hpp"
#include "rabbit/postfit/result_file.hpp"

namespace rabbit::cli {

/// The result-file axis of one input channel axis.
result::Axis channel_axis(const AxisInfo& a);

class ResultLayoutWriter {
 public:
  /// Opens the output file (under a temporary name until commit) in the layout of --outputFormat.
  explicit ResultLayoutWriter(const FitContext& ctx);

  /// The meta group and the shared axes (parameters, impacts columns, variations, yield).
  void write_meta();
  result::Group root() { return out_->root(); }
  /// A shared axis declared by write_meta, by id ("parms", "poinoi", "impacts", ...).
  result::Axis shared(const std::string& id) const { return shared_axes_.at(id); }
  /// Writes the completed top-level groups (each fit's group when it is done, as upstream does).
  void flush() { out_->flush(); }
  /// Moves the file to its final name.
  void commit() { out_->commit(); }
  const std::string& final_path() const { return out_->final_path(); }

  /// Forgets the mapping groups of the previous fit's group (call when a fit's group starts and ends).
  void reset_mappings();
  /// The observed data and the fit's data per channel, for each mapping with data.
  void save_observed_hists(result::Group group, const Eigen::VectorXd& nobs, const Eigen::VectorXd& varnobs);
  /// The expected histograms (inclusive, per process, variations, covariance, chi2) prefit or
  /// postfit at x with the parameter covariance cov, for each mapping.
  void save_hists(result::Group group, const Eigen::VectorXd& x, const Eigen::MatrixXd& cov, bool prefit);
  /// A step that adds to a mapping's postfit results, run after its histograms and chi2 with the
  /// mapping's group and the postfit x (the saturated projection tests).
  using MappingStep = std::function<void(const postfit::Mapping&, result::Group, const Eigen::VectorXd&)>;
  void set_postfit_mapping_step(MappingStep step) { postfit_mapping_step_ = std::move(step); }

 private:
  /// One mapping of -m and its groups in the current fit's group.
  struct MappingOutput {
    std::unique_ptr<postfit::Mapping> mapping;
    result::Group group;                        // mappings/<key>
    std::vector<result::Group> channel_groups;  // mappings/<key>/channels/<channel>, in channel order
  };

  void add_shared(const std::string& id, result::Axis axis);
  /// The mapping dict of the current fit's group with one group per mapping, created on first use.
  void mapping_groups(result::Group group);
  /// The axes of channel c of a mapping's output (a one-bin "yield" axis for a channel without axes).
  std::vector<result::Axis> channel_axes(const ChannelInfo& channel) const;
  /// The expected histograms of one mapping.
  void save_mapping_hists(MappingOutput& m, const Eigen::VectorXd& x, const Eigen::MatrixXd& cov,
                          bool prefit);

  const FitContext& ctx_;
  std::unique_ptr<result::ResultWriter> out_;
  std::map<std::string, result::Axis> shared_axes_;
  std::vector<MappingOutput> mappings_;  // the -m mappings in order, one per key (rabbit's dict)
  result::Group mapping_dict_;           // mapping dict of the current fit
  MappingStep postfit_mapping_step_;     // set_postfit_mapping_step (may be empty)
};

}  // namespace rabbit::cli
