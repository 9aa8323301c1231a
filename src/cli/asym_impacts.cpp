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
#include "refit_pool.hpp"

namespace rabbit::cli {
namespace {

using Eigen::MatrixXd;
using Eigen::VectorXd;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// One contour search: Δ(2NLL) = 1 around the best fit x (docs/output-format.md "Likelihood scans and
// contours") on one side of parameter p with `floating` profiled, each step a profile fit with the run's
// minimizer. The searches are independent of each other and run as parallel refits (refit_pool.hpp).
struct ContourTask {
  const std::vector<int64_t>* floating;
  int64_t p;
  int side;  // -1 or +1
};

// x_contour − x̂ of one search on the worker's fitter; NaN when the search fails.
VectorXd contour_displacement(RefitWorker& w, const ContourTask& t, const VectorXd& x, const MatrixXd& cov,
                              double lmin) {
  const postfit::ProfileMinimizer minimizer = [&w](Objective& obj, const std::vector<int64_t>& fl,
                                                   const VectorXd& start) {
    return w.session.profile_minimize(obj, fl, start);
  };
  // The Gaussian start moves the floating parameters only: the others stay at x̂ (rabbit zeroes the frozen
  // ones' start displacement alike).
  VectorXd column = VectorXd::Zero(cov.rows());
  for (auto i : *t.floating) column(i) = cov(i, t.p);
  auto pt = postfit::contour_point(*w.ctx.fitter, minimizer, *t.floating, x, lmin, t.p, column, 1.0, t.side,
                                   w.ctx.options.asym_impacts_tol);
  if (!pt.success)
    log().warn("--asymImpacts: the contour search for {} (side {:+d}) did not converge",
               w.ctx.model->parameters.names[t.p], t.side);
  return pt.displacement;
}

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
  const double lmin = ctx.fitter->value(x);
  auto clock = Clock::now();

  // The floating sets: nothing frozen (0), each group frozen at x̂ (1 + g), every constrained systematic
  // frozen (last, "stat").
  std::vector<std::vector<int64_t>> sets{layout.floating};
  auto without = [&](const std::vector<int64_t>& members) {
    std::vector<int64_t> floating;
    for (auto i : layout.floating)
      if (std::find(members.begin(), members.end(), i) == members.end()) floating.push_back(i);
    return floating;
  };
  for (const auto& members : layout.groups) sets.push_back(without(members));
  std::vector<int64_t> constrained;
  for (int64_t i = ps.nparams(); i < npar; ++i)
    if (ps.constraint_weights(i) > 0.0) constrained.push_back(i);
  sets.push_back(without(constrained));

  // Every search, in the order of the sequential run: per nuisance its two sides (the displacement of every
  // parameter, impacts_asym), then per floating set the two sides of each POI/NOI that floats in it.
  const std::vector<int64_t> nuisances = selected_nuisances(ctx);
  std::vector<ContourTask> tasks;
  std::vector<int64_t> nuisance_task(nuisances.size(), -1);  // index of the side −1 search, or -1 (frozen)
  std::vector<std::string> labels;
  for (size_t k = 0; k < nuisances.size(); ++k) {
    const int64_t p = nuisances[k];
    labels.push_back(ps.names[p]);
    if (ps.frozen[p]) {
      log().warn("--asymImpacts: {} is frozen; its row stays 0", ps.names[p]);
      continue;
    }
    nuisance_task[k] = static_cast<int64_t>(tasks.size());
    for (int side : {-1, 1}) tasks.push_back({&sets[0], p, side});
  }
  const std::vector<int64_t>& targets = layout.reported;
  std::vector<std::vector<int64_t>> interval_task(sets.size(), std::vector<int64_t>(targets.size(), -1));
  for (size_t s = 0; s < sets.size(); ++s)
    for (size_t r = 0; r < targets.size(); ++r) {
      if (ps.frozen[targets[r]] || std::find(sets[s].begin(), sets[s].end(), targets[r]) == sets[s].end())
        continue;
      interval_task[s][r] = static_cast<int64_t>(tasks.size());
      for (int side : {-1, 1}) tasks.push_back({&sets[s], targets[r], side});
    }
  log().info("asym_impacts: scanning {} nuisances", nuisances.size());
  std::vector<VectorXd> found(tasks.size());
  run_refits(ctx, session, "asym impacts", tasks.size(),
             [&](RefitWorker& w, size_t i) { found[i] = contour_displacement(w, tasks[i], x, cov, lmin); });

  // Per nuisance: the displacement of every parameter at the two contour points that extremise it.
  MatrixXd rows = MatrixXd::Zero(2 * static_cast<int64_t>(nuisances.size()), npar);
  for (size_t k = 0; k < nuisances.size(); ++k) {
    if (nuisance_task[k] < 0) continue;
    for (int side = 0; side < 2; ++side) {
      const VectorXd& d = found[static_cast<size_t>(nuisance_task[k] + side)];
      if (d.allFinite())
        rows.row(2 * static_cast<int64_t>(k) + side) = d.transpose();  // failed: 0, as rabbit
    }
  }
  write_down_up_table(out, group, "impacts_asym", labels, rows);

  // Grouped (freeze-group): per POI/NOI its interval with nothing frozen (Total), with each group frozen at x̂
  // (group: the quadrature difference to Total) and with every constrained systematic frozen (stat).
  auto intervals = [&](size_t s) {
    std::vector<Eigen::Vector2d> iv(targets.size(), Eigen::Vector2d(kNaN, kNaN));
    for (size_t r = 0; r < targets.size(); ++r) {
      const int64_t t = interval_task[s][r];
      if (t < 0) continue;
      iv[r] = Eigen::Vector2d(found[static_cast<size_t>(t)](targets[r]),
                              found[static_cast<size_t>(t) + 1](targets[r]));
    }
    return iv;
  };
  const std::vector<Eigen::Vector2d> totals = intervals(0);
  std::vector<std::string> glabels;
  MatrixXd grouped = MatrixXd::Constant(2 * static_cast<int64_t>(layout.groups.size() + 2), npar, kNaN);
  auto set_row = [&](size_t g, size_t r, const Eigen::Vector2d& v) {
    grouped(2 * static_cast<int64_t>(g), targets[r]) = v(0);
    grouped(2 * static_cast<int64_t>(g) + 1, targets[r]) = v(1);
  };
  for (size_t g = 0; g < layout.groups.size(); ++g) {
    const auto frozen = intervals(1 + g);
    for (size_t r = 0; r < targets.size(); ++r) set_row(g, r, quadrature_difference(totals[r], frozen[r]));
    glabels.push_back(layout.group_names[g]);
  }
  const auto stat = intervals(sets.size() - 1);
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
