// ResultLayoutWriter's per-fit histograms (docs/output-format.md "Members of a result group"): for each
// mapping of -m, the observed data and the prefit/postfit expectations, per output channel.
#include <Eigen/LU>
#include <algorithm>
#include <cmath>
#include <iostream>

#include "rabbit/core/cpu_budget.hpp"
#include "rabbit/core/logging.hpp"
#include "rabbit/postfit/histograms.hpp"
#include "rabbit/postfit/uncertainties.hpp"
#include "result_layout_writer.hpp"

namespace rabbit::cli {

using Eigen::MatrixXd;
using Eigen::VectorXd;
using result::Axis;
using RowMajorMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

namespace {

/// Counts given on the observed bins (values, variances, optionally a dense covariance) carried
/// through a mapping: y = f(d), Var(y) and Cov(y) through A = ∂y/∂d, as rabbit's get_data does; the
/// identity leaves them as they are.
struct MappedCounts {
  VectorXd values, variances;
  MatrixXd cov;  // only with a dense input covariance
};

MappedCounts map_counts(const postfit::Mapping& mapping, int64_t nbinsfull, const VectorXd& values,
                        const VectorXd& variances, const MatrixXd* cov) {
  if (mapping.is_identity()) return {values, variances, cov ? *cov : MatrixXd()};
  const int64_t nobs = values.size(), nyo = mapping.observed_size();
  VectorXd full = VectorXd::Zero(nbinsfull);
  full.head(nobs) = values;
  const postfit::MappingJacobian Ao = mapping.jacobian(full).topLeftCorner(nyo, nobs);
  MappedCounts out;
  out.values = mapping.apply(full).head(nyo);
  if (cov) {
    out.cov = MatrixXd(Ao * *cov) * Ao.transpose();
    out.variances = out.cov.diagonal();
  } else {
    out.variances = Ao.cwiseAbs2() * variances;
  }
  return out;
}

}  // namespace

void ResultLayoutWriter::save_observed_hists(result::Group group, const VectorXd& nobs,
                                             const VectorXd& varnobs) {
  const auto& input = *ctx_.input;
  const DataLikelihood lik = ctx_.model->options.likelihood;
  mapping_groups(group);
  MatrixXd data_cov;
  if (input.data_cov_inv) data_cov = input.data_cov_inv->inverse();
  // Over the observed bins: the input data and the fit's data, with their variances.
  const VectorXd& d = input.data_obs;
  VectorXd dv = input.data_var ? *input.data_var : d;
  if (input.data_cov_inv) dv = data_cov.diagonal();
  VectorXd nv = nobs;
  if (lik == DataLikelihood::chisq && varnobs.size()) nv = varnobs;
  if (lik == DataLikelihood::covariance && input.data_cov_inv) nv = data_cov.diagonal();
  const MatrixXd* cov = input.data_cov_inv ? &data_cov : nullptr;
  // The fit's counts carry the data covariance only in a covariance fit (rabbit passes its fitter's
  // data_cov_inv, set for --covarianceFit alone, None otherwise); else their variances nv, through
  // the mapping's Jacobian.
  const MatrixXd* nobs_cov = lik == DataLikelihood::covariance ? cov : nullptr;
  for (auto& m : mappings_) {
    const postfit::Mapping& mapping = *m.mapping;
    if (!mapping.has_data()) continue;
    std::cout << "Save data histogram for " << mapping.key() << std::endl;
    const MappedCounts data = map_counts(mapping, input.nbinsfull, d, dv, cov);
    const MappedCounts fit_data = map_counts(mapping, input.nbinsfull, nobs, nv, nobs_cov);
    const auto& channels = mapping.channels();
    for (size_t c = 0; c < channels.size(); ++c) {
      const auto& ch = channels[c];
      if (ch.masked) continue;
      const std::vector<Axis> axes = channel_axes(ch);
      const int64_t nb = ch.nbins();
      VectorXd y = data.values.segment(ch.start, nb), yv = data.variances.segment(ch.start, nb);
      result::write_hist(m.channel_groups[c], "hist_data_obs", axes, y.data(), yv.data(),
                         "observed number of events in data");
      VectorXd n = fit_data.values.segment(ch.start, nb), n_var = fit_data.variances.segment(ch.start, nb);
      result::write_hist(m.channel_groups[c], "hist_nobs", axes, n.data(), n_var.data(),
                         "observed number of events for fit");
      if (cov) {
        // Renamed copies, no longer the shared axis they came from (the one-bin "yield" axis is shared).
        std::vector<Axis> axes2;
        for (const char* suffix : {"_x", "_y"})
          for (auto a : axes) {
            a.name += suffix;
            a.shared_id.clear();
            axes2.push_back(a);
          }
        RowMajorMatrix block = data.cov.block(ch.start, ch.start, nb, nb);
        result::write_hist(m.channel_groups[c], "cov_data_obs", axes2, block.data(), nullptr,
                           "covariance of observed number of events in data");
        if (lik == DataLikelihood::covariance)
          result::write_hist(m.channel_groups[c], "cov_nobs_obs", axes2, block.data(), nullptr,
                             "covariance of observed number of events in data");
      }
    }
  }
}

void ResultLayoutWriter::save_hists(result::Group group, const VectorXd& x, const MatrixXd& cov,
                                    bool prefit) {
  mapping_groups(group);
  for (auto& m : mappings_) save_mapping_hists(m, x, cov, prefit);
}

void ResultLayoutWriter::save_mapping_hists(MappingOutput& m, const VectorXd& x, const MatrixXd& cov,
                                            bool prefit) {
  const auto& o = ctx_.options;
  const auto& input = *ctx_.input;
  const postfit::Mapping& mapping = *m.mapping;
  const std::string& key = mapping.key();
  auto& c = ctx_.yield_model();
  log().info("Save inclusive histogram for {}", key);
  postfit::HistogramRequest req;
  // --noPostfitProfileBB: the postfit histograms are evaluated like the prefit ones (β not
  // profiled, H_ββ of L_β alone), with the postfit parameters and covariance.
  req.prefit = prefit || o.no_postfit_profile_bb;
  req.errors = o.compute_hist_errors;
  req.covariance = o.compute_hist_cov;
  // rabbit's skip_per_process: the Ratio family has no per-process histograms.
  req.per_process = o.save_hists_per_process && mapping.has_per_process();
  // only for the per-process histograms they belong to, as rabbit (docs/user-guide.md)
  req.errors_per_process = o.compute_hist_errors_per_process && req.per_process;
  req.chi2 = !o.no_chi2 && mapping.has_data();
  req.global_impacts = o.compute_hist_impacts;
  req.gaussian_global_impacts = o.compute_hist_gaussian_impacts;
  req.threads = cpus::threads_or_detected(o.n_threads);
  auto h = postfit::compute_histograms(*ctx_.model, c, *ctx_.fitter, mapping, x, cov, req);
  // rabbit writes the variances whenever it propagates them, for the covariance (its diagonal) or the
  // impacts as for --computeHistErrors; without any of these, plain double storage
  // (docs/output-format.md "Histogram uncertainties").
  const bool write_var = req.errors || req.covariance || req.global_impacts || req.gaussian_global_impacts;
  // docs/output-format.md "Global impacts on histogram bins": name suffix, per source, grouped.
  struct HistImpacts {
    std::string suffix;
    RowMajorMatrix per_source, grouped;
  };
  std::vector<HistImpacts> kinds;
  auto grouped = [&](const VectorXd& bb_sq, const MatrixXd& bb_proc_sq, const VectorXd* stat_sq) {
    const bool bb = bb_sq.size() > 0;
    return postfit::global_grouped_impacts(h.inclusive_var, h.impacts, ctx_.layout, bb ? &bb_sq : nullptr,
                                           bb && ctx_.bb_full ? &bb_proc_sq : nullptr, stat_sq);
  };
  if (req.global_impacts)
    kinds.push_back({"_global_impacts", h.impacts, grouped(h.impacts_bb_sq, h.impacts_bb_proc_sq, nullptr)});
  if (req.gaussian_global_impacts)
    kinds.push_back({"_gaussian_global_impacts", h.impacts,
                     grouped(h.gaussian_bb_sq, h.gaussian_bb_proc_sq, &h.gaussian_stat_sq)});
  const std::string stage = prefit ? "prefit" : "postfit";
  const auto& channels = mapping.channels();
  for (size_t ci = 0; ci < channels.size(); ++ci) {
    const auto& ch = channels[ci];
    const std::vector<Axis> axes = channel_axes(ch);
    const int64_t nb = ch.nbins();
    VectorXd y = h.inclusive.segment(ch.start, nb);
    VectorXd v = write_var ? VectorXd(h.inclusive_var.segment(ch.start, nb)) : VectorXd();
    result::write_hist(m.channel_groups[ci], "hist_" + stage + "_inclusive", axes, y.data(),
                       write_var ? v.data() : nullptr,
                       stage + " expected number of events, for all processes combined, ", ch.flow);
    for (const auto& k : kinds) {
      // The channel's bins, then the sources (rabbit's global_impact_axis, grouped_global_impact_axis).
      const std::string name = "hist_" + stage + "_inclusive" + k.suffix;
      std::vector<Axis> ia = axes, ga = axes;
      ia.push_back(shared("impacts"));
      ga.push_back(shared("global_impacts_grouped"));
      result::write_hist(m.channel_groups[ci], name, ia, k.per_source.row(ch.start).data(), nullptr,
                         stage + " expected number of events, for all processes combined, ", ch.flow);
      result::write_hist(m.channel_groups[ci], name + "_grouped", ga, k.grouped.row(ch.start).data(), nullptr,
                         stage + " expected number of events, for all processes combined, ", ch.flow);
    }
    if (req.per_process) {
      std::vector<Axis> paxes = axes;
      std::vector<std::string> procs = input.procs;
      if (!mapping.process_selection().empty()) {
        procs.clear();
        for (int64_t p : mapping.process_selection()) procs.push_back(input.procs[p]);
      }
      paxes.push_back(Axis::strcat("processes", procs));
      RowMajorMatrix pp = h.per_process.middleRows(ch.start, nb);
      RowMajorMatrix pv;
      if (req.errors_per_process) pv = h.per_process_var.middleRows(ch.start, nb);
      result::write_hist(m.channel_groups[ci], "hist_" + stage, paxes, pp.data(),
                         req.errors_per_process ? pv.data() : nullptr, stage + " expected number of events, ",
                         ch.flow);
    }
  }
  if (req.per_process) log().info("Save processes histogram for {}", key);
  if (o.compute_variations) {
    // docs/output-format.md "Histogram uncertainties": y ∓ J_y[:, p]·sqrt(C_pp) for every parameter, J_y =
    // ∂y/∂ν J at fixed β (the stored β prefit, β̂ postfit); prefit C = diag(var_prefit) with unconstrained
    // sigma 1.
    const auto& ps = ctx_.model->parameters;
    const int64_t npar = ps.size(), nbf = input.nbinsfull;
    VectorXd d1;
    VectorXd xis = ctx_.xi(x, &d1);
    VectorXd sig(npar);
    for (int64_t p = 0; p < npar; ++p) {
      double v = cov(p, p);
      if (prefit && !(ps.constraint_weights(p) > 0.0)) v = 1.0;
      sig(p) = std::sqrt(std::max(v, 0.0));
    }
    const VectorXd stored = c.stored_beta();
    if (!prefit && ctx_.bb_on && !o.no_postfit_profile_bb) {
      VectorXd b = stored;
      VectorXd bhat = ctx_.fitter->profiled_beta(x);
      b.head(bhat.size()) = bhat;
      c.set_stored_beta(b);
    }
    MatrixXd J;
    if (mapping.needs_processes()) {
      // A mapping of the per-process yields: ∂y/∂vec(N) · ∂vec(N)/∂x.
      VectorXd nu;
      MatrixXd N;
      c.expected_yields(xis, 0, nbf, YieldModel::BetaMode::stored, &nu, &N);
      // · diag(d1) in place: the per-process Jacobian (nbinsfull·nproc × npar) is not copied
      MatrixXd Jp = c.process_yield_jacobian(xis, 0, nbf, YieldModel::BetaMode::stored);
      Jp.array().rowwise() *= d1.transpose().array();
      J = mapping.jacobian_processes(N) * Jp;
    } else {
      J = c.yield_jacobian(xis, 0, nbf, YieldModel::BetaMode::stored);
      J.array().rowwise() *= d1.transpose().array();
      VectorXd nu;  // ∂y/∂ν is taken at ν (only a mapping other than the identity needs it)
      if (!mapping.is_identity()) c.expected_yields(xis, 0, nbf, YieldModel::BetaMode::stored, &nu);
      J = mapping.chain(nu, std::move(J));
    }
    if (ctx_.bb_on) c.set_stored_beta(stored);
    for (size_t ci = 0; ci < channels.size(); ++ci) {
      const auto& ch = channels[ci];
      std::vector<Axis> axes = channel_axes(ch);
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
      result::write_hist(
          m.channel_groups[ci], "hist_" + stage + "_inclusive_variations", axes, vals.data(), nullptr,
          stage + " expected number of events, for all processes combined, with variations, ", ch.flow);
    }
  }
  if (req.covariance) {
    const int64_t N = h.inclusive_cov.rows();
    RowMajorMatrix cv = h.inclusive_cov;
    result::write_hist(m.group, "hist_" + stage + "_inclusive_cov",
                       {Axis::integer("x", 0, N), Axis::integer("y", 0, N)}, cv.data(), nullptr,
                       stage + " expected number of events, for all processes combined,  covariance");
  }
  if (req.chi2) {
    log().info("Linear chi2:");
    log().info("    ndof: {}", h.ndf);
    // rabbit prints round(chi2): the value rounded half to even, as "{:.0f}" does; unlike an
    // integer cast it stays a number for any magnitude and prints "inf"/"nan" as such.
    log().info("    chi2/ndf = {:.0f}", h.chi2);
    log().info("    p-value: {}%",
               std::round(10000.0 * postfit::chi2_survival(h.chi2, static_cast<double>(h.ndf))) / 100.0);
    result::write_scalar(m.group, prefit ? "chi2_prefit" : "chi2", h.chi2);
    result::write_scalar(m.group, prefit ? "ndf_prefit" : "ndf", h.ndf);
  }
  if (!prefit && postfit_mapping_step_) postfit_mapping_step_(mapping, m.group, x);
}

}  // namespace rabbit::cli
