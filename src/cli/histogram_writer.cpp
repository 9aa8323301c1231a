// ResultLayoutWriter's per-fit histograms (docs/output-format.md "Members of a result group"): the observed
// data and the prefit/postfit expectations of BaseMapping, per channel.
#include <Eigen/LU>
#include <algorithm>
#include <cmath>
#include <iostream>

#include "rabbit/core/logging.hpp"
#include "rabbit/postfit/histograms.hpp"
#include "result_layout_writer.hpp"

namespace rabbit::cli {

using Eigen::MatrixXd;
using Eigen::VectorXd;
using result::Axis;
using RowMajorMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

void ResultLayoutWriter::save_observed_hists(result::Group group, const VectorXd& nobs,
                                             const VectorXd& varnobs) {
  const auto& input = *ctx_.input;
  const DataLikelihood lik = ctx_.model->options.likelihood;
  mapping_group(group);
  std::cout << "Save data histogram for BaseMapping" << std::endl;
  MatrixXd data_cov;
  if (input.data_cov_inv) data_cov = input.data_cov_inv->inverse();
  for (size_t c = 0; c < input.channels.size(); ++c) {
    const auto& ch = input.channels[c];
    if (ch.masked) continue;
    const std::vector<Axis> axes = channel_axes(c);
    const int64_t nb = ch.nbins();
    VectorXd d = input.data_obs.segment(ch.start, nb);
    VectorXd dv = input.data_var ? VectorXd(input.data_var->segment(ch.start, nb)) : d;
    if (input.data_cov_inv) dv = data_cov.diagonal().segment(ch.start, nb);
    result::write_hist(channel_groups_[c], "hist_data_obs", axes, d.data(), dv.data(),
                       "observed number of events in data");
    VectorXd n = nobs.segment(ch.start, nb);
    VectorXd nv = n;
    if (lik == DataLikelihood::chisq && varnobs.size()) nv = varnobs.segment(ch.start, nb);
    if (lik == DataLikelihood::covariance && input.data_cov_inv)
      nv = data_cov.diagonal().segment(ch.start, nb);
    result::write_hist(channel_groups_[c], "hist_nobs", axes, n.data(), nv.data(),
                       "observed number of events for fit");
    if (input.data_cov_inv) {
      std::vector<Axis> axes2;
      for (auto a : axes) {
        a.name += "_x";
        axes2.push_back(a);
      }
      for (auto a : axes) {
        a.name += "_y";
        axes2.push_back(a);
      }
      RowMajorMatrix block = data_cov.block(ch.start, ch.start, nb, nb);
      result::write_hist(channel_groups_[c], "cov_data_obs", axes2, block.data(), nullptr,
                         "covariance of observed number of events in data");
      if (lik == DataLikelihood::covariance)
        result::write_hist(channel_groups_[c], "cov_nobs_obs", axes2, block.data(), nullptr,
                           "covariance of observed number of events in data");
    }
  }
}

void ResultLayoutWriter::save_hists(result::Group group, const VectorXd& x, const MatrixXd& cov,
                                    bool prefit) {
  const auto& o = ctx_.options;
  const auto& input = *ctx_.input;
  mapping_group(group);
  auto& c = ctx_.yield_model();
  log().info("Save inclusive histogram for BaseMapping");
  postfit::HistogramRequest req;
  // --noPostfitProfileBB: the postfit histograms are evaluated like the prefit ones (β not
  // profiled, H_ββ of L_β alone), with the postfit parameters and covariance.
  req.prefit = prefit || o.no_postfit_profile_bb;
  req.errors = o.compute_hist_errors;
  req.covariance = o.compute_hist_cov;
  req.per_process = o.save_hists_per_process;
  req.errors_per_process = o.compute_hist_errors_per_process;
  req.chi2 = !o.no_chi2;
  auto h = postfit::compute_histograms(*ctx_.model, c, *ctx_.fitter, x, cov, req);
  const std::string stage = prefit ? "prefit" : "postfit";
  for (size_t ci = 0; ci < input.channels.size(); ++ci) {
    const auto& ch = input.channels[ci];
    const std::vector<Axis> axes = channel_axes(ci);
    const int64_t nb = ch.nbins();
    VectorXd y = h.inclusive.segment(ch.start, nb);
    VectorXd v = req.errors ? VectorXd(h.inclusive_var.segment(ch.start, nb)) : VectorXd();
    result::write_hist(channel_groups_[ci], "hist_" + stage + "_inclusive", axes, y.data(),
                       req.errors ? v.data() : nullptr,
                       stage + " expected number of events, for all processes combined, ", ch.flow);
    if (req.per_process) {
      std::vector<Axis> paxes = axes;
      paxes.push_back(Axis::strcat("processes", input.procs));
      RowMajorMatrix pp = h.per_process.middleRows(ch.start, nb);
      RowMajorMatrix pv;
      if (req.errors_per_process) pv = h.per_process_var.middleRows(ch.start, nb);
      result::write_hist(channel_groups_[ci], "hist_" + stage, paxes, pp.data(),
                         req.errors_per_process ? pv.data() : nullptr, stage + " expected number of events, ",
                         ch.flow);
    }
  }
  if (req.per_process) log().info("Save processes histogram for BaseMapping");
  if (o.compute_variations) {
    // docs/output-format.md "Histogram uncertainties": y ∓ J[:, p]·sqrt(C_pp) for every parameter, J at fixed
    // β (the stored β prefit, β̂ postfit); prefit C = diag(var_prefit) with unconstrained sigma 1.
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
    MatrixXd J = c.yield_jacobian(xis, 0, nbf, YieldModel::BetaMode::stored) * d1.asDiagonal();
    if (ctx_.bb_on) c.set_stored_beta(stored);
    for (size_t ci = 0; ci < input.channels.size(); ++ci) {
      const auto& ch = input.channels[ci];
      std::vector<Axis> axes = channel_axes(ci);
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
          channel_groups_[ci], "hist_" + stage + "_inclusive_variations", axes, vals.data(), nullptr,
          stage + " expected number of events, for all processes combined, with variations, ", ch.flow);
    }
  }
  if (req.covariance) {
    const int64_t N = h.inclusive_cov.rows();
    RowMajorMatrix cv = h.inclusive_cov;
    result::write_hist(base_mapping_, "hist_" + stage + "_inclusive_cov",
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
    result::write_scalar(base_mapping_, prefit ? "chi2_prefit" : "chi2", h.chi2);
    result::write_scalar(base_mapping_, prefit ? "ndf_prefit" : "ndf", h.ndf);
  }
}

}  // namespace rabbit::cli
