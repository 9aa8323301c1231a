#include "asym_impacts.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "rabbit/core/logging.hpp"
#include "rabbit/postfit/scans.hpp"
#include "refit_impacts.hpp"

namespace rabbit::cli {
namespace {

using Eigen::MatrixXd;
using Eigen::VectorXd;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The contour searches of one run: Δ(2NLL) = 1 around the best fit x (docs/output-format.md "Likelihood
// scans and contours"), each step a profile fit with the run's minimizer over a chosen floating set.
class ContourSearch {
 public:
  ContourSearch(FitContext& ctx, FitSession& session, const VectorXd& x, const MatrixXd& cov)
      : ctx_(ctx), x_(x), cov_(cov), lmin_(ctx.fitter->value(x)) {
    minimizer_ = [&session](Objective& obj, const std::vector<int64_t>& fl, const VectorXd& start) {
      return session.profile_minimize(obj, fl, start);
    };
  }

  /// x_contour − x̂ on side −1 / +1 of parameter p with `floating` profiled; NaN when the search fails.
  VectorXd displacement(const std::vector<int64_t>& floating, int64_t p, int side) {
    // The Gaussian start moves the floating parameters only: the others stay at x̂ (rabbit zeroes the frozen
    // ones' start displacement alike).
    VectorXd column = VectorXd::Zero(cov_.rows());
    for (auto i : floating) column(i) = cov_(i, p);
    auto pt = postfit::contour_point(*ctx_.fitter, minimizer_, floating, x_, lmin_, p, column, 1.0, side,
                                     ctx_.options.asym_impacts_tol);
    if (!pt.success)
      log().warn("--asymImpacts: the contour search for {} (side {:+d}) did not converge",
                 ctx_.model->parameters.names[p], side);
    return pt.displacement;
  }

  /// Signed [down, up] interval of p: its own displacement on each side.
  Eigen::Vector2d interval(const std::vector<int64_t>& floating, int64_t p) {
    return Eigen::Vector2d(displacement(floating, p, -1)(p), displacement(floating, p, 1)(p));
  }

 private:
  FitContext& ctx_;
  const VectorXd& x_;
  const MatrixXd& cov_;
  double lmin_;
  postfit::ProfileMinimizer minimizer_;
};

// The nuisances to scan: every systematic, restricted by --asymImpactsInclude/Exclude (x-indices).
std::vector<int64_t> selected_nuisances(const FitContext& ctx) {
  const auto& ps = ctx.model->parameters;
  const auto& o = ctx.options;
  const int64_t off = ps.nparams();
  std::vector<std::string> names(ps.names.begin() + off, ps.names.end());
  std::vector<bool> keep(names.size(), !o.asym_impacts_include);
  if (o.asym_impacts_include)
    for (auto k : match_names(*o.asym_impacts_include, names, "--asymImpactsInclude")) keep[k] = true;
  if (o.asym_impacts_exclude)
    for (auto k : match_names(*o.asym_impacts_exclude, names, "--asymImpactsExclude")) keep[k] = false;
  std::vector<int64_t> out;
  for (size_t k = 0; k < names.size(); ++k)
    if (keep[k]) out.push_back(off + static_cast<int64_t>(k));
  return out;
}

// Per side sqrt(tot² − frozen²) with the sign of the side, clamped at 0 (rabbit's _quad_subtract: freezing
// can only shrink an interval in the Gaussian limit; a large negative difference means a poor search).
Eigen::Vector2d quadrature_difference(const Eigen::Vector2d& total, const Eigen::Vector2d& frozen) {
  Eigen::Vector2d out(kNaN, kNaN);
  for (int s = 0; s < 2; ++s) {
    if (!std::isfinite(total(s)) || !std::isfinite(frozen(s))) continue;
    const double diff = total(s) * total(s) - frozen(s) * frozen(s);
    if (diff < -0.05 * total(s) * total(s))
      log().warn("--asymImpacts: freezing a group widened an interval ({} to {}); clamped to 0",
                 py_float(total(s)), py_float(frozen(s)));
    const double mag = std::sqrt(std::max(diff, 0.0));
    out(s) = s == 0 ? -mag : mag;
  }
  return out;
}

}  // namespace

void write_asym_impacts(FitContext& ctx, FitSession& session, ResultLayoutWriter& out, result::Group group,
                        const VectorXd& x, const MatrixXd& cov) {
  const auto& ps = ctx.model->parameters;
  const auto& layout = ctx.layout;
  const int64_t npar = ps.size();
  ContourSearch search(ctx, session, x, cov);
  auto clock = Clock::now();

  // Per nuisance: the displacement of every parameter at the two contour points that extremise it.
  const std::vector<int64_t> nuisances = selected_nuisances(ctx);
  std::vector<std::string> labels;
  MatrixXd rows = MatrixXd::Zero(2 * static_cast<int64_t>(nuisances.size()), npar);
  log().info("asym_impacts: scanning {} nuisances", nuisances.size());
  for (size_t k = 0; k < nuisances.size(); ++k) {
    const int64_t p = nuisances[k];
    labels.push_back(ps.names[p]);
    log().info("  [{}/{}] contour scan for {}", k + 1, nuisances.size(), ps.names[p]);
    if (ps.frozen[p]) {
      log().warn("--asymImpacts: {} is frozen; its row stays 0", ps.names[p]);
      continue;
    }
    for (int side = 0; side < 2; ++side) {
      const VectorXd d = search.displacement(layout.floating, p, side == 0 ? -1 : 1);
      if (d.allFinite())
        rows.row(2 * static_cast<int64_t>(k) + side) = d.transpose();  // failed: 0, as rabbit
    }
  }
  write_down_up_table(out, group, "impacts_asym", labels, rows);

  // Grouped (freeze-group): per POI/NOI its interval with nothing frozen (Total), with each group frozen at x̂
  // (group: the quadrature difference to Total) and with every constrained systematic frozen (stat).
  const std::vector<int64_t>& targets = layout.reported;
  std::vector<Eigen::Vector2d> totals;
  for (auto t : targets)
    totals.push_back(ps.frozen[t] ? Eigen::Vector2d(kNaN, kNaN) : search.interval(layout.floating, t));
  auto intervals_with_frozen = [&](const std::vector<int64_t>& members) {
    std::vector<int64_t> floating;
    for (auto i : layout.floating)
      if (std::find(members.begin(), members.end(), i) == members.end()) floating.push_back(i);
    std::vector<Eigen::Vector2d> iv(targets.size(), Eigen::Vector2d(kNaN, kNaN));
    for (size_t r = 0; r < targets.size(); ++r)
      if (std::find(floating.begin(), floating.end(), targets[r]) != floating.end())
        iv[r] = search.interval(floating, targets[r]);
    return iv;
  };
  std::vector<std::string> glabels;
  MatrixXd grouped = MatrixXd::Constant(2 * static_cast<int64_t>(layout.groups.size() + 2), npar, kNaN);
  auto set_row = [&](size_t g, size_t r, const Eigen::Vector2d& v) {
    grouped(2 * static_cast<int64_t>(g), targets[r]) = v(0);
    grouped(2 * static_cast<int64_t>(g) + 1, targets[r]) = v(1);
  };
  for (size_t g = 0; g < layout.groups.size(); ++g) {
    log().debug("asym_impacts: group {} frozen", layout.group_names[g]);
    const auto frozen = intervals_with_frozen(layout.groups[g]);
    for (size_t r = 0; r < targets.size(); ++r) set_row(g, r, quadrature_difference(totals[r], frozen[r]));
    glabels.push_back(layout.group_names[g]);
  }
  std::vector<int64_t> constrained;
  for (int64_t i = ps.nparams(); i < npar; ++i)
    if (ps.constraint_weights(i) > 0.0) constrained.push_back(i);
  const auto stat = intervals_with_frozen(constrained);
  for (size_t r = 0; r < targets.size(); ++r) {
    set_row(layout.groups.size(), r, stat[r]);
    set_row(layout.groups.size() + 1, r, totals[r]);
  }
  glabels.push_back("stat");
  glabels.push_back("Total");
  write_down_up_table(out, group, "impacts_asym_grouped", glabels, grouped);
  log().info("asym_impacts: total {:.1f}s", seconds_since(clock));
}

}  // namespace rabbit::cli
