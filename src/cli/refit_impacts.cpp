#include "refit_impacts.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "asym_impacts.hpp"
#include "rabbit/core/error.hpp"
#include "rabbit/core/logging.hpp"
#include "refit_pool.hpp"

namespace rabbit::cli {
namespace {

using Eigen::MatrixXd;
using Eigen::VectorXd;
using result::Axis;

// One refit kind's result: per source the two refits' parameter shifts, rows (source, side) in the
// order of rabbit's axis_downUpVar (bin 0, bin 1); docs/output-format.md "Impacts by refits".
struct RefitTable {
  std::vector<std::string> labels;
  std::vector<int64_t> sources;  // x-index of each label
  MatrixXd shifts;               // [2 * labels, npar]
};

// The quadrature envelope of the rows of `members` (docs/output-format.md "Impacts by refits"): per
// parameter, lower = −sqrt(Σ min(0, v_bin0, v_bin1)²) and upper = sqrt(Σ max(0, v_bin0, v_bin1)²).
MatrixXd envelope(const MatrixXd& shifts, const std::vector<int64_t>& members) {
  const int64_t npar = shifts.cols();
  VectorXd lower = VectorXd::Zero(npar), upper = VectorXd::Zero(npar);
  for (auto k : members) {
    for (int64_t j = 0; j < npar; ++j) {
      const double lo = std::min({0.0, shifts(2 * k, j), shifts(2 * k + 1, j)});
      const double hi = std::max({0.0, shifts(2 * k, j), shifts(2 * k + 1, j)});
      lower(j) += lo * lo;
      upper(j) += hi * hi;
    }
  }
  MatrixXd out(2, npar);
  out.row(0) = -lower.cwiseSqrt().transpose();
  out.row(1) = upper.cwiseSqrt().transpose();
  return out;
}

// Writes <name> [impacts, downUpVar, parms] and <name>_grouped: one envelope per group of `groups` holding a
// source, then "Total" over all sources.
void write_table(ResultLayoutWriter& out, result::Group group, const std::string& name, const RefitTable& t,
                 const std::vector<std::string>& group_names,
                 const std::vector<std::vector<int64_t>>& groups) {
  const int64_t npar = t.shifts.cols();
  std::vector<std::string> glabels;
  std::vector<MatrixXd> genv;
  for (size_t g = 0; g < groups.size(); ++g) {
    std::vector<int64_t> rows;
    for (size_t k = 0; k < t.sources.size(); ++k)
      if (std::find(groups[g].begin(), groups[g].end(), t.sources[k]) != groups[g].end())
        rows.push_back(static_cast<int64_t>(k));
    if (rows.empty()) continue;
    glabels.push_back(group_names[g]);
    genv.push_back(envelope(t.shifts, rows));
  }
  std::vector<int64_t> all(t.sources.size());
  for (size_t k = 0; k < all.size(); ++k) all[k] = static_cast<int64_t>(k);
  glabels.push_back("Total");
  genv.push_back(envelope(t.shifts, all));

  write_down_up_table(out, group, name, t.labels, t.shifts);
  MatrixXd grouped(2 * static_cast<int64_t>(genv.size()), npar);
  for (size_t g = 0; g < genv.size(); ++g) grouped.middleRows(2 * static_cast<int64_t>(g), 2) = genv[g];
  write_down_up_table(out, group, name + "_grouped", glabels, grouped);
}

// One refit from `start` over the run's floating parameters on the worker's fitter, with centre i of its
// model moved to `centre` for the refit (restored after it, also when it throws).
VectorXd refit(RefitWorker& w, int64_t i, double centre, const VectorXd& start, const std::string& what) {
  auto& centres = w.ctx.model->parameters.constraint_centres;
  const double saved = centres(i);
  centres(i) = centre;
  MinimizerResult r;
  VectorXd x;
  try {
    x = w.session.profile_minimize(*w.ctx.fitter, w.ctx.layout.floating, start, &r);
  } catch (...) {
    centres(i) = saved;
    throw;
  }
  centres(i) = saved;
  if (!r.converged) log().warn("{}: the refit did not converge ({})", what, r.stop_reason);
  return x;
}

// --nonProfiledImpacts (rabbit's nonprofiled_impacts_parms): each frozen parameter's value and constraint
// centre move to x0 + s·σ, s = +1 then −1, σ = 1/sqrt(cw) (1 without a constraint); the row holds
// x_best − x_refit, as rabbit stores it.
RefitTable nonprofiled_impacts(FitContext& ctx, FitSession& session, const VectorXd& xbest) {
  auto& ps = ctx.model->parameters;
  RefitTable t;
  t.sources = ps.frozen_indices();
  t.shifts.resize(2 * static_cast<int64_t>(t.sources.size()), ps.size());
  for (auto i : t.sources) t.labels.push_back(ps.names[i]);
  const VectorXd centres = ps.constraint_centres;
  // Refit 2k + side: source k moved by +σ (side 0) or −σ (side 1).
  run_refits(ctx, session, "nonprofiled impacts", 2 * t.sources.size(), [&](RefitWorker& w, size_t j) {
    const size_t k = j / 2;
    const int64_t i = t.sources[k];
    if (j % 2 == 0) log().debug("Now at parameter {}", ps.names[i]);
    const double sigma = ps.constraint_weights(i) > 0.0 ? 1.0 / std::sqrt(ps.constraint_weights(i)) : 1.0;
    const double shifted = centres(i) + (j % 2 == 0 ? sigma : -sigma);
    VectorXd start = xbest;
    start(i) = shifted;
    const VectorXd x = refit(w, i, shifted, start, fmt::format("--nonProfiledImpacts {}", ps.names[i]));
    t.shifts.row(static_cast<int64_t>(j)) = (xbest - x).transpose();
  });
  return t;
}

// The --globalAsymImpacts sources (rabbit's global_asym_impacts_parms): constrained systematics in input
// order, then priored param-model parameters as <name>_prior; Include/Exclude match the bare names.
void select_global_sources(const FitContext& ctx, RefitTable& t) {
  const auto& ps = ctx.model->parameters;
  const auto& o = ctx.options;
  auto select = [&](int64_t begin, int64_t end, const char* suffix) {
    std::vector<std::string> names(ps.names.begin() + begin, ps.names.begin() + end);
    std::vector<bool> keep(names.size(), true);
    if (o.global_asym_impacts_include) {
      std::vector<bool> in(names.size(), false);
      for (auto k : match_names(*o.global_asym_impacts_include, names, "--globalAsymImpactsInclude"))
        in[k] = true;
      for (size_t k = 0; k < names.size(); ++k) keep[k] = keep[k] && in[k];
    }
    if (o.global_asym_impacts_exclude)
      for (auto k : match_names(*o.global_asym_impacts_exclude, names, "--globalAsymImpactsExclude"))
        keep[k] = false;
    for (int64_t i = begin; i < end; ++i) {
      if (!keep[i - begin] || !(ps.constraint_weights(i) > 0.0)) continue;
      t.sources.push_back(i);
      t.labels.push_back(ps.names[i] + suffix);
    }
  };
  select(ps.nparams(), ps.size(), "");
  select(0, ps.nparams(), "_prior");
}

// --globalAsymImpacts: each source's constraint centre moves by s·Sigma·σ (s = −1 then +1, σ = 1/sqrt(cw));
// the refit starts at x_best with that parameter moved alike, or with --globalAsymImpactsLinearWarmstart at
// the Gaussian prediction x_best + C[:, i]·cw_i·ξ'_i·shift (docs/output-format.md "Impacts by refits"); the
// row holds x_refit − x_best.
RefitTable global_asym_impacts(FitContext& ctx, FitSession& session, const VectorXd& xbest,
                               const MatrixXd& cov, bool have_cov) {
  auto& ps = ctx.model->parameters;
  const auto& o = ctx.options;
  RefitTable t;
  select_global_sources(ctx, t);
  if (o.global_asym_impacts_linear_warmstart && !have_cov)  // refused up front (option_rules.cpp)
    throw OptionError(
        "--globalAsymImpactsLinearWarmstart needs the covariance (not available with --noHessian)");
  VectorXd xi, d1, d2;
  ps.transform(xbest, xi, d1, d2);
  log().info(
      "global_asym_impacts: shifting constraint centers by +/- {} sigma and re-fitting for {} sources{}",
      py_float(o.global_asym_impacts_sigma), t.sources.size(),
      o.global_asym_impacts_linear_warmstart ? " (linear warm-start enabled)" : "");
  t.shifts.resize(2 * static_cast<int64_t>(t.sources.size()), ps.size());
  const VectorXd centres = ps.constraint_centres;
  auto total = Clock::now();
  // Refit 2k + side: source k's centre moved by −Sigma·σ (side 0) or +Sigma·σ (side 1).
  run_refits(ctx, session, "global asym impacts", 2 * t.sources.size(), [&](RefitWorker& w, size_t j) {
    const size_t k = j / 2;
    const int64_t i = t.sources[k];
    if (j % 2 == 0) log().debug("  [{}/{}] x0-shift refit for {}", k + 1, t.sources.size(), t.labels[k]);
    const double width = 1.0 / std::sqrt(ps.constraint_weights(i));
    const double shift = (j % 2 == 0 ? -1.0 : 1.0) * o.global_asym_impacts_sigma * width;
    VectorXd start = xbest;
    if (o.global_asym_impacts_linear_warmstart)
      start += cov.col(i) * (ps.constraint_weights(i) * d1(i) * shift);
    else
      start(i) += shift;
    const VectorXd x =
        refit(w, i, centres(i) + shift, start, fmt::format("--globalAsymImpacts {}", t.labels[k]));
    t.shifts.row(static_cast<int64_t>(j)) = (x - xbest).transpose();
  });
  log().info("global_asym_impacts: total {:.1f}s", seconds_since(total));
  return t;
}

}  // namespace

void write_down_up_table(ResultLayoutWriter& out, result::Group group, const std::string& name,
                         const std::vector<std::string>& labels, const MatrixXd& rows) {
  // Row-major [source, bin, parameter] is the row order of `rows`.
  const int64_t npar = rows.cols();
  std::vector<double> values(static_cast<size_t>(rows.size()));
  for (int64_t r = 0; r < rows.rows(); ++r)
    for (int64_t j = 0; j < npar; ++j) values[r * npar + j] = rows(r, j);
  result::write_hist(group, name,
                     {Axis::strcat("impacts", labels), out.shared("downUpVar"), out.shared("parms")},
                     values.data(), nullptr);
}

bool refit_impacts_requested(const FitOptions& o) {
  return o.non_profiled_impacts || o.asym_impacts || o.global_asym_impacts;
}

void check_refit_impacts(const FitContext& ctx) {
  const auto& o = ctx.options;
  if (o.non_profiled_impacts && ctx.model->parameters.frozen_indices().empty())
    throw OptionError("--nonProfiledImpacts: no parameter is frozen (freeze them with --freezeParameters)");
  if (o.global_asym_impacts) {
    RefitTable t;
    select_global_sources(ctx, t);
    if (t.sources.empty())
      throw OptionError(
          "--globalAsymImpacts: no constrained parameter selected (see --globalAsymImpactsInclude/Exclude)");
  }
}

void write_refit_impacts(FitContext& ctx, FitSession& session, ResultLayoutWriter& out, result::Group group,
                         const VectorXd& x, const MatrixXd& cov, bool have_cov) {
  const auto& o = ctx.options;
  const auto& layout = ctx.layout;
  if (o.non_profiled_impacts) {
    const RefitTable t = nonprofiled_impacts(ctx, session, x);
    write_table(out, group, "nonprofiled_impacts_asym", t, layout.group_names, layout.groups);
  }
  if (o.asym_impacts) write_asym_impacts(ctx, session, out, group, x, cov);
  if (o.global_asym_impacts) {
    const RefitTable t = global_asym_impacts(ctx, session, x, cov, have_cov);
    write_table(out, group, "global_impacts_asym", t, layout.group_names, layout.groups);
  }
}

}  // namespace rabbit::cli
