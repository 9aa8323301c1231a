#pragma once
// A mapping turns the expected yields of all bins ν (masked channels included) into the histograms a
// result file stores under mappings/<key> (docs/output-format.md "Histogram uncertainties"): y = f(ν),
// with uncertainties propagated through ∂y/∂ν. rabbit's mappings (its mapping.py: compute_flat,
// compute_flat_per_process, has_data, ndf_reduction) are the model; BaseMapping (y = ν) is the one
// built-in mapping of this release. docs/architecture.md "How to add a mapping" lists the files.
#include <Eigen/Core>
#include <Eigen/SparseCore>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "rabbit/io/fit_input_data.hpp"

namespace rabbit::postfit {

/// ∂y/∂ν and its per-process form: sparse, so that a mapping's error propagation costs its output bins
/// times the parameters, never the input bins squared (docs/architecture.md "Mappings").
using MappingJacobian = Eigen::SparseMatrix<double, Eigen::RowMajor>;

class Mapping {
 public:
  virtual ~Mapping() = default;

  /// The class name rabbit gives on the command line ("BaseMapping").
  virtual std::string name() const = 0;
  /// The key of the result group: rabbit's name and arguments joined by spaces.
  virtual std::string key() const = 0;
  /// Output channels in y order: name, axes, flow, masked; start/stop are positions in y.
  virtual const std::vector<ChannelInfo>& channels() const = 0;
  /// Number of output bins (the end of the last channel).
  int64_t size() const { return channels().empty() ? 0 : channels().back().stop; }
  /// Leading output bins computed from unmasked input bins only: the data histograms and the chi2
  /// cover them (rabbit's has_data per output).
  virtual int64_t observed_size() const = 0;
  /// Whether data histograms and a chi2 are written for this mapping (rabbit's has_data).
  virtual bool has_data() const = 0;
  /// Subtracted from the chi2's number of degrees of freedom (rabbit's ndf_reduction, e.g. 1 for a
  /// normalisation).
  virtual int64_t ndf_reduction() const { return 0; }
  /// y = ν: the histogram code then skips every product with ∂y/∂ν.
  virtual bool is_identity() const { return false; }
  /// Whether the histograms are a function of the per-process yields N rather than of ν (rabbit's
  /// need_processes: a Ratio that selects processes). Then apply_processes and jacobian_processes give
  /// them, and the uncertainties chain through ∂N/∂θ; apply and jacobian still give rabbit's map of
  /// process-inclusive counts, which the data and the chi2 use (docs/architecture.md "Mappings").
  virtual bool needs_processes() const { return false; }
  /// Whether per-process histograms exist (rabbit's skip_per_process, true for the Ratio family).
  virtual bool has_per_process() const { return true; }
  /// Indices of the processes of the per-process output, in input order; empty for all of them
  /// (rabbit's channel_info "processes" of a Select with a process selection).
  virtual std::vector<int64_t> process_selection() const { return {}; }

  /// y [size()] from ν [nbinsfull].
  virtual Eigen::VectorXd apply(const Eigen::VectorXd& nu_full) const = 0;
  /// ∂y/∂ν [size() × nbinsfull] at ν (constant for linear mappings).
  virtual MappingJacobian jacobian(const Eigen::VectorXd& nu_full) const = 0;
  /// Per process: N [nbinsfull × nproc] to Y [size() × nout] (rabbit's compute_flat_per_process), nout
  /// the processes of process_selection() (all when it is empty).
  virtual Eigen::MatrixXd apply_per_process(const Eigen::MatrixXd& n_full) const = 0;
  /// ∂vec(Y)/∂vec(N) at N with rows i·nout + k and columns b·nproc + p [size()·nout × nbinsfull·nproc].
  virtual MappingJacobian jacobian_per_process(const Eigen::MatrixXd& n_full) const = 0;
  /// With needs_processes(): y [size()] from N [nbinsfull × nproc].
  virtual Eigen::VectorXd apply_processes(const Eigen::MatrixXd& n_full) const {
    return apply(n_full.rowwise().sum());
  }
  /// With needs_processes(): ∂y/∂vec(N) [size() × nbinsfull·nproc], columns b·nproc + p.
  virtual MappingJacobian jacobian_processes(const Eigen::MatrixXd& n_full) const;

  /// ∂y/∂ν · J for J = ∂ν/∂(something) [nbinsfull × k]: a sparse-times-dense product costing k per
  /// nonzero of ∂y/∂ν; J itself (moved, no copy) for the identity.
  Eigen::MatrixXd chain(const Eigen::VectorXd& nu_full, Eigen::MatrixXd J) const {
    if (is_identity()) return J;
    return jacobian(nu_full) * J;
  }
};

/// The mapping of one -m occurrence: tokens[0] is the name, the rest its arguments. Unknown names and
/// bad arguments throw OptionError naming -m.
std::unique_ptr<Mapping> make_mapping(const FitInputData& input, const std::vector<std::string>& tokens);

/// --compositeMapping: the mappings' outputs one after the other as the single mapping "CompositeMapping"
/// (composite_mapping.cpp). Throws OptionError naming --compositeMapping for none, or when a mapping other
/// than the last has outputs from masked channels while all have data.
std::unique_ptr<Mapping> make_composite_mapping(std::vector<std::unique_ptr<Mapping>> parts);

/// Names accepted by make_mapping, in registry order.
std::vector<std::string> supported_mappings();

}  // namespace rabbit::postfit
