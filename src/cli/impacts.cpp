#include "impacts.hpp"

#include <optional>
#include <string>
#include <vector>

#include "rabbit/postfit/global_impact_terms.hpp"
#include "rabbit/postfit/uncertainties.hpp"

namespace rabbit::cli {
namespace {

using Eigen::MatrixXd;
using Eigen::VectorXd;

// What every kind reads; the parts that two kinds share are computed once, on first use.
class ImpactInputs {
 public:
  ImpactInputs(FitContext& ctx, const VectorXd& x, const MatrixXd& cov, const MatrixXd& hess)
      : ctx(ctx), x(x), cov(cov), hess(hess) {}

  FitContext& ctx;
  const VectorXd& x;
  const MatrixXd& cov;
  const MatrixXd& hess;

  /// Global impacts per source: sqrt(cw_j) C[r, j].
  const MatrixXd& global_per_source() {
    if (!global_per_source_) {
      const auto& ps = ctx.model->parameters;
      global_per_source_ =
          postfit::global_impacts(cov, ps.constraint_weights, ps.frozen, ctx.layout.reported);
    }
    return *global_per_source_;
  }
  /// The squared MC-stat part of global impacts (absent without BB).
  const postfit::McStatImpacts* mc_stat() {
    if (!ctx.bb_on) return nullptr;
    if (!mc_stat_)
      mc_stat_ = postfit::mc_stat_global_impacts(*ctx.model, *ctx.fitter, ctx.yield_model(), x, cov,
                                                 ctx.layout.reported, ctx.bb_full, ctx.input->nproc);
    return &*mc_stat_;
  }

 private:
  std::optional<MatrixXd> global_per_source_;
  std::optional<postfit::McStatImpacts> mc_stat_;
};

struct ImpactValues {
  MatrixXd per_parameter;  // [nimp, npar]
  MatrixXd grouped;        // [nimp, columns of the grouped axis]
};

// Grouped global impacts; stat_sq given: the Gaussian kind's data-stat part, else the remainder.
MatrixXd global_grouped(ImpactInputs& in, const VectorXd* stat_sq) {
  const auto* mc = in.mc_stat();
  return postfit::global_grouped_impacts(in.cov, in.global_per_source(), in.ctx.layout,
                                         mc ? &mc->total_sq : nullptr,
                                         mc && in.ctx.bb_full ? &mc->per_process_sq : nullptr, stat_sq);
}

ImpactValues traditional(ImpactInputs& in) {
  auto& ctx = in.ctx;
  ImpactValues v;
  v.per_parameter = postfit::traditional_impacts(in.cov, ctx.layout.reported);
  // binByBinStat: the difference to the Hessian with β held fixed.
  MatrixXd hess_fixed;
  const MatrixXd* hf = nullptr;
  if (ctx.bb_on) {
    VectorXd g;
    ctx.fitter->value_grad_hess(in.x, g, hess_fixed, false);
    hf = &hess_fixed;
  }
  v.grouped = postfit::traditional_grouped_impacts(in.cov, in.hess, hf, ctx.layout);
  return v;
}

ImpactValues global(ImpactInputs& in) {
  return {in.global_per_source(), global_grouped(in, nullptr)};
}

ImpactValues gaussian_global(ImpactInputs& in) {
  auto& ctx = in.ctx;
  const VectorXd stat_sq = postfit::gaussian_stat_impacts_sq(
      *ctx.model, *ctx.input, *ctx.fitter, ctx.yield_model(), in.x, in.cov, ctx.layout.reported);
  return {in.global_per_source(), global_grouped(in, &stat_sq)};
}

struct ImpactKind {
  const char* name;                // histograms <name> and <name>_grouped
  const char* per_parameter_axis;  // shared axis ids of their columns
  const char* grouped_axis;
  bool FitOptions::*option;
  ImpactValues (*compute)(ImpactInputs&);
};

// In the order they are written.
const std::vector<ImpactKind>& impact_kinds() {
  static const std::vector<ImpactKind> kinds = {
      {"impacts", "impacts", "impacts_grouped", &FitOptions::do_impacts, traditional},
      {"global_impacts", "impacts", "global_impacts_grouped", &FitOptions::global_impacts, global},
      {"gaussian_global_impacts", "impacts", "global_impacts_grouped", &FitOptions::gaussian_global_impacts,
       gaussian_global},
  };
  return kinds;
}

std::vector<double> row_major(const MatrixXd& m) {
  Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> r = m;
  return std::vector<double>(r.data(), r.data() + r.size());
}

}  // namespace

bool impacts_requested(const FitOptions& o) {
  for (const auto& kind : impact_kinds())
    if (o.*kind.option) return true;
  return false;
}

void write_impacts(FitContext& ctx, ResultLayoutWriter& out, result::Group group, const VectorXd& x,
                   const MatrixXd& cov, const MatrixXd& hess) {
  ImpactInputs in(ctx, x, cov, hess);
  const result::Axis poinoi = out.shared("poinoi");
  for (const auto& kind : impact_kinds()) {
    if (!(ctx.options.*kind.option)) continue;
    const ImpactValues v = kind.compute(in);
    const auto a = row_major(v.per_parameter), b = row_major(v.grouped);
    result::write_hist(group, kind.name, {poinoi, out.shared(kind.per_parameter_axis)}, a.data(), nullptr);
    result::write_hist(group, std::string(kind.name) + "_grouped", {poinoi, out.shared(kind.grouped_axis)},
                       b.data(), nullptr);
  }
}

}  // namespace rabbit::cli
