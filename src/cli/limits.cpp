// The rabbit_limit run (docs/user-guide.md "rabbit_limit", docs/output-format.md "Asymptotic limits"):
// rabbit_limit.py's sequence on our fitter. Its own options are taken off the command line here; the rest
// is rabbit_fit's option set (load, backend, --nDevices, minimizer, -t, --allowNegativeParam, ...).
#include "rabbit/cli/limits.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "fit_context.hpp"
#include "fit_session.hpp"
#include "rabbit/cli/options.hpp"
#include "rabbit/core/error.hpp"
#include "rabbit/core/logging.hpp"
#include "rabbit/core/termination.hpp"
#include "rabbit/postfit/asymptotic_limits.hpp"
#include "rabbit/postfit/scans.hpp"
#include "rabbit/postfit/uncertainties.hpp"
#include "result_layout_writer.hpp"
#include "toy_generator.hpp"

namespace rabbit::cli {
namespace {

using Eigen::MatrixXd;
using Eigen::VectorXd;
using result::Axis;

struct LimitOptions {
  std::vector<std::string> params;  // --asymptoticLimits
  std::vector<double> levels = {0.05};
  bool gaussian = true, likelihood = true;  // --modes
};

// argparse's rule: a word starting with '-' is an option unless it reads as a negative number.
bool looks_like_option(const std::string& word) {
  if (word.size() < 2 || word[0] != '-') return false;
  char* end = nullptr;
  std::strtod(word.c_str(), &end);
  return *end != '\0';
}

// Takes rabbit_limit.py's own options (nargs="+") off argv; the rest goes to rabbit_fit's parser.
std::vector<std::string> take_limit_options(int argc, const char* const* argv, LimitOptions& lo) {
  std::vector<std::string> rest = {argv[0]};
  bool outname = false, modes_given = false;
  std::vector<std::string> modes;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--asymptoticLimits" || a == "--levels" || a == "--modes") {
      std::vector<std::string> vals;
      while (i + 1 < argc && !looks_like_option(argv[i + 1])) vals.emplace_back(argv[++i]);
      if (vals.empty()) throw OptionError(a + ": expected at least one argument");
      if (a == "--asymptoticLimits") lo.params = vals;
      if (a == "--modes") modes = vals, modes_given = true;
      if (a == "--levels") {
        lo.levels.clear();
        for (const auto& v : vals) {
          size_t used = 0;
          double cl = 0.0;
          try {
            cl = std::stod(v, &used);
          } catch (const std::exception&) {
            used = 0;
          }
          if (used != v.size() || !(cl > 0.0 && cl < 0.5))
            throw OptionError(fmt::format("--levels: '{}' is not a CLs level in (0, 0.5)", v));
          lo.levels.push_back(cl);
        }
      }
      continue;
    }
    if (a == "--outname" || a.rfind("--outname=", 0) == 0) outname = true;
    rest.push_back(a);
  }
  if (modes_given) {
    lo.gaussian = lo.likelihood = false;
    for (const auto& m : modes) {
      if (m == "gaussian")
        lo.gaussian = true;
      else if (m == "likelihood")
        lo.likelihood = true;
      else
        throw OptionError(
            fmt::format("--modes: invalid choice '{}' (choose from 'gaussian', 'likelihood')", m));
    }
  }
  if (!outname) rest.insert(rest.end(), {"--outname", "limits.hdf5"});  // rabbit_limit.py's default
  return rest;
}

void check_supported(const FitOptions& o, const LimitOptions& lo) {
  if (lo.params.empty()) throw OptionError("--asymptoticLimits: no parameter given");
  if (!o.mappings.empty())
    throw OptionError("-m/--mapping: limits on mappings are not supported by rabbit_limit");
  if (o.pseudo_data) throw OptionError("--pseudoData: not supported by rabbit_limit");
  for (auto t : o.toys)
    if (t != -1 && t != 0) throw OptionError("-t/--toys: rabbit_limit takes -1 (Asimov) and 0 (data) only");
}

class LimitRun {
 public:
  LimitRun(const FitOptions& o, const LimitOptions& lo) : o_(o), lo_(lo), ctx_(o) {}
  void execute();

 private:
  void run_one(int64_t fit, const std::string& name);
  VectorXd covariance_at(const VectorXd& x, MatrixXd& cov);
  double reported_value(int64_t p, const VectorXd& x) const;
  double reported_error(int64_t p, const VectorXd& x, const MatrixXd& cov) const;

  const FitOptions& o_;
  const LimitOptions& lo_;
  FitContext ctx_;
  std::unique_ptr<FitSession> session_;
  std::unique_ptr<ToyGenerator> toys_;
  std::unique_ptr<ResultLayoutWriter> out_;
  std::vector<int64_t> params_;
};

// Covariance from the Hessian at x (rabbit's edmval_cov); returns the gradient.
VectorXd LimitRun::covariance_at(const VectorXd& x, MatrixXd& cov) {
  VectorXd g;
  MatrixXd hess;
  ctx_.fitter->value_grad_hess(x, g, hess);
  auto res = postfit::covariance_from_hessian(hess, g, ctx_.layout.floating, prefit_covariance(*ctx_.model));
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

void LimitRun::run_one(int64_t fit, const std::string& name) {
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
  VectorXd data_obs = ctx_.input->data_obs, data_var;
  if (chi2_like) data_var = ctx_.input->data_var ? *ctx_.input->data_var : data_obs;
  VectorXd nobs, varnobs;
  if (fit == -1)
    asimov_at(x, nobs, varnobs);
  else
    nobs = data_obs, varnobs = data_var;
  fitter.set_observed(nobs, varnobs);

  auto g = result::create_group(out_->root(), name, "result");
  VectorXd prefit_var = prefit_variances(*ctx_.model);
  result::write_hist(g, "parms_prefit", {out_->shared("parms")}, x.data(), prefit_var.data());

  if (fit == 0) {
    ps.blinding_enabled = ps.blinding_available;
    log().info("Perform background only fit");
    std::vector<int64_t> others;
    for (auto i : ctx_.layout.floating)
      if (std::find(params_.begin(), params_.end(), i) == params_.end()) others.push_back(i);
    x = session_->profile_minimize(fitter, others, x);
    asimov_at(x, nobs, varnobs);
    fitter.set_observed(nobs, varnobs);
  }
  MatrixXd cov_asimov;
  if (!o_.no_hessian)
    covariance_at(x, cov_asimov);
  else
    cov_asimov = prefit_covariance(*ctx_.model);
  const VectorXd x_asimov = x;
  const double nll_asimov = fitter.value(x_asimov);
  // The Asimov fitter's state is (x_asimov, nobs); the data fitter's is (x_data, data).
  VectorXd x_data = x;
  MatrixXd cov_data;
  if (fit == 0) {
    log().info("Unconditional fit to real data");
    fitter.set_observed(data_obs, data_var);
    MinimizerResult mr;
    x_data = session_->minimize_full(x, true, &mr);
  }
  covariance_at(x_data, cov_data);
  VectorXd asimov_obs = nobs, asimov_var = varnobs;

  postfit::ProfileMinimizer pm = [this](Objective& obj, const std::vector<int64_t>& fl, const VectorXd& x0) {
    return session_->profile_minimize(obj, fl, x0);
  };
  const auto& clb = postfit::kExpectedClb;
  const int64_t np = static_cast<int64_t>(params_.size()), nl = static_cast<int64_t>(lo_.levels.size());
  const int64_t nb = static_cast<int64_t>(clb.size());
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<double> expected(np * nl * nb, nan), observed(np * nl, nan), expected_nll(np * nl * nb, nan);
  for (int64_t i = 0; i < np; ++i) {
    const int64_t p = params_[i];
    const double xbest = reported_value(p, x_asimov), xerr = reported_error(p, x_asimov, cov_asimov);
    const double xobs = reported_value(p, x_data), xobs_err = reported_error(p, x_data, cov_data);
    log().debug("Best fit {} = {} +/- {}", ps.names[p], py_float(xbest), py_float(xerr));
    for (int64_t j = 0; j < nl; ++j) {
      const double cls = lo_.levels[j];
      log().info(" -- AsymptoticLimits ( CLs={:4.1f}% ) -- ", cls * 100.0);
      for (int64_t k = 0; k < nb; ++k) {
        const double q = postfit::asimov_q_level(cls, clb[k]);
        log().debug("Find r with q_(r,A)=-2ln(L)/ln(L0) = {}", py_float(q));
        const int64_t at = (i * nl + j) * nb + k;
        if (lo_.gaussian) {
          expected[at] = xbest + xerr * std::sqrt(q);
          log().info("Expected (Gaussian) {:4.1f}%: {} < {}", clb[k] * 100.0, ps.names[p],
                     py_float(expected[at]));
        }
        if (lo_.likelihood) {
          // rabbit's contour_scan on the Asimov fit at Δ(2NLL) = q, upper side: the limit is reported
          // as the displacement of x_p (docs/differences-from-rabbit.md "rabbit_limit").
          fitter.set_observed(asimov_obs, asimov_var);
          auto pt = postfit::contour_point(fitter, pm, ctx_.layout.floating, x_asimov, nll_asimov, p,
                                           cov_asimov.col(p), std::sqrt(q), 1);
          if (!pt.success)
            log().warn("contour search for {} at q = {} did not converge", ps.names[p], py_float(q));
          expected_nll[at] = pt.displacement(p);
          log().info("Expected (Likelihood) {:4.1f}%: {} < {}", clb[k] * 100.0, ps.names[p],
                     py_float(expected_nll[at]));
        }
      }
      if (lo_.gaussian) {
        log().info("Measured xobs +/- xobs_err (asimov err) = {} +/- {} ({})", py_float(xobs),
                   py_float(xobs_err), py_float(xerr));
        observed[i * nl + j] = postfit::gaussian_observed_limit(xobs, xobs_err, xerr, cls);
        log().info("Observed (Gaussian): {} < {}", ps.names[p], py_float(observed[i * nl + j]));
      }
    }
  }
  std::vector<std::string> names, levels, clbs;
  for (auto p : params_) names.push_back(ps.names[p]);
  for (auto l : lo_.levels) levels.push_back(py_float(l));
  for (auto c : clb) clbs.push_back(py_float(c));
  const Axis a_par = Axis::strcat("parms", names), a_cls = Axis::strcat("cls", levels),
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
  for (const auto& n : lo_.params) {
    const int64_t p = ps.index(n);
    if (p < 0) throw OptionError(fmt::format("--asymptoticLimits: unknown parameter '{}'", n));
    if (ps.frozen[p]) throw OptionError(fmt::format("--asymptoticLimits: parameter '{}' is frozen", n));
    params_.push_back(p);
  }
  session_ = std::make_unique<FitSession>(ctx_);
  toys_ = std::make_unique<ToyGenerator>(ctx_);
  out_ = std::make_unique<ResultLayoutWriter>(ctx_);
  out_->write_meta();
  out_->flush();
  for (auto t : o_.toys) {
    run_one(t, t == -1 ? "results_asimov" : "results");
    out_->flush();
  }
  out_->commit();
  std::cout << "Results written in file " << out_->final_path() << std::endl;
  log().info("{} seconds total time", seconds_since(t_start));
}

}  // namespace

int rabbit_limit_main(int argc, const char* const* argv) {
  try {
    LimitOptions lo;
    const std::vector<std::string> rest = take_limit_options(argc, argv, lo);
    std::vector<const char*> args;
    for (const auto& s : rest) args.push_back(s.c_str());
    FitOptions options = parse_fit_options(static_cast<int>(args.size()), args.data());
    check_supported(options, lo);
    set_verbosity(options.verbose);
    for (const auto& w : options.warnings) log().warn("{}", w);
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

}  // namespace rabbit::cli
