// The rabbit_fit run (docs/architecture.md, "The rabbit_fit run"): load, prefit outputs, the fits
// in the order of -t, postfit quantities, the result file. This file is the sequence; each step
// lives in its own unit: fit_context (load), fit_session (minimisation policy), toy_generator,
// external_postfit, postfit_steps and impacts, refit_impacts, scan_writer, result_layout_writer (the file).
#include "rabbit/cli/run_fit.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <memory>
#include <optional>

#include "data_sets.hpp"
#include "external_postfit.hpp"
#include "fit_context.hpp"
#include "fit_session.hpp"
#include "l_curve_steps.hpp"
#include "mpi_run.hpp"
#include "postfit_steps.hpp"
#include "rabbit/core/error.hpp"
#include "rabbit/core/logging.hpp"
#include "rabbit/core/memory_limit.hpp"
#include "rabbit/core/termination.hpp"
#include "refit_impacts.hpp"
#include "result_layout_writer.hpp"
#include "saturated_projection_tests.hpp"
#include "scan_writer.hpp"
#include "toy_generator.hpp"

namespace rabbit::cli {
namespace {

using Eigen::MatrixXd;
using Eigen::VectorXd;

class Run {
 public:
  explicit Run(const FitOptions& o) : o_(o), ctx_(o) {}
  void execute();

 private:
  void load();
  void run_one(int64_t fit, const std::string& group_name, const DataSet& data);
  void observed_for(int64_t fit, const DataSet& data, VectorXd& x, VectorXd& nobs, VectorXd& varnobs);
  VectorXd minimize_fit(int64_t fit_index, const VectorXd& nobs, VectorXd x, const VectorXd& x_unrandomized,
                        result::Group g, result::Group cpp);

  const FitOptions& o_;
  FitContext ctx_;
  std::optional<ExternalPostfit> external_;
  std::unique_ptr<FitSession> session_;
  std::unique_ptr<ToyGenerator> toys_;
  std::unique_ptr<ResultLayoutWriter> out_;
  std::unique_ptr<SaturatedProjectionTests> saturated_;  // --computeSaturatedProjectionTests
  int64_t toys_other_minimum_ = 0;  // --toysRandomizeParameters: toys ending in another minimum
};

void Run::load() {
  auto t0 = Clock::now();
  {
    memory::AllocationScope scope("the input tensor of " + o_.filename);
    read_input(ctx_);
  }
  log().debug("{} seconds to read the input", seconds_since(t0));
  memory::AllocationScope scope("the model and its shards");
  build_run_model(ctx_);
  if (o_.external_postfit) external_.emplace(o_, ctx_.model->parameters.names);
  make_run_fitter(ctx_);
  describe_layout(ctx_);
  check_refit_impacts(ctx_);
  session_ = std::make_unique<FitSession>(ctx_);
  toys_ = std::make_unique<ToyGenerator>(ctx_);
}

// What fit `fit` sees as data: the Asimov expectation (-1), the data set (0) or a toy (≥ 1, which
// may also randomise the start x).
void Run::observed_for(int64_t fit, const DataSet& data, VectorXd& x, VectorXd& nobs, VectorXd& varnobs) {
  const bool chi2_like = ctx_.model->options.likelihood != DataLikelihood::poisson;
  if (fit == -1) {
    ctx_.yield_model().expected_yields(ctx_.xi(x), 0, ctx_.input->nbins, YieldModel::BetaMode::stored, &nobs);
    if (chi2_like) varnobs = nobs;
  } else if (fit == 0) {
    nobs = data.values;
    // docs/differences-from-rabbit.md: the chi2 fits use the input's variances when it provides them, else n.
    if (chi2_like) varnobs = data.variances.size() ? data.variances : nobs;
  } else {
    toys_->throw_toy(data.values, data.variances, nobs, varnobs);
    if (o_.toys_randomize_parameters) toys_->randomize_start(x);
  }
}

// The minimisation of one fit from x; returns the minimum.
VectorXd Run::minimize_fit(int64_t fit_index, const VectorXd& nobs, VectorXd x,
                           const VectorXd& x_unrandomized, result::Group g, result::Group cpp) {
  auto& fitter = *ctx_.fitter;
  // A start where the param model zeroes the only process of bins with data (Poisson NLL
  // infinite; e.g. --paramModel Mixture at mixing 1) is refused naming the cause (issue 10).
  check_start_point(*ctx_.model, nobs, ctx_.xi(x), [&] {
    VectorXd nu;
    ctx_.yield_model().expected_yields(ctx_.xi(x), 0, ctx_.input->nbins, YieldModel::BetaMode::stored, &nu);
    return nu;
  });
  // --toysRandomizeParameters: the same toy is also fitted from the unrandomized start, so that
  // toys whose random start ends in another minimum are visible (docs/user-guide.md "Toys"). That
  // fit runs first: the Hessian kept for the covariance must be the reported fit's.
  std::optional<double> nll_unrandomized;
  if (fit_index >= 1 && o_.toys_randomize_parameters) {
    const bool bb = ctx_.yield_model().has_bb();
    const VectorXd stored_beta = ctx_.yield_model().stored_beta();
    if (bb) fitter.set_stored_beta(ctx_.yield_model().beta_centres());
    MinimizerResult mr0;
    const VectorXd x0 = o_.force_linear ? session_->newton_step_full(x_unrandomized, &mr0)
                                        : session_->minimize_full(x_unrandomized, false, &mr0);
    nll_unrandomized = fitter.value(x0);
    if (bb) fitter.set_stored_beta(stored_beta);
  }
  MinimizerResult mr;
  // --forceLinear: one Newton step instead of the fit (docs/user-guide.md "Minimizer options").
  x = o_.force_linear ? session_->newton_step_full(x, &mr) : session_->minimize_full(x, true, &mr);
  if (nll_unrandomized) {
    const double nll = fitter.value(x);
    const bool other =
        std::abs(nll - *nll_unrandomized) > 1e-6;  // NLL agrees to 1e-6 (docs/validation.md "Tolerances")
    result::write_scalar(cpp, "nllvalreduced_unrandomized_start", *nll_unrandomized);
    result::write_scalar_bool(cpp, "other_minimum_than_unrandomized_start", other);
    if (other) {
      ++toys_other_minimum_;
      log().warn(
          "toy {}: the randomized start ends at NLL {} and the unrandomized start at {} (another minimum)",
          fit_index, py_float(nll), py_float(*nll_unrandomized));
    }
  }
  if (ctx_.bb_on && !o_.no_postfit_profile_bb) log().info("profile beta");
  write_minimizer_summary(g, cpp, mr, !o_.force_linear);
  return x;
}

void Run::run_one(int64_t fit_index, const std::string& group_name, const DataSet& data) {
  // What a std::bad_alloc names (rabbit/core/memory_limit.hpp); check_memory refused the known
  // dense matrices that would not fit before the first fit.
  memory::AllocationScope scope(fmt::format("the fit {} (its matrices and postfit steps)", group_name));
  auto t_start = Clock::now();
  auto& ps = ctx_.model->parameters;
  ps.reset_state();
  session_->forget_fit_hessian();
  const bool blinded = fit_index == 0 || (fit_index >= 1 && o_.toys_data_mode == "observed");
  VectorXd x = ps.x_default;
  toys_->restore_beta_defaults();
  arm_regularizers(ctx_, x);

  VectorXd nobs, varnobs;
  observed_for(fit_index, data, x, nobs, varnobs);
  VectorXd x_unrandomized = ps.x_default;
  check_observed(*ctx_.model, nobs, group_name);
  ctx_.fitter->set_observed(nobs, varnobs);

  auto g = result::create_group(out_->root(), group_name, "result");
  result::set_attr(g, "fit_index", fit_index);
  if (!data.name.empty()) result::set_attr(g, "pseudodata", data.name);
  result::set_attr_u8(g, "blinded", blinded && !o_.prefit_only);
  const bool dofit = fit_index >= 0 && !o_.no_fit && !o_.prefit_only;
  result::set_attr_u8(g, "fitted", dofit);
  out_->reset_mappings();

  // Prefit.
  VectorXd prefit_var = prefit_variances(*ctx_.model);
  result::write_hist(g, "parms_prefit", {out_->shared("parms")}, x.data(), prefit_var.data());
  MatrixXd prefit_cov;
  {
    memory::AllocationScope what(fmt::format("the prefit covariance of {} parameters", ps.size()));
    prefit_cov = prefit_covariance(*ctx_.model);
  }
  if (o_.save_hists) {
    out_->save_observed_hists(g, nobs, varnobs);
    out_->save_hists(g, x, prefit_cov, true);
  }
  const double t_prefit = seconds_since(t_start);
  double t_fit = t_prefit;
  auto cpp = result::create_group(g, "_cpp", "");
  if (!o_.prefit_only) {
    ps.blinding_enabled = blinded && ps.blinding_available;
    // --externalPostfit: the loaded values are the start point (and, without a fit, the result).
    MatrixXd cov_external;
    if (external_) {
      cov_external = prefit_cov;
      external_->apply(x, x_unrandomized, cov_external);
    }
    const bool external_cov = external_ && external_->has_covariance() && !dofit;
    // The L curve (--lCurveScan, --lCurveOptimize) runs before the fit and hands it its last minimum.
    if (o_.l_curve_scan || o_.l_curve_optimize) run_l_curve_steps(ctx_, *session_, g, x);
    // Fit.
    if (dofit) x = minimize_fit(fit_index, nobs, x, x_unrandomized, g, cpp);
    t_fit = seconds_since(t_start);

    // Postfit.
    VectorXd var;
    MatrixXd cov = prefit_cov;
    bool have_cov = false;
    if (external_cov) {
      // No fit and a loaded covariance: the Hessian step is skipped (docs/user-guide.md "The list of fits").
      cov = cov_external;
      have_cov = true;
      var = cov.diagonal();
      result::write_hist(g, "cov", {out_->shared("parms_x"), out_->shared("parms_y")}, cov.data(), nullptr);
    } else {
      memory::AllocationScope what(
          fmt::format("the Hessian and covariance of {} parameters (postfit uncertainties)", ps.size()));
      postfit_uncertainties(ctx_, *session_, *out_, g, x, var, cov, have_cov);
    }
    write_likelihood_values(ctx_, g, x);
    write_parameters(ctx_, *out_, g, cpp, x, var);
    if (refit_impacts_requested(o_)) write_refit_impacts(ctx_, *session_, *out_, g, x, cov, have_cov);
    if (o_.scan || o_.contour_scan || !o_.scan_2d.empty() || !o_.contour_scan_2d.empty()) {
      if (!have_cov && (o_.contour_scan || !o_.contour_scan_2d.empty() || !o_.scan_range_use_prefit))
        throw OptionError(
            "--scan/--scan2D/--contourScan/--contourScan2D need the covariance (not available with "
            "--noHessian)");
      write_scans(ctx_, *session_, *out_, g, x, cov);
    }
    if (o_.save_hists) out_->save_hists(g, x, cov, false);
  }
  const double t_post = seconds_since(t_start);
  result::write_scalar(cpp, "time_prefit_s", t_prefit);
  result::write_scalar(cpp, "time_fit_s", t_fit - t_prefit);
  result::write_scalar(cpp, "time_postfit_s", t_post - t_fit);
  log().debug("For fit {}:", fit_index);
  log().debug("{} seconds for prefit", t_prefit);
  log().debug("{} seconds for fit", t_fit - t_prefit);
  log().debug("{} seconds for postfit", t_post - t_fit);
  out_->reset_mappings();
}

void Run::execute() {
  auto t_start = Clock::now();
  load();
  check_memory(ctx_);
  out_ = std::make_unique<ResultLayoutWriter>(ctx_);
  if (o_.compute_saturated_projection_tests) {
    saturated_ = std::make_unique<SaturatedProjectionTests>(ctx_);
    out_->set_postfit_mapping_step([this](const postfit::Mapping& m, result::Group g, const VectorXd& x) {
      saturated_->write(m, g, x);
    });
  }
  out_->write_meta();
  out_->flush();
  log().debug("{} seconds initialization time", seconds_since(t_start));

  const std::vector<DataSet> datasets = fit_data_sets(o_, *ctx_.input);
  const std::vector<int64_t> fits = fit_indices(o_.toys);
  for (auto fit : fits) {
    for (const auto& d : datasets) {
      run_one(fit, fit_group_name(fit, d), d);
      out_->flush();  // each fit's group is written when complete, as upstream does
    }
  }
  if (o_.toys_randomize_parameters) {
    int64_t ntoys = 0;
    for (auto f : fits) ntoys += f >= 1 ? 1 : 0;
    ntoys *= static_cast<int64_t>(datasets.size());
    if (ntoys > 0)
      log().info(
          "--toysRandomizeParameters: {} of {} toy fits ended at another minimum than from the unrandomized "
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
  // Every termination signal removes the unfinished result and says so (rabbit/core/termination.hpp).
  termination::install_handlers("rabbit_fit");
  Run run(options);
  run.execute();
}

int rabbit_fit_process_main(int argc, const char* const* argv) {
  try {
    FitOptions options = parse_fit_options(argc, argv);
    run_fit(options);
    return 0;
  } catch (const HelpRequested& h) {
    std::cout << h.text;
    return 0;
  } catch (const Error& e) {
    print_error_line("rabbit_fit", e.what());
    return static_cast<int>(e.code());
  } catch (const std::bad_alloc&) {
    print_error_line("rabbit_fit", memory::out_of_memory_message());
    return static_cast<int>(ExitCode::resource);
  } catch (const std::exception& e) {
    print_error_line("rabbit_fit", e.what());
    return 1;
  }
}

int rabbit_fit_main(int argc, const char* const* argv) {
  // Under mpirun/srun the ranks share one fit (docs/mpi.md).
  if (launched_by_mpi_launcher()) return rabbit_fit_ranks_main(argc, argv);
  return rabbit_fit_process_main(argc, argv);
}

}  // namespace rabbit::cli
