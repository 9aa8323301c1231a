#include "fit_context.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iostream>

#include "rabbit/cli/validate_run.hpp"
#include "rabbit/core/cpu_budget.hpp"
#include "rabbit/core/error.hpp"
#include "rabbit/core/logging.hpp"
#include "rabbit/core/memory_limit.hpp"
#include "rabbit/fit/make_fitter.hpp"
#include "rabbit/model/regularizer.hpp"
#include "rabbit/postfit/histograms.hpp"
#include "rabbit/postfit/regularizer_mapping.hpp"

namespace rabbit::cli {

std::string py_float(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  std::string s = fmt::format("{}", v);
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

Eigen::VectorXd FitContext::xi(const Eigen::VectorXd& x, Eigen::VectorXd* d1) const {
  Eigen::VectorXd out, t1, t2;
  model->parameters.transform(x, out, t1, t2);
  if (d1) *d1 = t1;
  return out;
}

void arm_regularizers(FitContext& ctx, const Eigen::VectorXd& x) {
  if (ctx.model->regularizers.empty()) return;
  const Eigen::VectorXd xi_start = ctx.xi(x);
  Eigen::VectorXd nu_full;
  ctx.yield_model().expected_yields(xi_start, 0, ctx.input->nbinsfull, YieldModel::BetaMode::stored,
                                    &nu_full);
  for (auto& reg : ctx.model->regularizers)
    reg->set_expectations(xi_start, reg->needs_observables() ? &nu_full : nullptr);
}

void read_input(FitContext& ctx) {
  const auto& o = ctx.options;
  ctx.input = std::make_shared<FitInputData>(
      run_input_reader() ? run_input_reader()(o)
                         : read_fit_input(o.filename, {.keep_float32 = o.tensor_precision == "file"}));
  // The front door, before the model or any shard is built (docs/user-guide.md "Rules across options").
  validate_run(o, *ctx.input, known_capabilities());
  for (const auto& ch : ctx.input->channels)
    std::cout << ch.name << " masked=" << (ch.masked ? "True" : "False")
              << " flow=" << (ch.flow ? "True" : "False") << " bins=" << ch.nbins() << std::endl;
  if (o.pseudo_data) std::cout << "Initialize pseudodata" << std::endl;
}

ModelOptions run_model_options(const FitOptions& o) {
  ModelOptions mo = o.model;
  bool any_blinded = false;
  for (auto t : o.toys)
    if (t == 0 || (t >= 1 && o.toys_data_mode == "observed")) any_blinded = true;
  mo.blinding_active = any_blinded && !o.prefit_only;
  // -r reads the postfit mappings (docs/model.md "The regularisation term").
  mo.regularizer_mapping = postfit::regularizer_mapping;
  return mo;
}

void build_run_model(FitContext& ctx) {
  ctx.model = build_model(ctx.input, run_model_options(ctx.options));
}

RunInputReader& run_input_reader() {
  static RunInputReader reader;
  return reader;
}

RunFitterFactory& run_fitter_factory() {
  static RunFitterFactory factory;
  return factory;
}

void make_run_fitter(FitContext& ctx) {
  const auto& o = ctx.options;
  if (run_fitter_factory() && (ctx.fitter = run_fitter_factory()(ctx))) return;
  FitterOptions fo;
  fo.backend = parse_backend(o.backend);
  fo.n_devices = static_cast<int>(o.n_devices);
  for (auto d : o.devices) fo.devices.push_back(static_cast<int>(d));
  fo.hvp_batch = o.hvp_batch;
  fo.threads = static_cast<int>(o.n_threads);
  ctx.fitter = make_fitter(ctx.model, fo);
  ctx.fitter->set_hvp_batch(o.hvp_batch);
}

void describe_layout(FitContext& ctx) {
  const auto& ps = ctx.model->parameters;
  const auto& input = *ctx.input;
  const YieldModel* c = ctx.fitter->shards().front()->yield_model();
  ctx.bb_on = c ? c->has_bb() : ctx.options.model.bin_by_bin_stat;
  ctx.bb_full = c ? c->bb_full() : ctx.options.model.bb_mode == BBMode::full;

  auto& layout = ctx.layout;
  const int64_t off = ps.npoi + ps.npou;
  for (int64_t i = 0; i < ps.npoi; ++i) {
    layout.reported.push_back(i);
    ctx.reported_names.push_back(ps.names[i]);
  }
  for (auto k : input.noiidxs) {
    layout.reported.push_back(off + k);
    ctx.reported_names.push_back(ps.names[off + k]);
  }
  for (size_t g = 0; g < input.systgroups.size(); ++g) {
    layout.group_names.push_back(input.systgroups[g]);
    std::vector<int64_t> members;
    for (auto k : input.systgroupidxs[g]) members.push_back(off + k);
    layout.groups.push_back(members);
  }
  layout.nstat = off + input.nsystnoconstraint;
  layout.floating = ps.floating_indices();
  ctx.trad_groups = layout.group_names;
  ctx.trad_groups.push_back("stat");
  if (ctx.bb_on) ctx.trad_groups.push_back("binByBinStat");
  ctx.glob_groups = layout.group_names;
  ctx.glob_groups.push_back("stat");
  if (ctx.bb_on) {
    ctx.glob_groups.push_back("binByBinStat");
    if (ctx.bb_full)
      for (const auto& p : input.procs) ctx.glob_groups.push_back("binByBinStat" + p);
  }
}

void check_memory(const FitContext& ctx) {
  const auto& o = ctx.options;
  // The dense postfit matrices: Hessian, its β-fixed twin, covariance, Cholesky factor and inverse
  // work arrays (about 5 npar² doubles), histogram Jacobians and covariances.
  const double npar = static_cast<double>(ctx.model->parameters.size());
  const double nbf = static_cast<double>(ctx.input->nbinsfull);
  // The prefit covariance and its postfit copy are dense npar x npar under --noHessian too.
  double need = 2.0 * npar * npar * 8.0;
  std::string what = "prefit covariance";
  if (!o.no_hessian && !o.prefit_only) {
    need += 5.0 * npar * npar * 8.0;
    what += ", Hessian and covariance";
  }
  if (o.save_hists && (o.compute_hist_errors || o.compute_hist_cov || !o.no_chi2)) {
    need += 2.0 * nbf * npar * 8.0;
    what += ", histogram Jacobian";
  }
  if (o.save_hists && (o.compute_hist_cov || !o.no_chi2)) {
    need += 2.0 * nbf * nbf * 8.0;
    what += ", histogram covariance";
  }
  if (o.save_hists && o.save_hists_per_process && o.compute_hist_errors_per_process) {
    // The BaseMapping's per-process Jacobian in pieces of bins (src/postfit/histograms.cpp), another
    // mapping's whole.
    const auto piece =
        static_cast<double>(postfit::per_process_piece_bins(cpus::threads_or_detected(o.n_threads)));
    need += (o.mappings.empty() ? std::min(nbf, piece) : nbf) * static_cast<double>(ctx.input->nproc) * npar *
            8.0;
  }
  // The real limit: ulimit -v, the cgroup of a slurm job, MemAvailable (rabbit/core/memory_limit.hpp).
  const memory::Headroom avail = memory::available();
  log().debug("postfit memory estimate {} ({}), available {} under {}", memory::gib(need), what,
              memory::gib(avail.bytes), avail.source);
  if (!avail.source.empty() && need > avail.bytes)
    throw ResourceError(
        fmt::format("the requested steps ({}) need about {} but only {} of memory are "
                    "available under {}",
                    what, memory::gib(need), memory::gib(avail.bytes), avail.source));
}

}  // namespace rabbit::cli
