#pragma once
// TensorWriter: builds a rabbit fit tensor (docs/input-reader.md) from per-channel histograms, the C++
// counterpart of rabbit's Python TensorWriter. Histogram contents are flat vectors in the C-order
// (row-major) flattening of the channel's axes, without flow bins unless the channel keeps them.
// Conventions follow upstream: processes signals-first, each block sorted; nuisances
// natural_sort(unconstrained) + natural_sort(constrained); logk zeroed where the nominal is 0;
// masked channels after all observed channels. See docs/tensor-writer.md.
#include <Eigen/Core>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "rabbit/io/axis_factories.hpp"
#include "rabbit/io/fit_input_data.hpp"
#include "rabbit/io/natural_sort.hpp"

namespace rabbit {

namespace io {
struct TensorAssembly;
}

/// How an up/down pair is turned into logk (rabbit's `symmetrize` argument).
enum class Symmetrization {
  none,          // keep asymmetric: logkavg and logkhalfdiff (makes the tensor asymmetric)
  average,       // (logk_up + logk_down)/2
  conservative,  // the larger in magnitude of logk_up, logk_down
  linear,        // two symmetric nuisances <name>SymAvg, <name>SymDiff (half difference)
  quadratic,     // as linear, the SymDiff part scaled by sqrt(3)
};

struct SystematicOptions {
  double kfactor = 1.0;
  Symmetrization symmetrize = Symmetrization::average;
  bool constrained = true;  // false: unconstrained (constraint weight 0, hsystsnoconstraint)
  bool noi = false;         // nuisance of interest
  /// Groups the nuisance belongs to; unset: its own group named like the nuisance.
  std::optional<std::vector<std::string>> groups;
  /// The given histograms are differences to the nominal rather than varied templates.
  bool as_difference = false;
};

enum class Compression { none, gzip, blosc2 };

struct WriteOptions {
  bool sparse = false;
  Compression compression = Compression::gzip;
  /// Store hnorm, hlogk, hsumw, hsumw2 and the sparse values as float32 (readers promote).
  bool float32 = false;
  /// Write the `meta` group. Without it readers assume rabbit's defaults: one channel "ch0" (plus
  /// "ch1_masked"), log_normal, asymmetric logk layout — so a symmetric tensor is then written in
  /// the asymmetric layout with zero half-differences, and systematic type "normal" is refused.
  bool write_meta = true;
  std::vector<std::pair<std::string, std::string>> meta_info;  // meta["meta_info"], str -> str
};

class TensorWriter {
 public:
  explicit TensorWriter(SystematicType systematic_type = SystematicType::log_normal,
                        bool allow_negative_expectation = false);

  /// Observed channels keep insertion order; masked channels go after all observed ones.
  /// flow = true (masked channels only) keeps the flow bins: size = Π extents.
  void add_channel(const std::string& name, std::vector<AxisInfo> axes, bool masked = false,
                   bool flow = false);
  /// Observed data of a non-masked channel; variances default to the values (Poisson).
  void add_data(const std::string& channel, std::vector<double> values,
                std::optional<std::vector<double>> variances = std::nullopt);
  void add_pseudodata(const std::string& name, const std::string& channel, std::vector<double> values);
  /// Covariance of the observed data over all non-masked bins [nbins, nbins]; written inverted.
  void add_data_covariance(Eigen::MatrixXd covariance);
  /// Nominal template of a process in a channel. Negative yields are clipped to 0 unless
  /// allow_negative_expectation; variances (sum of squared weights) default to the values.
  void add_process(const std::string& channel, const std::string& process, std::vector<double> values,
                   bool signal = false, std::optional<std::vector<double>> variances = std::nullopt);

  /// Shape systematic from one (mirrored) variation.
  void add_systematic(const std::string& name, const std::string& process, const std::string& channel,
                      const std::vector<double>& variation, const SystematicOptions& options = {});
  /// Shape systematic from an up and a down variation.
  void add_systematic(const std::string& name, const std::string& process, const std::string& channel,
                      const std::vector<double>& up, const std::vector<double>& down,
                      const SystematicOptions& options = {});
  /// Normalisation (lnN-style) systematic: variation = kappa · nominal; `kappas` holds one value
  /// for all processes or one per process (rabbit's add_norm_systematic with scalars).
  void add_norm_systematic(const std::string& name, const std::vector<std::string>& processes,
                           const std::string& channel, const std::vector<double>& kappas,
                           const SystematicOptions& options = {});
  /// Asymmetric normalisation systematic: up = kappa_up · nominal, down = kappa_down · nominal.
  void add_norm_systematic(const std::string& name, const std::vector<std::string>& processes,
                           const std::string& channel, double kappa_up, double kappa_down,
                           const SystematicOptions& options = {});

  /// Beta variation (rabbit's add_beta_variations, docs/input-reader.md "Dense model tensors"): the template
  /// change of `process` in the masked channel `dest_channel` per unit shift of the BB parameter of
  /// the same process in each bin of the observed channel `source_channel`. `variation` is
  /// [dest bins × source bins], row-major (destination index first). Dense tensors only.
  void add_beta_variations(const std::string& process, const std::string& source_channel,
                           const std::string& dest_channel, std::vector<double> variation);

  /// External likelihood term (docs/input-reader.md "External terms"): g·x_sub + ½ x_subᵀ H x_sub, with
  /// rabbit's optional scalars `const` and `lognorm` (PR #147, docs/tensor-writer.md); left out, the fit
  /// derives them from a dense Hessian.
  void add_external_term(const std::string& name, std::vector<std::string> params,
                         std::optional<Eigen::VectorXd> grad, std::optional<Eigen::MatrixXd> hess,
                         std::optional<double> const_value = std::nullopt,
                         std::optional<double> lognorm = std::nullopt);
  /// A Gaussian prior N(mean, H⁻¹) as an external term (rabbit's mean=): g = −H·mean and
  /// const = ½ meanᵀH·mean, so the term is ½(x−mean)ᵀH(x−mean).
  void add_external_gaussian_term(const std::string& name, std::vector<std::string> params,
                                  const Eigen::VectorXd& mean, const Eigen::MatrixXd& hess,
                                  std::optional<double> lognorm = std::nullopt);

  bool symmetric_tensor() const { return symmetric_tensor_; }
  SystematicType systematic_type() const { return systematic_type_; }
  /// File order of processes and nuisances (what write() will store).
  std::vector<std::string> procs() const;
  std::vector<std::string> signals() const;
  std::vector<std::string> systs() const;
  /// Channels in bin-layout order with start/stop filled in.
  std::vector<ChannelInfo> channels() const;

  /// Writes the tensor (to FILE.tmp, then renamed). Throws Error/OptionError on misuse,
  /// ResourceError when the file cannot be written.
  void write(const std::string& filename, const WriteOptions& options = {}) const;

 private:
  struct Channel {
    ChannelInfo info;
    int64_t nbins = 0;
    std::optional<std::vector<double>> data_obs, data_var;
    std::map<std::string, std::vector<double>> pseudodata;
    std::map<std::string, std::vector<double>> norm, sumw2;
    // [process][nuisance] -> per-bin logk
    std::map<std::string, std::map<std::string, std::vector<double>>> logkavg, logkhalfdiff;
    // beta variations with this (masked) channel as destination: [source channel][process]
    std::map<std::string, std::map<std::string, std::vector<double>>> beta_variations;
  };
  Channel& channel(const std::string& name);
  /// The arrays and lists write() stores, validated, without HDF5 (src/io/tensor_assembly.cpp).
  io::TensorAssembly assemble(const WriteOptions& options) const;
  const std::vector<double>& nominal(Channel& ch, const std::string& process) const;
  std::vector<double> logk_of(const std::vector<double>& variation, const std::vector<double>& nom,
                              double kfactor) const;
  void book_asymmetric(const std::string& name, const std::string& process, Channel& ch,
                       const std::vector<double>& logk_up, const std::vector<double>& logk_down,
                       const SystematicOptions& options);
  void book_logk(std::map<std::string, std::map<std::string, std::vector<double>>>& store, Channel& ch,
                 const std::string& process, const std::string& syst, std::vector<double> logk);
  void book_systematic(const std::string& name, const SystematicOptions& options);

  SystematicType systematic_type_;
  bool allow_negative_expectation_;
  bool symmetric_tensor_ = true;
  std::vector<Channel> channels_;  // insertion order; layout order computed on demand
  std::set<std::string> signals_, backgrounds_;
  std::vector<std::string> pseudodata_names_;
  std::optional<Eigen::MatrixXd> data_covariance_;
  std::set<std::string> systs_constrained_, systs_unconstrained_, systs_noi_;
  std::map<std::string, std::set<std::string>> groups_;
  std::vector<ExternalTerm> external_terms_;
};

}  // namespace rabbit
