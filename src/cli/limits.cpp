// The rabbit_limit run (docs/user-guide.md "rabbit_limit", docs/output-format.md "Asymptotic limits"):
// rabbit_limit.py's sequence on our fitter, for every fit of -t (Asimov, data, toys) and every data set
// (the data or the --pseudoData sets), on parameters or on the first -m mapping. The command line is
// limit_options.cpp's.
#include "rabbit/cli/limits.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <limits>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "data_sets.hpp"
#include "fit_context.hpp"
#include "fit_session.hpp"
#include "limit_options.hpp"
#include "mpi_run.hpp"
#include "rabbit/cli/options.hpp"
#include "rabbit/core/cpu_budget.hpp"
#include "rabbit/core/error.hpp"
#include "rabbit/core/logging.hpp"
#include "rabbit/core/termination.hpp"
#include "rabbit/model/parameter_space.hpp"
#include "rabbit/postfit/asymptotic_limits.hpp"
#include "rabbit/postfit/histograms.hpp"
#include "rabbit/postfit/mapping.hpp"
#include "rabbit/postfit/scans.hpp"
#include "rabbit/postfit/uncertainties.hpp"
#include "result_layout_writer.hpp"
#include "toy_generator.hpp"

namespace rabbit::cli {
namespace {

using Eigen::MatrixXd;
using Eigen::VectorXd;
using result::Axis;

// One limit's inputs: the best-fit value and σ on the Asimov data set and on the observed one.
struct LimitInputs {
  double xbest = 0.0, xerr = 0.0, xobs = 0.0, xobs_err = 0.0;
};

class LimitRun {
 public:
  LimitRun(const FitOptions& o, const LimitOptions& lo) : o_(o), lo_(lo), ctx_(o) {}
  void execute();

 private:
  void run_one(int64_t fit, const std::string& name, const DataSet& data);
  VectorXd covariance_at(const VectorXd& x, MatrixXd& cov);
  double reported_value(int64_t p, const VectorXd& x) const;
  double reported_error(int64_t p, const VectorXd& x, const MatrixXd& cov) const;
  std::pair<double, double> mapping_value(const VectorXd& x, const MatrixXd& cov, const VectorXd& nobs,
                                          const VectorXd& varnobs);

  const FitOptions& o_;
  const LimitOptions& lo_;
  FitContext ctx_;
  std::unique_ptr<FitSession> session_;
  std::unique_ptr<ToyGenerator> toys_;
  std::unique_ptr<ResultLayoutWriter> out_;
  std::unique_ptr<postfit::Mapping> mapping_;    // the first -m: the limit is on its first output
  std::vector<int64_t> params_;                  // per --asymptoticLimits entry (parameter limits only)
  std::vector<int64_t> background_only_frozen_;  // frozen in the background-only fit
};

// Covariance from the Hessian at x (rabbit's edmval_cov); returns the gradient.
VectorXd LimitRun::covariance_at(const VectorXd& x, MatrixXd& cov) {
  VectorXd g;
  MatrixXd hess;
  ctx_.fitter->value_grad_hess(x, g, hess);
  auto res = postfit::covariance_from_hessian(hess, g, ctx_.layout.floating, prefit_covariance(*ctx_.model),
                                              ctx_.fitter->dense_linalg());
  log().info("edmval: {}", py_float(res.edm));
  cov = std::move(res.cov);
  return g;
}

// rabbit's get_poi/get_theta: μ = x² for a non-negative POI, else x.
double LimitRun::reported_value(int64_t p, const VectorXd& x) const {
  const auto& ps = ctx_.model->parameters;
  return (p < ps.npoi && ps.squared_pois) ? x(p) * x(p) : x(p);
}

// σ(x_p), carried to μ = x² as 2·σ·sqrt(μ) for a non-negative POI (rabbit_limit.py).
double LimitRun::reported_error(int64_t p, const VectorXd& x, const MatrixXd& cov) const {
  const auto& ps = ctx_.model->parameters;
  const double s = std::sqrt(cov(p, p));
  return (p < ps.npoi && ps.squared_pois) ? 2.0 * s * std::sqrt(reported_value(p, x)) : s;
}

// The mapping's first output and its σ at x with β profiled on (nobs, varnobs): rabbit's
// expected_with_variance(compute_flat, profile=True, inclusive=True)[0] (docs/output-format.md
// "Histogram uncertainties").
std::pair<double, double> LimitRun::mapping_value(const VectorXd& x, const MatrixXd& cov,
                                                  const VectorXd& nobs, const VectorXd& varnobs) {
  ctx_.fitter->set_observed(nobs, varnobs);
  postfit::HistogramRequest req;
  req.errors = true;
  req.threads = cpus::threads_or_detected(ctx_.options.n_threads);
  const auto h =
      postfit::compute_histograms(*ctx_.model, ctx_.yield_model(), *ctx_.fitter, *mapping_, x, cov, req);
  return {h.inclusive(0), std::sqrt(h.inclusive_var(0))};
}

void LimitRun::run_one(int64_t fit, const std::string& name, const DataSet& data) {
  auto& ps = ctx_.model->parameters;
  auto& fitter = *ctx_.fitter;
  ps.reset_state();
  session_->forget_fit_hessian();
  toys_->restore_beta_defaults();
  VectorXd x = ps.x_default;
  arm_regularizers(ctx_, x);
  const bool chi2_like = ctx_.model->options.likelihood != DataLikelihood::poisson;
  auto asimov_at = [&](const VectorXd& at, VectorXd& nobs, VectorXd& varnobs) {
    ctx_.yield_model().expected_yields(ctx_.xi(at), 0, ctx_.input->nbins, YieldModel::BetaMode::stored,
                                       &nobs);
    if (chi2_like) varnobs = nobs;
  };
  // The data set that the observed fit sees: for a toy too, rabbit_limit.py fits the data set (not the
  // toy) unconditionally, with the toy's randomised constraint centres (docs/differences-from-rabbit.md
  // "rabbit_limit").
  const VectorXd& data_obs = data.values;
  VectorXd data_var;
  if (chi2_like) data_var = data.variances.size() ? data.variances : data_obs;
  VectorXd nobs, varnobs;
  if (fit == -1) {
    asimov_at(x, nobs, varnobs);
  } else if (fit == 0) {
    nobs = data_obs, varnobs = data_var;
  } else {
    toys_->throw_toy(data.values, data.variances, nobs, varnobs);
    if (o_.toys_randomize_parameters) toys_->randomize_start(x);
  }
  fitter.set_observed(nobs, varnobs);

  auto g = result::create_group(out_->root(), name, "result");
  result::set_attr(g, "fit_index", fit);
  if (!data.name.empty()) result::set_attr(g, "pseudodata", data.name);
  VectorXd prefit_var = prefit_variances(*ctx_.model);
  result::write_hist(g, "parms_prefit", {out_->shared("parms")}, x.data(), prefit_var.data());

  if (fit >= 0) {
    const bool blinded = fit == 0 || o_.toys_data_mode == "observed";
    ps.blinding_enabled = blinded && ps.blinding_available;
    log().info("Perform background only fit");
    std::vector<int64_t> others;
    for (auto i : ctx_.layout.floating)
      if (std::find(background_only_frozen_.begin(), background_only_frozen_.end(), i) ==
          background_only_frozen_.end())
        others.push_back(i);
    x = session_->profile_minimize(fitter, others, x);
    asimov_at(x, nobs, varnobs);
    fitter.set_observed(nobs, varnobs);
  }
  MatrixXd cov_asimov;
  covariance_at(x, cov_asimov);
  const VectorXd x_asimov = x;
  const double nll_asimov = fitter.value(x_asimov);
  const VectorXd asimov_obs = nobs, asimov_var = varnobs;
  // The Asimov fitter's state is (x_asimov, asimov_obs); the data fitter's is (x_data, data_obs).
  VectorXd x_data = x;
  if (fit >= 0) {
    log().info("Unconditional fit to real data");
    fitter.set_observed(data_obs, data_var);
    MinimizerResult mr;
    x_data = session_->minimize_full(x, true, &mr);
  }
  const VectorXd& observed_obs = fit >= 0 ? data_obs : asimov_obs;
  const VectorXd& observed_var = fit >= 0 ? data_var : asimov_var;
  MatrixXd cov_data;
  LimitInputs mapping_inputs;
  if (mapping_) {
    // rabbit_limit.py's data fitter keeps the covariance of the Asimov fit for a mapping.
    log().info("Get the limit on the mapping");
    std::tie(mapping_inputs.xbest, mapping_inputs.xerr) =
        mapping_value(x_asimov, cov_asimov, asimov_obs, asimov_var);
    std::tie(mapping_inputs.xobs, mapping_inputs.xobs_err) =
        mapping_value(x_data, cov_asimov, observed_obs, observed_var);
  } else {
    covariance_at(x_data, cov_data);
  }

  postfit::ProfileMinimizer pm = [this](Objective& obj, const std::vector<int64_t>& fl, const VectorXd& x0) {
    return session_->profile_minimize(obj, fl, x0);
  };
  const auto& clb = postfit::kExpectedClb;
  const int64_t np = static_cast<int64_t>(lo_.params.size()), nl = static_cast<int64_t>(lo_.levels.size());
  const int64_t nb = static_cast<int64_t>(clb.size());
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<double> expected(np * nl * nb, nan), observed(np * nl, nan), expected_nll(np * nl * nb, nan);
  for (int64_t i = 0; i < np; ++i) {
    const std::string& key = lo_.params[i];
    LimitInputs in = mapping_inputs;
    if (!mapping_) {
      const int64_t p = params_[i];
      in = {reported_value(p, x_asimov), reported_error(p, x_asimov, cov_asimov), reported_value(p, x_data),
            reported_error(p, x_data, cov_data)};
    }
    log().debug("Best fit {} = {} +/- {}", key, py_float(in.xbest), py_float(in.xerr));
    for (int64_t j = 0; j < nl; ++j) {
      const double cls = lo_.levels[j];
      log().info(" -- AsymptoticLimits ( CLs={:4.1f}% ) -- ", cls * 100.0);
      for (int64_t k = 0; k < nb; ++k) {
        const double q = postfit::asimov_q_level(cls, clb[k]);
        log().debug("Find r with q_(r,A)=-2ln(L)/ln(L0) = {}", py_float(q));
        const int64_t at = (i * nl + j) * nb + k;
        if (lo_.gaussian) {
          expected[at] = in.xbest + in.xerr * std::sqrt(q);
          log().info("Expected (Gaussian) {:4.1f}%: {} < {}", clb[k] * 100.0, key, py_float(expected[at]));
        }
        if (lo_.likelihood) {
          // rabbit's contour_scan on the Asimov fit at Δ(2NLL) = q, upper side: the limit is reported
          // as the displacement of x_p (docs/differences-from-rabbit.md "rabbit_limit"). Parameters
          // only: check_limit_options refuses this mode with a mapping.
          const int64_t p = params_[i];
          fitter.set_observed(asimov_obs, asimov_var);
          auto pt = postfit::contour_point(fitter, pm, ctx_.layout.floating, x_asimov, nll_asimov, p,
                                           cov_asimov.col(p), std::sqrt(q), 1);
          if (!pt.success) log().warn("contour search for {} at q = {} did not converge", key, py_float(q));
          expected_nll[at] = pt.displacement(p);
          log().info("Expected (Likelihood) {:4.1f}%: {} < {}", clb[k] * 100.0, key,
                     py_float(expected_nll[at]));
        }
      }
      if (lo_.gaussian) {
        log().info("Measured xobs +/- xobs_err (asimov err) = {} +/- {} ({})", py_float(in.xobs),
                   py_float(in.xobs_err), py_float(in.xerr));
        observed[i * nl + j] = postfit::gaussian_observed_limit(in.xobs, in.xobs_err, in.xerr, cls);
        log().info("Observed (Gaussian): {} < {}", key, py_float(observed[i * nl + j]));
      }
    }
  }
  std::vector<std::string> levels, clbs;
  for (auto l : lo_.levels) levels.push_back(py_float(l));
  for (auto c : clb) clbs.push_back(py_float(c));
  const Axis a_par = Axis::strcat("parms", lo_.params), a_cls = Axis::strcat("cls", levels),
             a_clb = Axis::strcat("clb", clbs);
  const std::string label = "Asymptotic limits (CLs)";
  if (lo_.gaussian) {
    result::write_hist(g, "gaussian_asymptoticLimits_expected", {a_par, a_cls, a_clb}, expected.data(),
                       nullptr, label);
    result::write_hist(g, "gaussian_asymptoticLimits_observed", {a_par, a_cls}, observed.data(), nullptr,
                       label);
  }
  if (lo_.likelihood)
    result::write_hist(g, "likelihood_asymptoticLimits_expected", {a_par, a_cls, a_clb}, expected_nll.data(),
                       nullptr, label);
}

void LimitRun::execute() {
  auto t_start = Clock::now();
  read_input(ctx_);
  build_run_model(ctx_);
  make_run_fitter(ctx_);
  describe_layout(ctx_);
  const auto& ps = ctx_.model->parameters;
  if (!o_.mappings.empty()) {
    mapping_ = postfit::make_mapping(*ctx_.input, o_.mappings.front());
  } else {
    for (const auto& n : lo_.params) {
      const int64_t p = ps.index(n);
      if (p < 0) throw OptionError(fmt::format("--asymptoticLimits: unknown parameter '{}'", n));
      if (ps.frozen[p]) throw OptionError(fmt::format("--asymptoticLimits: parameter '{}' is frozen", n));
      params_.push_back(p);
    }
  }
  // rabbit's freeze_params(asymptoticLimits) for the background-only fit: names or full-match regexes
  // (with a mapping, the entries are labels that may match no parameter).
  background_only_frozen_ = match_names(lo_.params, ps.names, "--asymptoticLimits");
  const std::vector<DataSet> datasets = fit_data_sets(o_, *ctx_.input);  // a bad --pseudoData fails here
  session_ = std::make_unique<FitSession>(ctx_);
  toys_ = std::make_unique<ToyGenerator>(ctx_);
  out_ = std::make_unique<ResultLayoutWriter>(ctx_);
  out_->write_meta();
  out_->flush();
  for (auto fit : fit_indices(o_.toys)) {
    for (const auto& d : datasets) {
      run_one(fit, fit_group_name(fit, d), d);
      out_->flush();  // each fit's group is written when complete, as upstream does
    }
  }
  out_->commit();
  std::cout << "Results written in file " << out_->final_path() << std::endl;
  log().info("{} seconds total time", seconds_since(t_start));
}

// rabbit_limit's command line without its own options, parsed by rabbit_fit's parser.
FitOptions limit_fit_options(int argc, const char* const* argv, LimitOptions& lo) {
  const std::vector<std::string> rest = take_limit_options(argc, argv, lo);
  std::vector<const char*> args;
  for (const auto& s : rest) args.push_back(s.c_str());
  return parse_fit_options(static_cast<int>(args.size()), args.data());
}

// What a shard server of rabbit_limit reads the file and builds the model from (docs/mpi.md).
FitOptions limit_server_options(int argc, const char* const* argv) {
  LimitOptions lo;
  return limit_fit_options(argc, argv, lo);
}

int rabbit_limit_process_main(int argc, const char* const* argv) {
  try {
    LimitOptions lo;
    FitOptions options = limit_fit_options(argc, argv, lo);
    const std::vector<std::string> limit_warnings = check_limit_options(options, lo);
    set_verbosity(options.verbose);
    for (const auto& w : options.warnings) log().warn("{}", w);
    for (const auto& w : limit_warnings) log().warn("{}", w);
    termination::install_handlers("rabbit_limit");
    LimitRun run(options, lo);
    run.execute();
    return 0;
  } catch (const HelpRequested& h) {
    std::cout << h.text
              << "\nrabbit_limit options:\n  --asymptoticLimits P [P ...]  parameters to set limits on\n"
                 "  --levels CLS [CLS ...]        CLs levels (default 0.05)\n"
                 "  --modes {gaussian,likelihood} [...]  approximations (default both)\n";
    return 0;
  } catch (const Error& e) {
    print_error_line("rabbit_limit", e.what());
    return static_cast<int>(e.code());
  } catch (const std::exception& e) {
    print_error_line("rabbit_limit", e.what());
    return 1;
  }
}

}  // namespace

int rabbit_limit_main(int argc, const char* const* argv) {
  // Under mpirun/srun the ranks share each fit of the limit sequence, as rabbit_fit's (docs/mpi.md).
  if (launched_by_mpi_launcher())
    return ranks_main({"rabbit_limit", rabbit_limit_process_main, limit_server_options}, argc, argv);
  return rabbit_limit_process_main(argc, argv);
}

}  // namespace rabbit::cli
