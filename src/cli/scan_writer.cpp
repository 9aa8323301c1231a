#include "scan_writer.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "rabbit/core/error.hpp"
#include "rabbit/core/logging.hpp"
#include "rabbit/postfit/scans.hpp"

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
}

}  // namespace rabbit::cli
