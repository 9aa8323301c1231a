#include "rabbit/cli/run_fit.hpp"

#include <fmt/format.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <unistd.h>

#include <Eigen/Cholesky>
#include <Eigen/LU>
#include <chrono>
#include <cmath>
#include <ctime>
#include <fstream>
#include <iostream>
#include <limits>
#include <algorithm>
#include <map>
#include <random>

#include "rabbit/backend/cpu/cpu_shard_evaluator.hpp"
#include "rabbit/core/error.hpp"
#include "rabbit/core/logging.hpp"
#include "rabbit/core/python_format.hpp"
#include "rabbit/fit/make_fitter.hpp"
#include "rabbit/io/fit_input_data.hpp"
#include "rabbit/io/hdf5_reader.hpp"
#include "rabbit/io/pickle_writer.hpp"
#include "rabbit/minimize/conjugate_gradient.hpp"
#include "rabbit/minimize/minimizer.hpp"
#include "rabbit/model/global_terms.hpp"
#include "rabbit/model/model.hpp"
#include "rabbit/postfit/histograms.hpp"
#include "rabbit/postfit/result_file.hpp"
#include "rabbit/postfit/scans.hpp"
#include "rabbit/postfit/uncertainties.hpp"

namespace rabbit::cli {
namespace {

using Eigen::MatrixXd;
using Eigen::VectorXd;
using result::Axis;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Python's str() of a float: shortest round-trip representation.
std::string py_float(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  std::string s = fmt::format("{}", v);
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

// Bytes of memory available to this process (MemAvailable), or 0 if unknown.
double available_memory_bytes() {
  std::ifstream f("/proc/meminfo");
  std::string key;
  double value = 0;
  std::string unit;
  while (f >> key >> value >> unit)
    if (key == "MemAvailable:") return value * 1024.0;
  return 0.0;
}

Axis channel_axis(const AxisInfo& a) {
  Axis out;
  out.name = a.name;
  out.label = a.label;
  out.underflow = a.underflow;
  out.overflow = a.overflow;
  out.circular = a.circular;
  if (a.kind == "regular") {
    out.type = "regular";
    out.bins = a.size;
    out.lower = a.edges.empty() ? 0.0 : a.edges.front();
    out.upper = a.edges.empty() ? static_cast<double>(a.size) : a.edges.back();
  } else if (a.kind == "variable") {
    out.type = "variable";
    out.edges = a.edges;
  } else if (a.kind == "integer") {
    out.type = "integer";
    out.lower = a.edges.empty() ? 0.0 : a.edges.front();
    out.upper = out.lower + static_cast<double>(a.size);
  } else if (a.kind == "category_str") {
    out.type = "strcategory";
    out.labels = a.categories_str;
  } else if (a.kind == "category_int") {
    out.type = "intcategory";
    out.int_values = a.categories_int;
  } else if (a.kind == "boolean") {
    out.type = "boolean";
  } else {
    // An axis the reader could not decode: keep its size as an integer axis.
    out.type = "integer";
    out.lower = 0;
    out.upper = static_cast<double>(a.size);
    out.underflow = out.overflow = false;
  }
  return out;
}

// --externalPostfit (cli-and-output.md §3, likelihood.md §8.1): parameter names, values and,
// when the file has one, their covariance.
struct ExternalPostfit {
  std::vector<std::string> names;
  VectorXd x;
  MatrixXd cov;  // empty when the file has none
};

ExternalPostfit read_external_postfit(const std::string& path, const std::optional<std::string>& key) {
  ExternalPostfit ext;
  bool plain = false;
  {
    h5::Reader reader(path);
    plain = reader.is_dataset("x") && reader.is_dataset("parms");
    if (plain) {
      ext.names = reader.read_strings("parms");
      const auto xs = reader.read_doubles(reader.info("x"));
      ext.x = Eigen::Map<const VectorXd>(xs.data(), static_cast<Eigen::Index>(xs.size()));
      if (reader.is_dataset("cov")) {
        const auto info = reader.info("cov");
        const auto n = static_cast<int64_t>(xs.size());
        if (info.rank() != 2 || info.shape[0] != n || info.shape[1] != n)
          reader.fail("cov", fmt::format("shape {} does not match x [{}]", info.shape_string(), n));
        const auto cs = reader.read_doubles(info);
        ext.cov = Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(cs.data(), n, n);
      }
      if (key) log().warn("--externalPostfitResult is ignored for the plain file {}", path);
    }
  }
  if (!plain) {
    result::ResultReader reader(path);
    const std::string group = reader.pick_result(key);
    const auto parms = reader.hist(group + "/parms");
    if (parms.axis_labels.empty()) throw InputError(fmt::format("{}: {}/parms has no parameter names", path, group));
    ext.names = parms.axis_labels[0];
    ext.x = Eigen::Map<const VectorXd>(parms.values.data(), static_cast<Eigen::Index>(parms.values.size()));
    if (reader.exists(group + "/cov")) {
      const auto c = reader.hist(group + "/cov");
      const auto n = ext.x.size();
      if (static_cast<Eigen::Index>(c.values.size()) != n * n)
        throw InputError(fmt::format("{}: {}/cov has {} values for {} parameters", path, group, c.values.size(), n));
      ext.cov = Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(c.values.data(), n, n);
    }
  }
  if (static_cast<Eigen::Index>(ext.names.size()) != ext.x.size())
    throw InputError(fmt::format("{}: {} parameter names for {} values", path, ext.names.size(), ext.x.size()));
  return ext;
}

class Run {
 public:
  explicit Run(const FitOptions& o) : o_(o) {}
  void execute();

 private:
  // ---- setup
  void load();
  void check_memory() const;
  void write_meta();
  // ---- per fit
  void run_one(int64_t fit, const std::string& group_name, const VectorXd& values, const VectorXd& variances,
               const std::string& pseudodata);
  VectorXd minimize_full(const VectorXd& x0, bool log_iterations, MinimizerResult* result);
  void throw_toy(const VectorXd& values, const VectorXd& variances, VectorXd& nobs, VectorXd& varnobs);
  void randomize_start(VectorXd& x);
  VectorXd profile_minimize(Objective& obj, const std::vector<int64_t>& floating, const VectorXd& x);
  PreconditionerOptions preconditioner_for(postfit::RestrictedObjective& sub, const std::vector<int64_t>& floating,
                                           bool on_fitter, bool log_selection) const;
  MatrixXd gauss_newton_matrix(postfit::RestrictedObjective& sub, const VectorXd& y) const;
  void postfit_uncertainties(result::Group group, const VectorXd& x, VectorXd& variances, MatrixXd& cov, bool& have_cov);
  void write_impacts(result::Group group, const VectorXd& x, const MatrixXd& cov, const MatrixXd& hess);
  void write_scans(result::Group group, const VectorXd& x, const MatrixXd& cov);
  void save_hists(result::Group group, const VectorXd& x, const MatrixXd& cov, bool prefit);
  void save_observed_hists(result::Group group, const VectorXd& nobs, const VectorXd& varnobs);
  result::Group mapping_group(result::Group group);
  // ---- helpers
  void add_shared(const std::string& id, Axis axis) {
    out_->shared_axis(id, axis);
    axis.shared_id = id;
    shared_axes_[id] = axis;
  }
  Axis shared(const std::string& id) const { return shared_axes_.at(id); }
  VectorXd xi(const VectorXd& x, VectorXd* d1 = nullptr) const;
  std::vector<int64_t> scan_indices(const std::vector<std::string>& names, const char* option) const;
  CpuShardEvaluator& cpu() const;

  const FitOptions& o_;
  std::shared_ptr<FitInputData> input_;
  std::shared_ptr<Model> model_;
  std::unique_ptr<Fitter> fitter_;
  std::unique_ptr<result::ResultWriter> out_;
  postfit::ImpactLayout layout_;
  std::vector<std::string> reported_names_, trad_groups_, glob_groups_;
  bool bb_on_ = false;
  bool bb_full_ = false;
  MinimizerOptions min_options_;
  // The full-space gradient and Hessian at the fitted point, from the fit's certificate.
  bool fit_hessian_valid_ = false;
  VectorXd fit_grad_;
  MatrixXd fit_hessian_;
  bool beta_state_changed_ = false;  // a toy moved β⁰ or the stored β away from the defaults
  int64_t toys_other_minimum_ = 0;   // --toysRandomizeParameters: toys ending in another minimum
  result::Group mappings_;            // mapping dict of the current fit
  result::Group base_mapping_;        // its BaseMapping group
  result::Group base_channels_;
  std::vector<result::Group> channel_groups_;
  std::map<std::string, Axis> shared_axes_;
  std::mt19937_64 rng_;
  // --toysRandomizeParameters draws from its own stream, so the toys' data do not depend on it.
  std::mt19937_64 start_rng_;
  // --externalPostfit: for each model parameter, its index in the file (-1: not there).
  std::optional<ExternalPostfit> external_;
  std::vector<int64_t> external_index_;
};

// The yields API for postfit work: the first shard of a CPU fit, a host-side CPU shard over all
// bins for CUDA fits (Fitter::postfit_shard keeps its data and BB state in step with the fit).
CpuShardEvaluator& Run::cpu() const { return fitter_->postfit_shard(); }

VectorXd Run::xi(const VectorXd& x, VectorXd* d1) const {
  VectorXd out, t1, t2;
  model_->parameters.transform(x, out, t1, t2);
  if (d1) *d1 = t1;
  return out;
}

void Run::load() {
  auto t0 = Clock::now();
  {
    // Refuse what cannot run sharded before reading anything (minimizers-and-sharding.md §6.10).
    ShardingRequest request;
    request.fitter.backend = parse_backend(o_.backend);
    request.fitter.n_devices = static_cast<int>(o_.n_devices);
    for (auto d : o_.devices) request.fitter.devices.push_back(static_cast<int>(d));
    request.likelihood = o_.model.likelihood;
    request.bin_by_bin_stat = o_.model.bin_by_bin_stat;
    for (const auto& r : o_.model.regularization) request.regularizers.push_back(r.name);
    request.global_impacts = o_.global_impacts;
    request.gaussian_global_impacts = o_.gaussian_global_impacts;
    request.diagnostics = o_.diagnostics;
    check_sharding_supported(request);
  }
  input_ = std::make_shared<FitInputData>(read_fit_input(o_.filename));
  for (const auto& ch : input_->channels)
    std::cout << ch.name << " masked=" << (ch.masked ? "True" : "False") << " flow=" << (ch.flow ? "True" : "False")
              << " bins=" << ch.nbins() << std::endl;
  if (o_.pseudo_data) std::cout << "Initialize pseudodata" << std::endl;
  log().debug("{} seconds to read the input", seconds_since(t0));

  ModelOptions mo = o_.model;
  bool any_blinded = false;
  for (auto t : o_.toys)
    if (t == 0 || (t >= 1 && o_.toys_data_mode == "observed")) any_blinded = true;
  mo.blinding_active = any_blinded && !o_.prefit_only;
  model_ = build_model(input_, mo);
  if (o_.external_postfit) {
    external_ = read_external_postfit(*o_.external_postfit, o_.external_postfit_result);
    const auto& names = model_->parameters.names;
    external_index_.assign(names.size(), -1);
    std::map<std::string, int64_t> in_file;
    for (size_t j = 0; j < external_->names.size(); ++j) in_file.emplace(external_->names[j], static_cast<int64_t>(j));
    int64_t common = 0;
    for (size_t i = 0; i < names.size(); ++i) {
      auto it = in_file.find(names[i]);
      if (it != in_file.end()) {
        external_index_[i] = it->second;
        ++common;
      }
    }
    if (common == 0)
      throw InputError(fmt::format("{}: --externalPostfit shares no parameter name with this fit", *o_.external_postfit));
    bool unfitted = o_.no_fit;  // the Asimov fit is never minimised either
    for (auto t : o_.toys) unfitted = unfitted || t == -1;
    if (external_->cov.size() && unfitted && (o_.do_impacts || o_.global_impacts || o_.gaussian_global_impacts))
      throw OptionError("--externalPostfit with a covariance replaces the Hessian of unfitted results (--noFit, "
                        "-t -1), which impacts need: drop the impact options or fit");
    log().info("External postfit {}: {} of {} parameters loaded{}", *o_.external_postfit, common, names.size(),
               external_->cov.size() ? " with their covariance" : "");
  }

  FitterOptions fo;
  fo.backend = parse_backend(o_.backend);
  fo.n_devices = static_cast<int>(o_.n_devices);
  for (auto d : o_.devices) fo.devices.push_back(static_cast<int>(d));
  fo.hvp_batch = o_.hvp_batch;
  fitter_ = make_fitter(model_, fo);
  fitter_->set_hvp_batch(o_.hvp_batch);

  const auto& ps = model_->parameters;
  auto* c = dynamic_cast<CpuShardEvaluator*>(fitter_->shards().front().get());
  bb_on_ = c ? c->has_bb() : o_.model.bin_by_bin_stat;
  bb_full_ = c ? c->bb_full() : o_.model.bb_mode == BBMode::full;

  // Reported parameters and groups (§4.3, §4.4).
  const int64_t off = ps.npoi + ps.npou;
  for (int64_t i = 0; i < ps.npoi; ++i) {
    layout_.reported.push_back(i);
    reported_names_.push_back(ps.names[i]);
  }
  for (auto k : input_->noiidxs) {
    layout_.reported.push_back(off + k);
    reported_names_.push_back(ps.names[off + k]);
  }
  for (size_t g = 0; g < input_->systgroups.size(); ++g) {
    layout_.group_names.push_back(input_->systgroups[g]);
    std::vector<int64_t> members;
    for (auto k : input_->systgroupidxs[g]) members.push_back(off + k);
    layout_.groups.push_back(members);
  }
  layout_.nstat = off + input_->nsystnoconstraint;
  layout_.floating = ps.floating_indices();
  trad_groups_ = layout_.group_names;
  trad_groups_.push_back("stat");
  if (bb_on_) trad_groups_.push_back("binByBinStat");
  glob_groups_ = layout_.group_names;
  glob_groups_.push_back("stat");
  if (bb_on_) {
    glob_groups_.push_back("binByBinStat");
    if (bb_full_)
      for (const auto& p : input_->procs) glob_groups_.push_back("binByBinStat" + p);
  }

  min_options_.method = o_.minimizer_method;
  min_options_.maxiter = o_.minimizer_maxiter.value_or(-1);
  min_options_.gtol = o_.minimizer_gtol.value_or(0.0);
  min_options_.early_stopping = static_cast<int>(o_.early_stopping);
  min_options_.stall_rel_tol = o_.stall_rel_tol;
  min_options_.max_restarts = static_cast<int>(o_.max_restarts);
  min_options_.hvp_batch = o_.hvp_batch;
  min_options_.linalg = &fitter_->dense_linalg();  // cuSOLVER when the fit runs on a GPU
  min_options_.edm_tol = o_.edm_tol;
  PreconditionerOptions& pc = min_options_.precondition;
  pc.enabled = o_.precondition;
  pc.blocks = o_.precondition_blocks;
  pc.block_threshold = o_.precondition_block_threshold;
  pc.from = o_.precondition_from;
  pc.ridge = o_.precondition_ridge;
  pc.transform = o_.precondition_transform;
  validate(pc);
}

// --preconditionParams resolved against the coordinates of one restricted objective
// (minimizers-and-sharding.md §4.2 step 2): each expression is a systematic-group name or a
// name/full-match regex; parameters that do not float here (frozen, or fixed by a scan) drop out.
PreconditionerOptions Run::preconditioner_for(postfit::RestrictedObjective& sub, const std::vector<int64_t>& floating,
                                              bool on_fitter, bool log_selection) const {
  PreconditionerOptions po = min_options_.precondition;
  if (!po.enabled) return po;
  const auto& ps = model_->parameters;
  std::vector<int64_t> position(static_cast<size_t>(ps.size()), -1);
  for (size_t k = 0; k < floating.size(); ++k) position[floating[k]] = static_cast<int64_t>(k);
  auto add_set = [&](const std::vector<int64_t>& params, const std::string& label) {
    std::vector<int64_t> set;
    for (auto i : params)
      if (position[i] >= 0) set.push_back(position[i]);
    po.index_sets.push_back(std::move(set));
    po.index_set_labels.push_back(label);
  };
  po.index_sets.clear();
  po.index_set_labels.clear();
  if (o_.precondition_params.empty()) {
    std::vector<int64_t> unconstrained;
    for (int64_t i = 0; i < ps.size(); ++i)
      if (ps.constraint_weights[i] == 0.0) unconstrained.push_back(i);
    add_set(unconstrained, "unconstrained");
  } else {
    for (const auto& expr : o_.precondition_params) {
      std::vector<int64_t> members;
      const auto g = std::find(layout_.group_names.begin(), layout_.group_names.end(), expr);
      if (g != layout_.group_names.end())
        members = layout_.groups[static_cast<size_t>(g - layout_.group_names.begin())];
      else
        members = match_names({expr}, ps.names, "--preconditionParams");
      if (members.empty()) {
        if (log_selection) log().warn("--preconditionParams: '{}' matches no parameter or group; skipped", expr);
        continue;
      }
      add_set(members, expr);
    }
  }
  // No set at all would mean "every coordinate" to Preconditioner::build; an empty set keeps an
  // empty selection empty (it then warns and runs unpreconditioned).
  if (po.index_sets.empty()) {
    po.index_sets.emplace_back();
    po.index_set_labels.emplace_back("none");
  }
  if (po.from == "gaussnewton") {
    if (on_fitter)
      po.reference_matrix = [this, &sub](const VectorXd& y) { return gauss_newton_matrix(sub, y); };
    else if (log_selection)
      log().warn("--preconditionFrom gaussnewton needs the fit's own likelihood; using the exact Hessian");
  }
  return po;
}

// Fisher information (§4.2 step 3): the exact Hessian with the observed data temporarily replaced
// by the prediction at x (data variances kept), restored even if the evaluation throws.
MatrixXd Run::gauss_newton_matrix(postfit::RestrictedObjective& sub, const VectorXd& y) const {
  const VectorXd x = sub.expand(y);
  VectorXd prediction;
  fitter_->postfit_shard().expected_yields(xi(x), 0, input_->nbins, CpuShardEvaluator::BetaMode::profiled,
                                           &prediction);
  const VectorXd saved_nobs = fitter_->observed();
  const VectorXd saved_variances = fitter_->observed_variances();
  MatrixXd hess;
  VectorXd grad;
  fitter_->set_observed(prediction, saved_variances);
  try {
    sub.value_grad_hess(y, grad, hess);
  } catch (...) {
    fitter_->set_observed(saved_nobs, saved_variances);
    throw;
  }
  fitter_->set_observed(saved_nobs, saved_variances);
  return hess;
}

void Run::check_memory() const {
  // The dense postfit matrices: Hessian, its β-fixed twin, covariance, Cholesky factor and inverse
  // work arrays (about 5 npar² doubles), histogram Jacobians and covariances.
  const double npar = static_cast<double>(model_->parameters.size());
  const double nbf = static_cast<double>(input_->nbinsfull);
  double need = 0.0;
  std::string what;
  if (!o_.no_hessian && !o_.prefit_only) {
    need += 5.0 * npar * npar * 8.0;
    what = "Hessian and covariance";
  }
  if (o_.save_hists && (o_.compute_hist_errors || o_.compute_hist_cov || !o_.no_chi2)) {
    need += 2.0 * nbf * npar * 8.0;
    what += what.empty() ? "histogram Jacobian" : ", histogram Jacobian";
  }
  if (o_.save_hists && (o_.compute_hist_cov || !o_.no_chi2)) {
    need += 2.0 * nbf * nbf * 8.0;
    what += ", histogram covariance";
  }
  if (o_.save_hists && o_.compute_hist_errors_per_process) need += nbf * static_cast<double>(input_->nproc) * npar * 8.0;
  const double avail = available_memory_bytes();
  log().debug("postfit memory estimate {:.3f} GiB ({}), available {:.3f} GiB", need / 1073741824.0, what,
              avail / 1073741824.0);
  if (avail > 0 && need > avail)
    throw ResourceError(fmt::format("the requested postfit steps ({}) need about {:.2f} GiB but only {:.2f} GiB of "
                                    "memory are available",
                                    what, need / 1073741824.0, avail / 1073741824.0));
}

void Run::write_meta() {
  auto meta = result::create_group(out_->root(), "meta", "meta");
  char tbuf[64];
  std::time_t now = std::time(nullptr);
  std::strftime(tbuf, sizeof(tbuf), "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  result::set_attr(meta, "time", std::string(tbuf));
  result::set_attr(meta, "command", o_.command);
  result::set_attr(meta, "args_json", o_.args_json);
  result::set_attr(meta, "input_file", o_.filename);
  const auto& ps = model_->parameters;
  result::set_attr(meta, "npoi", ps.npoi);
  result::set_attr(meta, "npou", ps.npou);
  result::set_attr(meta, "nsyst", ps.nsyst);
  result::set_attr(meta, "nsystnoconstraint", input_->nsystnoconstraint);
  result::set_attr(meta, "nbins", input_->nbins);
  result::set_attr(meta, "nbinsmasked", input_->nbinsmasked);
  // Rabbit's layout: upstream's meta dict (docs/output-format.md): meta_info, the input's own meta.
  const auto rabbit_meta = result::only_in(meta, result::Layout::rabbit);
  auto meta_info = result::create_group(rabbit_meta, "meta_info", "");
  result::write_scalar_str(meta_info, "time", python_datetime_now());
  result::write_scalar_str(meta_info, "command", o_.command);
  result::write_json(meta_info, "args", o_.args_json);
  result::write_scalar_str(meta_info, "producer", "rabbit-cpp 0.1.0");
  result::write_pickled(rabbit_meta, "meta_info_input", pickle::input_meta_for_output(*input_));
  result::write_strings(meta, "procs", input_->procs);
  std::vector<std::string> pois(ps.names.begin(), ps.names.begin() + ps.npoi);
  result::write_strings(meta, "pois", pois, result::NameArray::fixed_bytes);
  std::vector<std::string> nois(reported_names_.begin() + ps.npoi, reported_names_.end());
  result::write_strings(meta, "nois", nois);
  const auto plain_meta = result::only_in(meta, result::Layout::plain);
  result::write_strings(plain_meta, "parms", ps.names);
  result::write_int64s(plain_meta, "noiidxs", input_->noiidxs);
  result::write_strings(plain_meta, "systgroups", input_->systgroups);
  auto in = result::create_group(plain_meta, "input", "");
  result::set_attr_u8(in, "symmetric_tensor", input_->symmetric_tensor);
  result::set_attr(in, "systematic_type",
                   std::string(input_->systematic_type == SystematicType::normal ? "normal" : "log_normal"));
  auto chs = result::create_group(in, "channels", "dict");
  std::vector<std::string> order;
  for (const auto& ch : input_->channels) {
    order.push_back(ch.name);
    auto g = result::create_group(chs, ch.name, "");
    result::set_attr_u8(g, "masked", ch.masked);
    result::set_attr_u8(g, "flow", ch.flow);
    result::set_attr(g, "start", ch.start);
    result::set_attr(g, "stop", ch.stop);
    for (size_t k = 0; k < ch.axes.size(); ++k) result::write_axis(g, "axis" + std::to_string(k), channel_axis(ch.axes[k]));
  }
  result::write_strings(chs, "_order", order);

  add_shared("parms", Axis::strcat("parms", ps.names));
  add_shared("parms_x", Axis::strcat("parms_x", ps.names));
  add_shared("parms_y", Axis::strcat("parms_y", ps.names));
  add_shared("poinoi", Axis::strcat("parms", reported_names_));
  add_shared("impacts", Axis::strcat("impacts", ps.names));
  add_shared("impacts_grouped", Axis::strcat("impacts", trad_groups_));
  add_shared("global_impacts_grouped", Axis::strcat("impacts", glob_groups_));
  add_shared("downUpVar", Axis::down_up());
  add_shared("vars", Axis::strcat("vars", ps.names));
  add_shared("yield", Axis::integer("yield", 0, 1));
}

VectorXd Run::profile_minimize(Objective& obj, const std::vector<int64_t>& floating, const VectorXd& x) {
  postfit::RestrictedObjective sub(obj, floating, x);
  MinimizerOptions mo = min_options_;
  mo.callback = nullptr;
  mo.precondition = preconditioner_for(sub, floating, &obj == fitter_.get(), false);
  MinimizerResult r = minimize(sub, sub.restrict(x), mo);
  return sub.expand(r.x);
}

VectorXd Run::minimize_full(const VectorXd& x0, bool log_iterations, MinimizerResult* result) {
  postfit::RestrictedObjective sub(*fitter_, layout_.floating, x0);
  MinimizerOptions mo = min_options_;
  mo.precondition = preconditioner_for(sub, layout_.floating, true, log_iterations);
  double last_elapsed = 0.0;
  if (log_iterations)
    mo.callback = [&](const IterationInfo& it) {
      log().debug("Iteration {}: loss {}  [dt={:.3f}s elapsed={:.3f}s] change={} radius={} |g|={}{}", it.iteration,
                  py_float(it.f), it.elapsed_s - last_elapsed, it.elapsed_s, py_float(it.delta_f),
                  py_float(it.radius), py_float(it.grad_norm), it.accepted ? "" : " (rejected)");
      last_elapsed = it.elapsed_s;
    };
  std::string opts = fmt::format("'maxiter': {}, 'gtol': {}", min_options_.maxiter > 0 ? min_options_.maxiter : 200 * sub.size(),
                                 py_float(min_options_.gtol));
  log().info("Perform iterative fit");
  log().info("[minimize] method={} options={{{}}}", o_.minimizer_method, opts);
  // The end point is certified with the dense Hessian that the covariance needs anyway (it is
  // handed over below), or by CG on HVPs under --noHessian (docs/minimizers.md "Convergence").
  mo.certify = o_.no_hessian ? MinimizerOptions::Certify::hvp : MinimizerOptions::Certify::dense;
  *result = minimize(sub, sub.restrict(x0), mo);
  log().debug("minimizer ended: status {} ({}), {} iterations, {} evaluations", result->status, result->message,
              result->iterations, result->nfev);
  if (!result->converged)
    log().warn("The fit did not converge: {}; EDM {:.3g} (tolerance {:.3g}), largest scaled gradient {:.3g}",
               result->stop_reason, result->edm, mo.edm_tol * std::max(1.0, std::abs(result->f)),
               result->max_scaled_grad);
  VectorXd x = sub.expand(result->x);
  fit_hessian_valid_ = sub.take_full_hessian(x, fit_grad_, fit_hessian_);
  return x;
}

void Run::postfit_uncertainties(result::Group group, const VectorXd& x, VectorXd& variances, MatrixXd& cov, bool& have_cov) {
  const auto& ps = model_->parameters;
  const int64_t npar = ps.size();
  variances = VectorXd::Constant(npar, std::numeric_limits<double>::quiet_NaN());
  if (o_.no_hessian) {
    if (o_.no_edm) return;
    // §4.13: CG on Hessian-vector products over the floating coordinates.
    postfit::RestrictedObjective sub(*fitter_, layout_.floating, x);
    VectorXd y = sub.restrict(x), g;
    sub.value_grad(y, g);
    auto apply = [&](const VectorXd& v) {
      VectorXd gg;
      MatrixXd hv;
      sub.value_grad_hvp(y, v, gg, hv);
      return VectorXd(hv.col(0));
    };
    const int64_t maxiter = std::max<int64_t>(10 * sub.size(), 100);
    VectorXd v = conjugate_gradient(apply, g, 1e-10, maxiter, "the EDM");
    double edm = 0.5 * g.dot(v);
    log().info("edmval: {}", py_float(edm));
    result::write_scalar(group, "edmval", edm);
    for (auto r : layout_.reported) {
      auto it = std::find(layout_.floating.begin(), layout_.floating.end(), r);
      if (it == layout_.floating.end())
        throw NumericalError(fmt::format("--noHessian: the variance of frozen parameter {} cannot be computed", ps.names[r]));
      int64_t k = it - layout_.floating.begin();
      VectorXd e = VectorXd::Zero(sub.size());
      e(k) = 1.0;
      VectorXd c = conjugate_gradient(apply, e, 1e-10, maxiter, "the variance of " + ps.names[r]);
      variances(r) = c(k);
    }
    return;
  }
  VectorXd g;
  MatrixXd hess;
  if (fit_hessian_valid_) {  // the Hessian that certified the fit, taken at this x
    g = std::move(fit_grad_);
    hess = std::move(fit_hessian_);
    fit_hessian_valid_ = false;
  } else {
    fitter_->value_grad_hess(x, g, hess);
  }
  auto res = postfit::covariance_from_hessian(hess, g, layout_.floating, prefit_covariance(*model_));
  cov = res.cov;
  have_cov = true;
  log().info("edmval: {}", py_float(res.edm));
  result::write_scalar(group, "edmval", res.edm);
  result::write_hist(group, "cov", {shared("parms_x"), shared("parms_y")},
                     cov.data(), nullptr);  // symmetric: column-major equals row-major
  if (bb_on_ && o_.diagnostics) log().info("edmvalbeta: not computed (the beta profile is analytic)");
  variances = cov.diagonal();
  if (o_.do_impacts || o_.global_impacts || o_.gaussian_global_impacts) write_impacts(group, x, cov, hess);
}

void Run::write_impacts(result::Group group, const VectorXd& x, const MatrixXd& cov, const MatrixXd& hess) {
  const auto& ps = model_->parameters;
  const int64_t nimp = static_cast<int64_t>(layout_.reported.size());
  auto row_major = [](const MatrixXd& m) {
    Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> r = m;
    return std::vector<double>(r.data(), r.data() + r.size());
  };
  const Axis poinoi = shared("poinoi");
  if (o_.do_impacts) {
    MatrixXd per = postfit::traditional_impacts(cov, layout_.reported);
    MatrixXd hess_fixed;
    const MatrixXd* hf = nullptr;
    if (bb_on_) {
      VectorXd g;
      fitter_->value_grad_hess(x, g, hess_fixed, false);
      hf = &hess_fixed;
    }
    MatrixXd grouped = postfit::traditional_grouped_impacts(cov, hess, hf, layout_);
    auto a = row_major(per), b = row_major(grouped);
    result::write_hist(group, "impacts", {poinoi, shared("impacts")}, a.data(), nullptr);
    result::write_hist(group, "impacts_grouped", {poinoi, shared("impacts_grouped")}, b.data(),
                       nullptr);
  }
  if (!o_.global_impacts && !o_.gaussian_global_impacts) return;

  MatrixXd per = postfit::global_impacts(cov, ps.constraint_weights, ps.frozen, layout_.reported);
  // MC-stat part (§4.4): a_r = S_β · (dβ̂/dx · C e_r), the directional derivative by central
  // differences of the analytic profile; S_β² the curvature of L_β at β̂.
  VectorXd bb_sq;
  MatrixXd bb_proc_sq;
  if (bb_on_) {
    auto& c = cpu();
    const VectorXd beta_hat = fitter_->profiled_beta(x);
    const VectorXd& k = c.bb_kstat();
    const VectorXd& beta0 = c.beta_centres();
    const auto& mask = c.bb_mask();
    const int64_t ne = beta_hat.size();
    VectorXd s2(ne);
    for (int64_t e = 0; e < ne; ++e) {
      if (mask[e]) {
        s2(e) = 0.0;
        continue;
      }
      switch (model_->bb_type) {
        case BBType::gamma: s2(e) = k(e) * beta0(e) / (beta_hat(e) * beta_hat(e)); break;
        case BBType::normal_multiplicative: s2(e) = k(e); break;
        default: s2(e) = 1.0; break;
      }
    }
    bb_sq = VectorXd::Zero(nimp);
    const int64_t nproc = input_->nproc;
    if (bb_full_) bb_proc_sq = MatrixXd::Zero(nimp, nproc);
    for (int64_t r = 0; r < nimp; ++r) {
      VectorXd w = cov.col(layout_.reported[r]);
      const double scale = w.lpNorm<Eigen::Infinity>();
      if (!(scale > 0.0)) continue;
      const double h = 1e-4 / scale;
      VectorXd db = (fitter_->profiled_beta(x + h * w) - fitter_->profiled_beta(x - h * w)) / (2.0 * h);
      VectorXd a2 = s2.array() * db.array().square();
      bb_sq(r) = a2.sum();
      if (bb_full_)
        for (int64_t e = 0; e < ne; ++e) bb_proc_sq(r, e % nproc) += a2(e);
    }
  }
  const Axis imp = shared("impacts");
  const Axis glob = shared("global_impacts_grouped");
  if (o_.global_impacts) {
    MatrixXd grouped = postfit::global_grouped_impacts(cov, per, layout_, bb_on_ ? &bb_sq : nullptr,
                                                       bb_full_ && bb_on_ ? &bb_proc_sq : nullptr, nullptr);
    auto a = row_major(per), b = row_major(grouped);
    result::write_hist(group, "global_impacts", {poinoi, imp}, a.data(), nullptr);
    result::write_hist(group, "global_impacts_grouped", {poinoi, glob}, b.data(), nullptr);
  }
  if (o_.gaussian_global_impacts) {
    // §4.5: stat² = (J w)ᵀ W V_n W (J w) with w = C e_r, J the profiled yield Jacobian (x-space).
    auto& c = cpu();
    VectorXd d1;
    VectorXd xis = xi(x, &d1);
    MatrixXd J = c.yield_jacobian(xis, 0, input_->nbins, CpuShardEvaluator::BetaMode::profiled) * d1.asDiagonal();
    VectorXd nu;
    c.expected_yields(xis, 0, input_->nbins, CpuShardEvaluator::BetaMode::profiled, &nu);
    const VectorXd& n = fitter_->observed();
    const VectorXd& var = fitter_->observed_variances();
    VectorXd stat_sq(nimp);
    for (int64_t r = 0; r < nimp; ++r) {
      VectorXd jw = J * cov.col(layout_.reported[r]);
      double s = 0.0;
      switch (model_->options.likelihood) {
        case DataLikelihood::poisson:
          for (int64_t i = 0; i < jw.size(); ++i) s += jw(i) * jw(i) * n(i) / (nu(i) * nu(i));
          break;
        case DataLikelihood::chisq:
          for (int64_t i = 0; i < jw.size(); ++i) {
            double v = var.size() ? var(i) : n(i);
            s += jw(i) * jw(i) / v;
          }
          break;
        case DataLikelihood::covariance:
          if (input_->data_cov_inv) {
            s = jw.dot(*input_->data_cov_inv * jw);
          } else {
            for (int64_t i = 0; i < jw.size(); ++i) {
              double v = var.size() ? var(i) : n(i);
              s += jw(i) * jw(i) / v;
            }
          }
          break;
      }
      stat_sq(r) = s;
    }
    MatrixXd grouped = postfit::global_grouped_impacts(cov, per, layout_, bb_on_ ? &bb_sq : nullptr,
                                                       bb_full_ && bb_on_ ? &bb_proc_sq : nullptr, &stat_sq);
    auto a = row_major(per), b = row_major(grouped);
    result::write_hist(group, "gaussian_global_impacts", {poinoi, imp}, a.data(), nullptr);
    result::write_hist(group, "gaussian_global_impacts_grouped", {poinoi, glob}, b.data(), nullptr);
  }
}

std::vector<int64_t> Run::scan_indices(const std::vector<std::string>& names, const char* option) const {
  const auto& ps = model_->parameters;
  std::vector<int64_t> out;
  if (names.empty()) {
    for (int64_t i = 0; i < ps.size(); ++i) out.push_back(i);
    return out;
  }
  for (const auto& n : names) {
    int64_t i = ps.index(n);
    if (i < 0) throw OptionError(fmt::format("{}: unknown parameter '{}'", option, n));
    out.push_back(i);
  }
  return out;
}

void Run::write_scans(result::Group group, const VectorXd& x, const MatrixXd& cov) {
  const auto& ps = model_->parameters;
  postfit::ProfileMinimizer pm = [this](Objective& obj, const std::vector<int64_t>& floating, const VectorXd& x0) {
    return profile_minimize(obj, floating, x0);
  };
  if (o_.scan) {
    for (auto p : scan_indices(*o_.scan, "--scan")) {
      log().info("-delta log(L) scan for {}", ps.names[p]);
      if (ps.frozen[p]) throw OptionError(fmt::format("--scan: parameter {} is frozen", ps.names[p]));
      double sigma = o_.scan_range_use_prefit ? 1.0 : std::sqrt(cov(p, p));
      auto scan = postfit::scan_1d(*fitter_, pm, layout_.floating, x, p, sigma, o_.scan_range, o_.scan_points);
      result::write_hist(group, "nll_scan_" + ps.names[p], {Axis::floatcat("scan", scan.points)}, scan.dnll.data(),
                         nullptr, "Likelihood scan for parameter " + ps.names[p]);
    }
  }
  if (o_.contour_scan) {
    auto params = scan_indices(*o_.contour_scan, "--contourScan");
    const double lmin = fitter_->value(x);
    const int64_t npar = ps.size();
    const int64_t nl = static_cast<int64_t>(o_.contour_levels.size());
    std::vector<double> values(params.size() * nl * 2 * npar, std::numeric_limits<double>::quiet_NaN());
    std::vector<std::string> labels;
    for (size_t ip = 0; ip < params.size(); ++ip) {
      const int64_t p = params[ip];
      labels.push_back(ps.names[p]);
      log().info("Contour scan for {}", ps.names[p]);
      if (ps.frozen[p]) continue;
      for (int64_t il = 0; il < nl; ++il) {
        log().info("    Now at CL {}", py_float(o_.contour_levels[il]));
        for (int side : {-1, 1}) {
          auto t0 = Clock::now();
          auto pt = postfit::contour_point(*fitter_, pm, layout_.floating, x, lmin, p, cov.col(p),
                                           o_.contour_levels[il], side);
          log().info("Success: {} sign={} time={:.3f}s", pt.success ? "True" : "False", side, seconds_since(t0));
          if (!pt.success) log().warn("Message: contour search for {} at level {} did not converge", ps.names[p],
                                      py_float(o_.contour_levels[il]));
          const int64_t base = ((static_cast<int64_t>(ip) * nl + il) * 2 + (side < 0 ? 0 : 1)) * npar;
          for (int64_t j = 0; j < npar; ++j) values[base + j] = pt.displacement(j);
        }
      }
    }
    Axis levels = Axis::floatcat("confidence_level", o_.contour_levels);
    result::write_hist(group, "contour_scan",
                       {Axis::strcat("impacts", labels), levels, shared("downUpVar"), shared("parms")},
                       values.data(), nullptr, "Parameter likelihood contour scans");
  }
}

result::Group Run::mapping_group(result::Group group) {
  if (!mappings_.valid()) {
    mappings_ = result::create_group(group, "mappings", "dict");
    result::write_strings(mappings_, "_order", {"BaseMapping"});
    base_mapping_ = result::create_group(mappings_, "BaseMapping", "dict");
    base_channels_ = result::create_group(base_mapping_, "channels", "dict");
    std::vector<std::string> order;
    for (const auto& ch : input_->channels) {
      order.push_back(ch.name);
      channel_groups_.push_back(result::create_group(base_channels_, ch.name, "dict"));
    }
    result::write_strings(base_channels_, "_order", order);
  }
  return base_mapping_;
}

void Run::save_observed_hists(result::Group group, const VectorXd& nobs, const VectorXd& varnobs) {
  mapping_group(group);
  std::cout << "Save data histogram for BaseMapping" << std::endl;
  MatrixXd data_cov;
  if (input_->data_cov_inv) data_cov = input_->data_cov_inv->inverse();
  for (size_t c = 0; c < input_->channels.size(); ++c) {
    const auto& ch = input_->channels[c];
    if (ch.masked) continue;
    std::vector<Axis> axes;
    for (const auto& a : ch.axes) axes.push_back(channel_axis(a));
    if (axes.empty()) axes.push_back(shared("yield"));
    const int64_t nb = ch.nbins();
    VectorXd d = input_->data_obs.segment(ch.start, nb);
    VectorXd dv = input_->data_var ? VectorXd(input_->data_var->segment(ch.start, nb)) : d;
    if (input_->data_cov_inv) dv = data_cov.diagonal().segment(ch.start, nb);
    result::write_hist(channel_groups_[c], "hist_data_obs", axes, d.data(), dv.data(),
                       "observed number of events in data");
    VectorXd n = nobs.segment(ch.start, nb);
    VectorXd nv = n;
    if (model_->options.likelihood == DataLikelihood::chisq && varnobs.size()) nv = varnobs.segment(ch.start, nb);
    if (model_->options.likelihood == DataLikelihood::covariance && input_->data_cov_inv)
      nv = data_cov.diagonal().segment(ch.start, nb);
    result::write_hist(channel_groups_[c], "hist_nobs", axes, n.data(), nv.data(), "observed number of events for fit");
    if (input_->data_cov_inv) {
      std::vector<Axis> axes2;
      for (auto a : axes) {
        a.name += "_x";
        axes2.push_back(a);
      }
      for (auto a : axes) {
        a.name += "_y";
        axes2.push_back(a);
      }
      Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> block = data_cov.block(ch.start, ch.start, nb, nb);
      result::write_hist(channel_groups_[c], "cov_data_obs", axes2, block.data(), nullptr,
                         "covariance of observed number of events in data");
      if (model_->options.likelihood == DataLikelihood::covariance)
        result::write_hist(channel_groups_[c], "cov_nobs_obs", axes2, block.data(), nullptr,
                           "covariance of observed number of events in data");
    }
  }
}

void Run::save_hists(result::Group group, const VectorXd& x, const MatrixXd& cov, bool prefit) {
  mapping_group(group);
  auto& c = cpu();
  log().info("Save inclusive histogram for BaseMapping");
  postfit::HistogramRequest req;
  // --noPostfitProfileBB: the postfit histograms are evaluated like the prefit ones (β not
  // profiled, H_ββ of L_β alone), with the postfit parameters and covariance.
  req.prefit = prefit || o_.no_postfit_profile_bb;
  req.errors = o_.compute_hist_errors;
  req.covariance = o_.compute_hist_cov;
  req.per_process = o_.save_hists_per_process;
  req.errors_per_process = o_.compute_hist_errors_per_process;
  req.chi2 = !o_.no_chi2;
  auto h = postfit::compute_histograms(*model_, c, *fitter_, x, cov, req);
  const std::string stage = prefit ? "prefit" : "postfit";
  for (size_t ci = 0; ci < input_->channels.size(); ++ci) {
    const auto& ch = input_->channels[ci];
    std::vector<Axis> axes;
    for (const auto& a : ch.axes) axes.push_back(channel_axis(a));
    if (axes.empty()) axes.push_back(shared("yield"));
    const int64_t nb = ch.nbins();
    VectorXd y = h.inclusive.segment(ch.start, nb);
    VectorXd v = req.errors ? VectorXd(h.inclusive_var.segment(ch.start, nb)) : VectorXd();
    result::write_hist(channel_groups_[ci], "hist_" + stage + "_inclusive", axes, y.data(), req.errors ? v.data() : nullptr,
                       stage + " expected number of events, for all processes combined, ", ch.flow);
    if (req.per_process) {
      std::vector<Axis> paxes = axes;
      paxes.push_back(Axis::strcat("processes", input_->procs));
      Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> pp = h.per_process.middleRows(ch.start, nb);
      Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> pv;
      if (req.errors_per_process) pv = h.per_process_var.middleRows(ch.start, nb);
      result::write_hist(channel_groups_[ci], "hist_" + stage, paxes, pp.data(), req.errors_per_process ? pv.data() : nullptr,
                         stage + " expected number of events, ", ch.flow);
    }
  }
  if (req.per_process) log().info("Save processes histogram for BaseMapping");
  if (o_.compute_variations) {
    // §4.10: y ∓ J[:, p]·sqrt(C_pp) for every parameter, J at fixed β (the stored β prefit, β̂ postfit);
    // prefit C = diag(var_prefit) with unconstrained sigma 1.
    const auto& ps = model_->parameters;
    const int64_t npar = ps.size(), nbf = input_->nbinsfull;
    VectorXd d1;
    VectorXd xis = xi(x, &d1);
    VectorXd sig(npar);
    for (int64_t p = 0; p < npar; ++p) {
      double v = cov(p, p);
      if (prefit && !(ps.constraint_weights(p) > 0.0)) v = 1.0;
      sig(p) = std::sqrt(std::max(v, 0.0));
    }
    const VectorXd stored = c.stored_beta();
    if (!prefit && bb_on_ && !o_.no_postfit_profile_bb) {
      VectorXd b = stored;
      VectorXd bhat = fitter_->profiled_beta(x);
      b.head(bhat.size()) = bhat;
      c.set_stored_beta(b);
    }
    MatrixXd J = c.yield_jacobian(xis, 0, nbf, CpuShardEvaluator::BetaMode::stored) * d1.asDiagonal();
    if (bb_on_) c.set_stored_beta(stored);
    for (size_t ci = 0; ci < input_->channels.size(); ++ci) {
      const auto& ch = input_->channels[ci];
      std::vector<Axis> axes;
      for (const auto& a : ch.axes) axes.push_back(channel_axis(a));
      if (axes.empty()) axes.push_back(shared("yield"));
      axes.push_back(shared("vars"));
      axes.push_back(shared("downUpVar"));
      const int64_t nb = ch.nbins();
      std::vector<double> vals(static_cast<size_t>(nb * npar * 2));
      for (int64_t b = 0; b < nb; ++b)
        for (int64_t p = 0; p < npar; ++p) {
          const double shift = J(ch.start + b, p) * sig(p);
          vals[(b * npar + p) * 2 + 0] = h.inclusive(ch.start + b) - shift;
          vals[(b * npar + p) * 2 + 1] = h.inclusive(ch.start + b) + shift;
        }
      result::write_hist(channel_groups_[ci], "hist_" + stage + "_inclusive_variations", axes, vals.data(), nullptr,
                         stage + " expected number of events, for all processes combined, with variations, ", ch.flow);
    }
  }
  if (req.covariance) {
    const int64_t N = h.inclusive_cov.rows();
    Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> cv = h.inclusive_cov;
    result::write_hist(base_mapping_, "hist_" + stage + "_inclusive_cov", {Axis::integer("x", 0, N), Axis::integer("y", 0, N)},
                       cv.data(), nullptr, stage + " expected number of events, for all processes combined,  covariance");
  }
  if (req.chi2) {
    log().info("Linear chi2:");
    log().info("    ndof: {}", h.ndf);
    // rabbit prints round(chi2): the value rounded half to even, as "{:.0f}" does; unlike an
    // integer cast it stays a number for any magnitude and prints "inf"/"nan" as such.
    log().info("    chi2/ndf = {:.0f}", h.chi2);
    log().info("    p-value: {}%", std::round(10000.0 * postfit::chi2_survival(h.chi2, static_cast<double>(h.ndf))) / 100.0);
    result::write_scalar(base_mapping_, prefit ? "chi2_prefit" : "chi2", h.chi2);
    result::write_scalar(base_mapping_, prefit ? "ndf_prefit" : "ndf", h.ndf);
  }
}

// One toy (likelihood.md §8.4): randomise the constraint centres / BB centres (or the generating
// parameters), take the expectation (or the observed data) as the mean, throw the counts.
void Run::throw_toy(const VectorXd& values, const VectorXd& variances, VectorXd& nobs, VectorXd& varnobs) {
  auto& ps = model_->parameters;
  auto& c = cpu();
  std::normal_distribution<double> gauss(0.0, 1.0);
  const DataLikelihood lik = model_->options.likelihood;
  if (lik == DataLikelihood::covariance && o_.toys_data_randomize == "poisson")
    throw OptionError("--toysDataRandomize poisson is not allowed with --covarianceFit");
  VectorXd xgen = ps.x_default;
  const VectorXd var_x0 = ps.constraint_centre_variance();
  if (o_.toys_syst_randomize == "frequentist") {
    for (int64_t i = 0; i < ps.size(); ++i)
      if (var_x0(i) > 0.0) ps.constraint_centres(i) = ps.constraint_centres_default(i) + std::sqrt(var_x0(i)) * gauss(rng_);
  } else if (o_.toys_syst_randomize == "bayesian") {
    for (int64_t i = 0; i < ps.size(); ++i)
      if (var_x0(i) > 0.0) xgen(i) = ps.constraint_centres(i) + std::sqrt(var_x0(i)) * gauss(rng_);
  }
  VectorXd beta0, beta;
  if (c.has_bb() && o_.toys_syst_randomize != "none") {
    const VectorXd& k = c.bb_kstat();
    beta0 = c.beta_centres();
    beta = c.stored_beta();
    for (int64_t e = 0; e < beta0.size(); ++e) {
      if (o_.toys_syst_randomize == "frequentist") {
        switch (model_->bb_type) {
          case BBType::gamma: beta0(e) = static_cast<double>(std::poisson_distribution<int64_t>(k(e) * beta(e))(rng_)) / k(e); break;
          case BBType::normal_multiplicative: beta0(e) = beta(e) + gauss(rng_) / std::sqrt(k(e)); break;
          default: beta0(e) = beta(e) + gauss(rng_); break;
        }
      } else {
        switch (model_->bb_type) {
          case BBType::gamma: beta(e) = std::gamma_distribution<double>(k(e) * beta0(e) + 1.0, 1.0)(rng_) / k(e); break;
          case BBType::normal_multiplicative: beta(e) = beta0(e) + gauss(rng_) / std::sqrt(k(e)); break;
          default: beta(e) = beta0(e) + gauss(rng_); break;
        }
      }
    }
    // Bayesian toys generate the data at the thrown β; frequentist toys at the nominal β, and
    // only the constraint centres β⁰ move (set below, after the data are generated).
    if (o_.toys_syst_randomize == "bayesian") fitter_->set_stored_beta(beta);
    beta_state_changed_ = true;
  }
  VectorXd central;
  if (o_.toys_data_mode == "expected") c.expected_yields(xi(xgen), 0, input_->nbins, CpuShardEvaluator::BetaMode::stored, &central);
  else central = values;
  if (beta0.size() > 0 && o_.toys_syst_randomize == "frequentist") fitter_->set_beta_centres(beta0);
  nobs = central;
  const bool given_var = variances.size() > 0;
  if (o_.toys_data_randomize == "poisson") {
    for (int64_t i = 0; i < nobs.size(); ++i)
      nobs(i) = static_cast<double>(std::poisson_distribution<int64_t>(std::max(central(i), 0.0))(rng_));
    varnobs = nobs;
  } else if (o_.toys_data_randomize == "normal") {
    if (lik == DataLikelihood::covariance && input_->data_cov_inv) {
      Eigen::LLT<MatrixXd> llt(input_->data_cov_inv->inverse());
      VectorXd z(nobs.size());
      for (int64_t i = 0; i < z.size(); ++i) z(i) = gauss(rng_);
      nobs = central + llt.matrixL() * z;
    } else {
      for (int64_t i = 0; i < nobs.size(); ++i) {
        double v = (lik == DataLikelihood::chisq && given_var) ? variances(i) : central(i);
        nobs(i) = central(i) + std::sqrt(std::max(v, 0.0)) * gauss(rng_);
      }
    }
    varnobs = given_var ? variances : nobs;
  } else {
    varnobs = given_var ? variances : nobs;
  }
  if (lik == DataLikelihood::poisson) varnobs = VectorXd();
  // The fit starts from the defaults with β at its (possibly thrown) centre.
  if (beta_state_changed_) fitter_->set_stored_beta(c.beta_centres());
}

// --toysRandomizeParameters (likelihood.md §8.4 step 5): x ~ N(x, sqrt(var_prefit)) where the
// prefit variance is positive, and the stored beta ~ N(beta0, sqrt(sigma2_beta)) with the absolute
// sumw2 for every BB type, as upstream. Frozen parameters keep their value: they are not fitted.
void Run::randomize_start(VectorXd& x) {
  auto& ps = model_->parameters;
  std::normal_distribution<double> gauss(0.0, 1.0);
  const VectorXd var = prefit_variances(*model_);
  for (int64_t i = 0; i < ps.size(); ++i)
    if (var(i) > 0.0 && !ps.frozen[i]) x(i) += std::sqrt(var(i)) * gauss(start_rng_);
  auto& c = cpu();
  if (!c.has_bb()) return;
  const int64_t ne = c.bb_entries(), np = input_->nproc;
  VectorXd beta = c.beta_centres();
  for (int64_t e = 0; e < ne; ++e) {
    double sigma2 = 0.0;
    if (bb_full_ || input_->sumw_per_bin) {
      sigma2 = input_->sumw2[e];
    } else {
      for (int64_t p = 0; p < np; ++p) sigma2 += input_->sumw2[e * np + p];
    }
    beta(e) += std::sqrt(std::max(sigma2, 0.0)) * gauss(start_rng_);
  }
  fitter_->set_stored_beta(beta);
  beta_state_changed_ = true;
}

void Run::run_one(int64_t fit, const std::string& group_name, const VectorXd& values, const VectorXd& variances,
                  const std::string& pseudodata) {
  auto t_start = Clock::now();
  auto& ps = model_->parameters;
  ps.reset_state();
  fit_hessian_valid_ = false;
  fit_hessian_.resize(0, 0);
  const bool blinded = fit == 0 || (fit >= 1 && o_.toys_data_mode == "observed");
  VectorXd x = ps.x_default;

  // defaultassign: β⁰ (and the stored β) back to their defaults on every shard after a toy moved them.
  if (beta_state_changed_) {
    fitter_->set_beta_centres(cpu().default_beta_centres());
    beta_state_changed_ = false;
  }

  VectorXd nobs, varnobs;
  const bool chi2_like = model_->options.likelihood != DataLikelihood::poisson;
  if (fit == -1) {
    auto& c = cpu();
    c.expected_yields(xi(x), 0, input_->nbins, CpuShardEvaluator::BetaMode::stored, &nobs);
    if (chi2_like) varnobs = nobs;
  } else if (fit == 0) {
    nobs = values;
    // DECISIONS.md: the chi2 fits use the input's variances when it provides them, else n.
    if (chi2_like) varnobs = variances.size() ? variances : nobs;
  } else {
    throw_toy(values, variances, nobs, varnobs);
    if (o_.toys_randomize_parameters) randomize_start(x);
  }
  VectorXd x_unrandomized = ps.x_default;
  check_observed(*model_, nobs, group_name);
  fitter_->set_observed(nobs, varnobs);

  auto g = result::create_group(out_->root(), group_name, "result");
  result::set_attr(g, "fit_index", fit);
  if (!pseudodata.empty()) result::set_attr(g, "pseudodata", pseudodata);
  result::set_attr_u8(g, "blinded", blinded && !o_.prefit_only);
  const bool dofit = fit >= 0 && !o_.no_fit && !o_.prefit_only;
  result::set_attr_u8(g, "fitted", dofit);
  mappings_ = result::Group();
  base_mapping_ = result::Group();
  base_channels_ = result::Group();
  channel_groups_.clear();

  VectorXd prefit_var = prefit_variances(*model_);
  result::write_hist(g, "parms_prefit", {shared("parms")}, x.data(), prefit_var.data());
  MatrixXd prefit_cov = prefit_covariance(*model_);
  if (o_.save_hists) {
    save_observed_hists(g, nobs, varnobs);
    save_hists(g, x, prefit_cov, true);
  }
  const double t_prefit = seconds_since(t_start);
  double t_fit = t_prefit;
  auto cpp = result::create_group(g, "_cpp", "");
  if (!o_.prefit_only) {
    ps.blinding_enabled = blinded && ps.blinding_available;
    // --externalPostfit: the loaded values are the start point (and, without a fit, the result).
    bool external_cov = false;
    MatrixXd cov_external;
    if (external_) {
      cov_external = prefit_cov;
      for (int64_t i = 0; i < ps.size(); ++i) {
        const int64_t j = external_index_[i];
        if (j < 0) continue;
        x(i) = x_unrandomized(i) = external_->x(j);
        if (external_->cov.size() == 0) continue;
        for (int64_t k = 0; k < ps.size(); ++k) {
          const int64_t l = external_index_[k];
          if (l >= 0) cov_external(i, k) = external_->cov(j, l);
          else if (k != i) cov_external(i, k) = cov_external(k, i) = 0.0;
        }
      }
      external_cov = external_->cov.size() > 0 && !dofit;
    }
    if (dofit) {
      // A start where the param model zeroes the only process of bins with data (Poisson NLL
      // infinite; e.g. --paramModel Mixture at mixing 1) is refused naming the cause (issue 10).
      check_start_point(*model_, nobs, xi(x), [&] {
        VectorXd nu;
        cpu().expected_yields(xi(x), 0, input_->nbins, CpuShardEvaluator::BetaMode::stored, &nu);
        return nu;
      });
      // --toysRandomizeParameters: the same toy is also fitted from the unrandomized start, so that
      // toys whose random start ends in another minimum are visible (user-guide.md "Toys"). That
      // fit runs first: the Hessian kept for the covariance must be the reported fit's.
      std::optional<double> nll_unrandomized;
      if (fit >= 1 && o_.toys_randomize_parameters) {
        const bool bb = cpu().has_bb();
        const VectorXd stored_beta = cpu().stored_beta();
        if (bb) fitter_->set_stored_beta(cpu().beta_centres());
        MinimizerResult mr0;
        const VectorXd x0 = minimize_full(x_unrandomized, false, &mr0);
        nll_unrandomized = fitter_->value(x0);
        if (bb) fitter_->set_stored_beta(stored_beta);
      }
      MinimizerResult mr;
      x = minimize_full(x, true, &mr);
      if (nll_unrandomized) {
        const double nll = fitter_->value(x);
        const bool other = std::abs(nll - *nll_unrandomized) > 1e-6;  // DECISIONS: NLL agrees to 1e-6
        result::write_scalar(cpp, "nllvalreduced_unrandomized_start", *nll_unrandomized);
        result::write_scalar_bool(cpp, "other_minimum_than_unrandomized_start", other);
        if (other) {
          ++toys_other_minimum_;
          log().warn("toy {}: the randomized start ends at NLL {} and the unrandomized start at {} (another minimum)",
                     fit, py_float(nll), py_float(*nll_unrandomized));
        }
      }
      if (bb_on_ && !o_.no_postfit_profile_bb) log().info("profile beta");
      const int64_t n = static_cast<int64_t>(mr.loss_history.size());
      result::write_hist(g, "epoch_loss", {Axis::integer("epoch", 0, n)}, mr.loss_history.data(), nullptr, "epoch loss");
      result::write_hist(g, "epoch_time", {Axis::integer("epoch", 0, n)}, mr.time_history.data(), nullptr, "epoch time");
      result::set_attr(cpp, "minimizer_method", mr.method);
      result::write_scalar_str(result::only_in(cpp, result::Layout::rabbit), "minimizer_method", mr.method);
      result::write_scalar(cpp, "minimizer_status", static_cast<int64_t>(mr.status));
      result::write_scalar_str(cpp, "minimizer_message", mr.message);
      result::write_scalar(cpp, "niter", mr.iterations);
      result::write_scalar(cpp, "nfev", mr.nfev);
      result::write_scalar(cpp, "nhev", mr.nhvp + mr.nhess);
      result::write_scalar_bool(cpp, "stopped_early", mr.stopped_early);
      result::write_scalar(cpp, "nrestarts", static_cast<int64_t>(mr.restarts));
      result::write_scalar_bool(cpp, "converged", mr.converged);
      result::write_scalar(cpp, "edm", mr.edm);
      result::write_scalar(cpp, "max_scaled_gradient", mr.max_scaled_grad);
      result::write_scalar(cpp, "newton_polish_steps", static_cast<int64_t>(mr.polish_steps));
      result::write_scalar_str(cpp, "stop_reason", mr.stop_reason);
      result::write_scalar_str(cpp, "certified_by", mr.certified_by);
    }
    t_fit = seconds_since(t_start);

    VectorXd var;
    MatrixXd cov = prefit_cov;
    bool have_cov = false;
    if (external_cov) {
      // likelihood.md §8.1: no fit and a loaded covariance: the Hessian step is skipped.
      cov = cov_external;
      have_cov = true;
      var = cov.diagonal();
      result::write_hist(g, "cov", {shared("parms_x"), shared("parms_y")}, cov.data(), nullptr);
    } else {
      postfit_uncertainties(g, x, var, cov, have_cov);
    }
    // Includes each external term's const (rabbit PR #147); ndfsat does not count external terms.
    const double nll = fitter_->value(x);
    const int64_t ndfsat = input_->nbins - ps.npoi - ps.npou - input_->nsystnoconstraint;
    log().info("Saturated chi2:");
    log().info("    ndof: {}", ndfsat);
    log().info("    2*deltaNLL: {}", std::round(200.0 * nll) / 100.0);
    log().info("    p-value: {}%", std::round(10000.0 * postfit::chi2_survival(2.0 * nll, static_cast<double>(ndfsat))) / 100.0);
    result::write_scalar(g, "nllvalreduced", nll);
    result::write_scalar(g, "ndfsat", ndfsat);
    result::write_scalar_bool(g, "postfit_profile", !o_.no_postfit_profile_bb);
    if (o_.full_nll) {
      // value(x) holds the external terms' const; their lognorm is full-NLL only (rabbit PR #147,
      // docs/output-format.md).
      double full = constraint_full_nll_constant(ps) + model_->global_terms->x_terms_full_constant() +
                    (fitter_->value(x) - 0.0);
      // The shards' data and BB constants: full_value − value per shard.
      VectorXd xis = xi(x);
      bool all_cpu = true;
      for (const auto& s : fitter_->shards()) all_cpu = all_cpu && dynamic_cast<CpuShardEvaluator*>(s.get());
      if (all_cpu) {
        for (const auto& s : fitter_->shards()) {
          auto& cs = dynamic_cast<CpuShardEvaluator&>(*s);
          full += cs.full_value(xis) - cs.value(xis);
        }
      } else {
        full += cpu().full_value(xis) - cpu().value(xis);  // the same constants over all bins, on the host
      }
      log().info("2*deltaNLL(full): {}", py_float(full));
      result::write_scalar(g, "nllvalfull", full);
    }
    result::write_hist(g, "parms", {shared("parms")}, x.data(), var.data());
    // _cpp/poi_mu: mu = x² (or x), linearised variance.
    std::vector<std::string> pois(ps.names.begin(), ps.names.begin() + ps.npoi);
    VectorXd mu(ps.npoi), muvar(ps.npoi);
    for (int64_t i = 0; i < ps.npoi; ++i) {
      mu(i) = ps.squared_pois ? x(i) * x(i) : x(i);
      muvar(i) = ps.squared_pois ? 4.0 * x(i) * x(i) * var(i) : var(i);
    }
    result::write_hist(cpp, "poi_mu", {Axis::strcat("pois", pois)}, mu.data(), muvar.data());
    if (o_.scan || o_.contour_scan) {
      if (!have_cov && (o_.contour_scan || !o_.scan_range_use_prefit))
        throw OptionError("--scan/--contourScan need the covariance (not available with --noHessian)");
      write_scans(g, x, cov);
    }
    if (o_.save_hists) save_hists(g, x, cov, false);
  }
  const double t_post = seconds_since(t_start);
  result::write_scalar(cpp, "time_prefit_s", t_prefit);
  result::write_scalar(cpp, "time_fit_s", t_fit - t_prefit);
  result::write_scalar(cpp, "time_postfit_s", t_post - t_fit);
  log().debug("For fit {}:", fit);
  log().debug("{} seconds for prefit", t_prefit);
  log().debug("{} seconds for fit", t_fit - t_prefit);
  log().debug("{} seconds for postfit", t_post - t_fit);
  mappings_ = result::Group();
  base_mapping_ = result::Group();
  base_channels_ = result::Group();
  channel_groups_.clear();
}

void Run::execute() {
  auto t_start = Clock::now();
  load();
  check_memory();
  out_ = std::make_unique<result::ResultWriter>(o_.output_file(),
                                                o_.output_format == "plain" ? result::Layout::plain : result::Layout::rabbit);
  write_meta();
  out_->flush();
  log().debug("{} seconds initialization time", seconds_since(t_start));

  // Data sets: the observed data, or the selected pseudodata columns (in file order).
  struct DataSet {
    std::string name;
    VectorXd values, variances;
  };
  std::vector<DataSet> datasets;
  if (o_.pseudo_data) {
    std::vector<int64_t> cols;
    if (o_.pseudo_data->empty()) {
      for (size_t i = 0; i < input_->pseudodatanames.size(); ++i) cols.push_back(static_cast<int64_t>(i));
    } else {
      for (const auto& n : *o_.pseudo_data) cols.push_back(input_->pseudodata_index(n));
      std::sort(cols.begin(), cols.end());
    }
    if (cols.empty()) throw InputError(o_.filename + ": --pseudoData given but the input has no pseudodata sets");
    for (size_t j = 0; j < cols.size(); ++j) {
      DataSet d{input_->pseudodatanames[cols[j]], input_->pseudodata.col(cols[j]), VectorXd()};
      if (input_->pseudodatavar) d.variances = input_->pseudodatavar->col(cols[j]);
      datasets.push_back(d);
    }
  } else {
    datasets.push_back({"", input_->data_obs, input_->data_var ? *input_->data_var : VectorXd()});
  }
  rng_.seed(static_cast<uint64_t>(o_.seed));
  {
    std::seed_seq start_seed{static_cast<uint64_t>(o_.seed), uint64_t{0x5eed0001}};
    start_rng_.seed(start_seed);
  }
  std::vector<int64_t> fits;
  for (auto t : o_.toys) {
    if (t <= 0) fits.push_back(t);
    for (int64_t k = 1; k <= t; ++k) fits.push_back(k);
  }
  for (auto fit : fits) {
    for (const auto& d : datasets) {
      std::string name = "results";
      if (fit == -1) name += "_asimov";
      if (fit >= 1) name += "_toy" + std::to_string(fit);
      if (!d.name.empty()) name += "_" + d.name;
      run_one(fit, name, d.values, d.variances, d.name);
      out_->flush();  // each fit's group is written when complete, as upstream does
    }
  }
  if (o_.toys_randomize_parameters) {
    int64_t ntoys = 0;
    for (auto f : fits) ntoys += f >= 1 ? 1 : 0;
    ntoys *= static_cast<int64_t>(datasets.size());
    if (ntoys > 0)
      log().info("--toysRandomizeParameters: {} of {} toy fits ended at another minimum than from the unrandomized "
                 "start (_cpp/other_minimum_than_unrandomized_start)",
                 toys_other_minimum_, ntoys);
  }
  out_->commit();
  std::cout << "Results written in file " << out_->final_path() << std::endl;
  log().info("{} seconds total time", seconds_since(t_start));
}

}  // namespace

void run_fit(const FitOptions& options) {
  set_verbosity(options.verbose);
  if (options.no_color_logger) {
    // Re-create the sinks without colour: the pattern keeps the level name plain.
    log().set_pattern("%L %H:%M:%S.%e %v");
  }
  for (const auto& w : options.warnings) log().warn("{}", w);
  Run run(options);
  run.execute();
}

int rabbit_fit_main(int argc, const char* const* argv) {
  try {
    FitOptions options = parse_fit_options(argc, argv);
    run_fit(options);
    return 0;
  } catch (const HelpRequested& h) {
    std::cout << h.text;
    return 0;
  } catch (const Error& e) {
    std::string msg = e.what();
    std::replace(msg.begin(), msg.end(), '\n', ' ');
    std::cerr << "rabbit_fit: error: " << msg << std::endl;
    return static_cast<int>(e.code());
  } catch (const std::exception& e) {
    std::string msg = e.what();
    std::replace(msg.begin(), msg.end(), '\n', ' ');
    std::cerr << "rabbit_fit: error: " << msg << std::endl;
    return 1;
  }
}

}  // namespace rabbit::cli
