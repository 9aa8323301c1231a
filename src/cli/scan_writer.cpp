#include "scan_writer.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <numbers>

#include "rabbit/core/error.hpp"
#include "rabbit/core/logging.hpp"
#include "rabbit/postfit/scans.hpp"
#include "rabbit/postfit/scans_2d.hpp"

namespace rabbit::cli {
namespace {

using Eigen::MatrixXd;
using Eigen::VectorXd;
using result::Axis;

// The parameters named by a scan option (none named: all of them).
std::vector<int64_t> scan_indices(const ParameterSpace& ps, const std::vector<std::string>& names,
                                  const char* option) {
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

// The two parameters of one --scan2D/--contourScan2D, checked: known and floating.
std::pair<int64_t, int64_t> pair_indices(const ParameterSpace& ps, const std::vector<std::string>& pair,
                                         const char* option) {
  auto idx = scan_indices(ps, pair, option);
  for (auto i : idx)
    if (ps.frozen[i]) throw OptionError(fmt::format("{}: parameter {} is frozen", option, ps.names[i]));
  return {idx[0], idx[1]};
}

// A regular axis as hist.axis.Regular writes it (the contour_scan2D axes of upstream's workspace).
Axis regular_axis(std::string name, int64_t bins, double lower, double upper, bool circular) {
  Axis a;
  a.type = "regular";
  a.name = std::move(name);
  a.bins = bins;
  a.lower = lower;
  a.upper = upper;
  a.circular = circular;
  a.underflow = !circular;
  a.overflow = true;
  return a;
}

// --scan2D and --contourScan2D (docs/output-format.md "Likelihood scans and contours").
void write_scans_2d(FitContext& ctx, const postfit::ProfileMinimizer& pm, result::Group group,
                    const VectorXd& x, const MatrixXd& cov) {
  const auto& o = ctx.options;
  const auto& ps = ctx.model->parameters;
  auto& fitter = *ctx.fitter;
  const auto& floating = ctx.layout.floating;
  for (const auto& pair : o.scan_2d) {
    const auto [p, q] = pair_indices(ps, pair, "--scan2D");
    log().info("-delta log(L) 2D scan for {} and {}", ps.names[p], ps.names[q]);
    const double sp = o.scan_range_use_prefit ? 1.0 : std::sqrt(cov(p, p));
    const double sq = o.scan_range_use_prefit ? 1.0 : std::sqrt(cov(q, q));
    auto scan = postfit::scan_2d(fitter, pm, floating, x, p, q, sp, sq, o.scan_range, o.scan_points);
    result::write_hist(group, "nll_scan2D_" + ps.names[p] + "_" + ps.names[q],
                       {Axis::floatcat("scan_x", scan.x), Axis::floatcat("scan_y", scan.y)}, scan.dnll.data(),
                       nullptr, "Likelihood 2D scan for parameters " + ps.names[p] + " and " + ps.names[q]);
  }
  if (o.contour_scan_2d.empty()) return;
  const double lmin = fitter.value(x);
  const int64_t nl = static_cast<int64_t>(o.contour_levels.size());
  const int64_t n = o.scan_points;
  std::vector<double> values(o.contour_scan_2d.size() * nl * 2 * n, std::numeric_limits<double>::quiet_NaN());
  std::vector<std::string> labels;
  for (size_t it = 0; it < o.contour_scan_2d.size(); ++it) {
    const auto [p, q] = pair_indices(ps, o.contour_scan_2d[it], "--contourScan2D");
    labels.push_back(ps.names[p] + "-" + ps.names[q]);
    MatrixXd cov_pq(cov.rows(), 2);
    cov_pq << cov.col(p), cov.col(q);
    for (int64_t il = 0; il < nl; ++il) {
      log().info("2D contour scan for {} at CL {}", labels.back(), py_float(o.contour_levels[il]));
      auto t0 = Clock::now();
      auto c = postfit::contour_2d(fitter, pm, floating, x, lmin, p, q, cov_pq, o.contour_levels[il], n);
      int64_t failed = 0;
      for (int64_t k = 0; k < n; ++k) {
        const int64_t base = ((static_cast<int64_t>(it) * nl + il) * 2) * n;
        values[base + k] = c.xp[k];
        values[base + n + k] = c.xq[k];
        failed += c.success[k] ? 0 : 1;
      }
      log().info("{} of {} angles found, time={:.3f}s", n - failed, n, seconds_since(t0));
      if (failed)
        log().warn("2D contour search for {} at level {} did not converge at {} of {} angles (NaN)",
                   labels.back(), py_float(o.contour_levels[il]), failed, n);
    }
  }
  const double halfstep = std::numbers::pi / static_cast<double>(n);
  result::write_hist(
      group, "contour_scan2D",
      {Axis::strcat("param_tuple", labels), Axis::floatcat("confidence_level", o.contour_levels),
       regular_axis("params", 2, 0.0, 2.0, false),
       regular_axis("angle", n, -halfstep, 2.0 * std::numbers::pi - halfstep, true)},
      values.data(), nullptr, "Parameter likelihood contour scans 2D");
}

}  // namespace

void write_scans(FitContext& ctx, FitSession& session, ResultLayoutWriter& out, result::Group group,
                 const VectorXd& x, const MatrixXd& cov) {
  const auto& o = ctx.options;
  const auto& ps = ctx.model->parameters;
  auto& fitter = *ctx.fitter;
  const auto& floating = ctx.layout.floating;
  postfit::ProfileMinimizer pm = [&session](Objective& obj, const std::vector<int64_t>& fl,
                                            const VectorXd& x0) {
    return session.profile_minimize(obj, fl, x0);
  };
  if (o.scan) {
    for (auto p : scan_indices(ps, *o.scan, "--scan")) {
      log().info("-delta log(L) scan for {}", ps.names[p]);
      if (ps.frozen[p]) throw OptionError(fmt::format("--scan: parameter {} is frozen", ps.names[p]));
      double sigma = o.scan_range_use_prefit ? 1.0 : std::sqrt(cov(p, p));
      auto scan = postfit::scan_1d(fitter, pm, floating, x, p, sigma, o.scan_range, o.scan_points);
      result::write_hist(group, "nll_scan_" + ps.names[p], {Axis::floatcat("scan", scan.points)},
                         scan.dnll.data(), nullptr, "Likelihood scan for parameter " + ps.names[p]);
    }
  }
  if (o.contour_scan) {
    auto params = scan_indices(ps, *o.contour_scan, "--contourScan");
    const double lmin = fitter.value(x);
    const int64_t npar = ps.size();
    const int64_t nl = static_cast<int64_t>(o.contour_levels.size());
    std::vector<double> values(params.size() * nl * 2 * npar, std::numeric_limits<double>::quiet_NaN());
    std::vector<std::string> labels;
    for (size_t ip = 0; ip < params.size(); ++ip) {
      const int64_t p = params[ip];
      labels.push_back(ps.names[p]);
      log().info("Contour scan for {}", ps.names[p]);
      if (ps.frozen[p]) continue;
      for (int64_t il = 0; il < nl; ++il) {
        log().info("    Now at CL {}", py_float(o.contour_levels[il]));
        for (int side : {-1, 1}) {
          auto t0 = Clock::now();
          auto pt = postfit::contour_point(fitter, pm, floating, x, lmin, p, cov.col(p), o.contour_levels[il],
                                           side);
          log().info("Success: {} sign={} time={:.3f}s", pt.success ? "True" : "False", side,
                     seconds_since(t0));
          if (!pt.success)
            log().warn("Message: contour search for {} at level {} did not converge", ps.names[p],
                       py_float(o.contour_levels[il]));
          const int64_t base = ((static_cast<int64_t>(ip) * nl + il) * 2 + (side < 0 ? 0 : 1)) * npar;
          for (int64_t j = 0; j < npar; ++j) values[base + j] = pt.displacement(j);
        }
      }
    }
    Axis levels = Axis::floatcat("confidence_level", o.contour_levels);
    result::write_hist(
        group, "contour_scan",
        {Axis::strcat("impacts", labels), levels, out.shared("downUpVar"), out.shared("parms")},
        values.data(), nullptr, "Parameter likelihood contour scans");
  }
  write_scans_2d(ctx, pm, group, x, cov);
}

}  // namespace rabbit::cli
