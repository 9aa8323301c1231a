// TensorWriter bookkeeping (the add_* calls and the file order of names): see tensor_writer.hpp,
// docs/tensor-writer.md. The arrays are assembled in tensor_assembly.cpp and written in
// tensor_file.cpp.
#include "rabbit/io/tensor_writer.hpp"

#include <algorithm>
#include <cmath>

#include "rabbit/core/error.hpp"
#include "rabbit/io/pickle_writer.hpp"

namespace rabbit {
namespace {

constexpr double kLogkEpsilon = -6.907755278982137;  // log(1e-3), rabbit's cutoff for sign flips

void check_finite(const std::vector<double>& v, const std::string& what) {
  const auto bad = std::count_if(v.begin(), v.end(), [](double x) { return !std::isfinite(x); });
  if (bad > 0) throw Error("TensorWriter: " + std::to_string(bad) + " NaN or Inf values in " + what);
}
}  // namespace

// ---------------------------------------------------------------------------------------------
// TensorWriter

TensorWriter::TensorWriter(SystematicType systematic_type, bool allow_negative_expectation)
    : systematic_type_(systematic_type), allow_negative_expectation_(allow_negative_expectation) {}

TensorWriter::Channel& TensorWriter::channel(const std::string& name) {
  for (auto& ch : channels_)
    if (ch.info.name == name) return ch;
  throw Error("TensorWriter: channel '" + name + "' not known");
}

void TensorWriter::add_channel(const std::string& name, std::vector<AxisInfo> axes, bool masked, bool flow) {
  if (flow && !masked)
    throw Error("TensorWriter: channel '" + name +
                "': keeping under/overflow bins is only supported for masked channels");
  for (const auto& ch : channels_)
    if (ch.info.name == name) throw Error("TensorWriter: channel '" + name + "' added twice");
  if (axes.empty()) throw Error("TensorWriter: channel '" + name + "' has no axes");
  Channel ch;
  ch.info.name = name;
  ch.info.masked = masked;
  ch.info.flow = flow;
  ch.nbins = 1;
  for (auto& a : axes) {
    if (a.core_class.empty()) a.core_class = pickle::core_class_for(a);
    ch.nbins *= flow ? a.extent() : a.size;
  }
  ch.info.axes = std::move(axes);
  channels_.push_back(std::move(ch));
}

void TensorWriter::add_data(const std::string& channel_name, std::vector<double> values,
                            std::optional<std::vector<double>> variances) {
  Channel& ch = channel(channel_name);
  if (ch.info.masked) throw Error("TensorWriter: channel '" + channel_name + "' is masked and has no data");
  if (ch.data_obs) throw Error("TensorWriter: data for channel '" + channel_name + "' already set");
  if (static_cast<int64_t>(values.size()) != ch.nbins)
    throw Error("TensorWriter: data for channel '" + channel_name + "' has " + std::to_string(values.size()) +
                " bins, channel has " + std::to_string(ch.nbins));
  check_finite(values, "data of channel '" + channel_name + "'");
  std::vector<double> var = variances ? std::move(*variances) : values;
  if (var.size() != values.size())
    throw Error("TensorWriter: data variances for channel '" + channel_name + "' have the wrong size");
  check_finite(var, "data variances of channel '" + channel_name + "'");
  if (std::any_of(var.begin(), var.end(), [](double v) { return v < 0; }))
    throw Error("TensorWriter: negative data variances in channel '" + channel_name + "'");
  ch.data_obs = std::move(values);
  ch.data_var = std::move(var);
}

void TensorWriter::add_pseudodata(const std::string& name, const std::string& channel_name,
                                  std::vector<double> values) {
  Channel& ch = channel(channel_name);
  if (ch.info.masked)
    throw Error("TensorWriter: channel '" + channel_name + "' is masked and has no pseudodata");
  if (ch.pseudodata.count(name))
    throw Error("TensorWriter: pseudodata '" + name + "' for channel '" + channel_name + "' already set");
  if (static_cast<int64_t>(values.size()) != ch.nbins)
    throw Error("TensorWriter: pseudodata '" + name + "' for channel '" + channel_name +
                "' has the wrong size");
  check_finite(values, "pseudodata '" + name + "'");
  if (std::find(pseudodata_names_.begin(), pseudodata_names_.end(), name) == pseudodata_names_.end())
    pseudodata_names_.push_back(name);
  ch.pseudodata[name] = std::move(values);
}

void TensorWriter::add_data_covariance(Eigen::MatrixXd covariance) {
  if (covariance.rows() != covariance.cols()) throw Error("TensorWriter: data covariance must be square");
  if (!covariance.allFinite()) throw Error("TensorWriter: data covariance has NaN or Inf values");
  data_covariance_ = std::move(covariance);
}

void TensorWriter::add_process(const std::string& channel_name, const std::string& process,
                               std::vector<double> values, bool signal,
                               std::optional<std::vector<double>> variances) {
  Channel& ch = channel(channel_name);
  if (ch.norm.count(process))
    throw Error("TensorWriter: nominal of process '" + process + "' in channel '" + channel_name +
                "' already set");
  if (static_cast<int64_t>(values.size()) != ch.nbins)
    throw Error("TensorWriter: process '" + process + "' in channel '" + channel_name + "' has " +
                std::to_string(values.size()) + " bins, channel has " + std::to_string(ch.nbins));
  check_finite(values, "nominal of process '" + process + "'");
  std::vector<double> sumw2 = variances ? std::move(*variances) : values;
  if (sumw2.size() != values.size())
    throw Error("TensorWriter: variances of process '" + process + "' have the wrong size");
  check_finite(sumw2, "variances of process '" + process + "'");
  if (std::any_of(sumw2.begin(), sumw2.end(), [](double v) { return v < 0; }))
    throw Error("TensorWriter: negative variances for process '" + process + "' in channel '" + channel_name +
                "' (pass the sum of squared weights explicitly)");
  if (!allow_negative_expectation_)
    for (double& v : values) v = std::max(v, 0.0);
  (signal ? signals_ : backgrounds_).insert(process);
  ch.norm[process] = std::move(values);
  ch.sumw2[process] = std::move(sumw2);
}

const std::vector<double>& TensorWriter::nominal(Channel& ch, const std::string& process) const {
  auto it = ch.norm.find(process);
  if (it == ch.norm.end())
    throw Error("TensorWriter: process '" + process + "' has no nominal in channel '" + ch.info.name + "'");
  return it->second;
}

std::vector<double> TensorWriter::logk_of(const std::vector<double>& variation,
                                          const std::vector<double>& nom, double kfactor) const {
  if (variation.size() != nom.size())
    throw Error("TensorWriter: systematic variation has " + std::to_string(variation.size()) +
                " bins, nominal has " + std::to_string(nom.size()));
  check_finite(variation, "systematic variation");
  std::vector<double> logk(nom.size());
  for (size_t i = 0; i < nom.size(); ++i) {
    if (systematic_type_ == SystematicType::log_normal) {
      // A sign flip or a zero gives rabbit's constant log(1e-3).
      logk[i] = nom[i] * variation[i] > 0 ? kfactor * std::log(variation[i] / nom[i]) : kLogkEpsilon;
    } else {
      logk[i] = kfactor * (variation[i] - nom[i]);
    }
  }
  return logk;
}

void TensorWriter::book_logk(std::map<std::string, std::map<std::string, std::vector<double>>>& store,
                             Channel& ch, const std::string& process, const std::string& syst,
                             std::vector<double> logk) {
  const auto& nom = nominal(ch, process);
  for (size_t i = 0; i < logk.size(); ++i)
    if (nom[i] == 0.0) logk[i] = 0.0;  // keep the systematic tensor as sparse as the nominal
  store[process][syst] = std::move(logk);
}

void TensorWriter::book_systematic(const std::string& name, const SystematicOptions& options) {
  if (options.constrained ? systs_unconstrained_.count(name) : systs_constrained_.count(name))
    throw Error("TensorWriter: systematic '" + name + "' booked both constrained and unconstrained");
  (options.constrained ? systs_constrained_ : systs_unconstrained_).insert(name);
  if (options.noi) systs_noi_.insert(name);
  if (options.groups) {
    for (const auto& g : *options.groups) groups_[g].insert(name);
  } else {
    groups_[name].insert(name);
  }
}

void TensorWriter::book_asymmetric(const std::string& name, const std::string& process, Channel& ch,
                                   const std::vector<double>& up, const std::vector<double>& down,
                                   const SystematicOptions& options) {
  // up = logk(up variation), down = -logk(down variation), as in rabbit's _compute_asym_syst.
  const size_t n = up.size();
  std::vector<double> avg(n), other(n);
  switch (options.symmetrize) {
    case Symmetrization::conservative:
      for (size_t i = 0; i < n; ++i) avg[i] = std::abs(up[i]) > std::abs(down[i]) ? up[i] : down[i];
      book_logk(ch.logkavg, ch, process, name, avg);
      book_systematic(name, options);
      return;
    case Symmetrization::average:
      for (size_t i = 0; i < n; ++i) avg[i] = 0.5 * (up[i] + down[i]);
      book_logk(ch.logkavg, ch, process, name, avg);
      book_systematic(name, options);
      return;
    case Symmetrization::linear:
    case Symmetrization::quadratic: {
      const double factor = options.symmetrize == Symmetrization::quadratic ? std::sqrt(3.0) : 1.0;
      for (size_t i = 0; i < n; ++i) {
        avg[i] = 0.5 * (up[i] + down[i]);
        other[i] = 0.5 * factor * (up[i] - down[i]);
      }
      book_logk(ch.logkavg, ch, process, name + "SymDiff", other);
      book_systematic(name + "SymDiff", options);
      book_logk(ch.logkavg, ch, process, name + "SymAvg", avg);
      book_systematic(name + "SymAvg", options);
      return;
    }
    case Symmetrization::none:
      symmetric_tensor_ = false;
      for (size_t i = 0; i < n; ++i) {
        avg[i] = 0.5 * (up[i] + down[i]);
        other[i] = 0.5 * (up[i] - down[i]);
      }
      book_logk(ch.logkhalfdiff, ch, process, name, other);
      book_logk(ch.logkavg, ch, process, name, avg);
      book_systematic(name, options);
      return;
  }
}

void TensorWriter::add_systematic(const std::string& name, const std::string& process,
                                  const std::string& channel_name, const std::vector<double>& variation,
                                  const SystematicOptions& options) {
  Channel& ch = channel(channel_name);
  const auto& nom = nominal(ch, process);
  std::vector<double> var = variation;
  if (options.as_difference && var.size() == nom.size())
    for (size_t i = 0; i < var.size(); ++i) var[i] += nom[i];
  book_logk(ch.logkavg, ch, process, name, logk_of(var, nom, options.kfactor));
  book_systematic(name, options);
}

void TensorWriter::add_systematic(const std::string& name, const std::string& process,
                                  const std::string& channel_name, const std::vector<double>& up,
                                  const std::vector<double>& down, const SystematicOptions& options) {
  Channel& ch = channel(channel_name);
  const auto& nom = nominal(ch, process);
  std::vector<double> u = up, d = down;
  if (options.as_difference && u.size() == nom.size() && d.size() == nom.size())
    for (size_t i = 0; i < nom.size(); ++i) {
      u[i] += nom[i];
      d[i] += nom[i];
    }
  std::vector<double> logk_up = logk_of(u, nom, options.kfactor);
  std::vector<double> logk_down = logk_of(d, nom, options.kfactor);
  for (double& v : logk_down) v = -v;
  book_asymmetric(name, process, ch, logk_up, logk_down, options);
}

void TensorWriter::add_norm_systematic(const std::string& name, const std::vector<std::string>& processes,
                                       const std::string& channel_name, const std::vector<double>& kappas,
                                       const SystematicOptions& options) {
  if (kappas.size() != 1 && kappas.size() != processes.size())
    throw Error("TensorWriter: norm systematic '" + name + "': give one kappa or one per process (" +
                std::to_string(processes.size()) + "), got " + std::to_string(kappas.size()));
  Channel& ch = channel(channel_name);
  for (size_t i = 0; i < processes.size(); ++i) {
    const auto& nom = nominal(ch, processes[i]);
    const double kappa = kappas.size() == 1 ? kappas[0] : kappas[i];
    std::vector<double> var(nom.size());
    for (size_t b = 0; b < nom.size(); ++b) var[b] = nom[b] * kappa;
    book_logk(ch.logkavg, ch, processes[i], name, logk_of(var, nom, options.kfactor));
  }
  book_systematic(name, options);
}

void TensorWriter::add_norm_systematic(const std::string& name, const std::vector<std::string>& processes,
                                       const std::string& channel_name, double kappa_up, double kappa_down,
                                       const SystematicOptions& options) {
  Channel& ch = channel(channel_name);
  for (const auto& process : processes) {
    const auto& nom = nominal(ch, process);
    std::vector<double> up(nom.size()), down(nom.size());
    for (size_t b = 0; b < nom.size(); ++b) {
      up[b] = nom[b] * kappa_up;
      down[b] = nom[b] * kappa_down;
    }
    std::vector<double> logk_up = logk_of(up, nom, options.kfactor);
    std::vector<double> logk_down = logk_of(down, nom, options.kfactor);
    for (double& v : logk_down) v = -v;
    book_asymmetric(name, process, ch, logk_up, logk_down, options);
  }
}

void TensorWriter::add_beta_variations(const std::string& process, const std::string& source_channel,
                                       const std::string& dest_channel, std::vector<double> variation) {
  const Channel& src = channel(source_channel);
  Channel& dst = channel(dest_channel);
  if (!dst.info.masked)
    throw Error("TensorWriter: beta variations can only be applied to masked channels; '" + dest_channel +
                "' is not masked");
  if (src.info.masked)
    throw Error("TensorWriter: beta variations need an observed source channel; '" + source_channel +
                "' is masked");
  nominal(dst, process);  // the process must have a template in the destination channel
  if (static_cast<int64_t>(variation.size()) != dst.nbins * src.nbins)
    throw Error("TensorWriter: beta variation of process '" + process + "' from '" + source_channel +
                "' to '" + dest_channel + "' has " + std::to_string(variation.size()) + " values, expected " +
                std::to_string(dst.nbins) + " x " + std::to_string(src.nbins));
  check_finite(variation, "beta variation of process '" + process + "'");
  dst.beta_variations[source_channel][process] = std::move(variation);
}

void TensorWriter::add_external_gaussian_term(const std::string& name, std::vector<std::string> params,
                                              const Eigen::VectorXd& mean, const Eigen::MatrixXd& hess,
                                              std::optional<double> lognorm) {
  if (mean.size() != hess.rows() || hess.rows() != hess.cols())
    throw Error("TensorWriter: external term '" + name + "': mean and Hessian sizes differ");
  const Eigen::VectorXd hmu = hess * mean;
  add_external_term(name, std::move(params), Eigen::VectorXd(-hmu), hess, 0.5 * mean.dot(hmu), lognorm);
}

void TensorWriter::add_external_term(const std::string& name, std::vector<std::string> params,
                                     std::optional<Eigen::VectorXd> grad, std::optional<Eigen::MatrixXd> hess,
                                     std::optional<double> const_value, std::optional<double> lognorm) {
  const auto n = static_cast<Eigen::Index>(params.size());
  if (!grad && !hess) throw Error("TensorWriter: external term '" + name + "' needs a gradient or a Hessian");
  if (grad && grad->size() != n)
    throw Error("TensorWriter: external term '" + name + "': gradient size differs from the parameter count");
  if (hess && (hess->rows() != n || hess->cols() != n))
    throw Error("TensorWriter: external term '" + name + "': Hessian must be [n, n] for n parameters");
  for (const auto& t : external_terms_)
    if (t.name == name) throw Error("TensorWriter: external term '" + name + "' added twice");
  ExternalTerm t;
  t.name = name;
  t.params = std::move(params);
  t.grad_values = std::move(grad);
  t.hess = std::move(hess);
  for (const auto* v : {&const_value, &lognorm})
    if (*v && !std::isfinite(**v))
      throw Error("TensorWriter: external term '" + name + "': scalars must be finite");
  t.const_value = const_value;
  t.lognorm = lognorm;
  external_terms_.push_back(std::move(t));
}

std::vector<std::string> TensorWriter::signals() const {
  return {signals_.begin(), signals_.end()};  // std::set of std::string: byte-wise sorted like Python
}

std::vector<std::string> TensorWriter::procs() const {
  std::vector<std::string> p(signals_.begin(), signals_.end());
  p.insert(p.end(), backgrounds_.begin(), backgrounds_.end());
  return p;
}

std::vector<std::string> TensorWriter::systs() const {
  auto s = natural_sorted({systs_unconstrained_.begin(), systs_unconstrained_.end()});
  auto c = natural_sorted({systs_constrained_.begin(), systs_constrained_.end()});
  s.insert(s.end(), c.begin(), c.end());
  return s;
}

std::vector<ChannelInfo> TensorWriter::channels() const {
  std::vector<ChannelInfo> out;
  int64_t start = 0;
  for (int pass = 0; pass < 2; ++pass)
    for (const auto& ch : channels_) {
      if (ch.info.masked != (pass == 1)) continue;
      ChannelInfo info = ch.info;
      info.start = start;
      info.stop = start + ch.nbins;
      start = info.stop;
      out.push_back(std::move(info));
    }
  return out;
}

}  // namespace rabbit
