// The observable regulariser of a CPU shard (docs/model.md "The regularisation term"): the
// penalty on the full predicted yields ν_full with its gradient and curvature, and the check of
// which configurations it is admitted in.
#include <algorithm>

#include "rabbit/core/error.hpp"
#include "rabbit/model/regularizer.hpp"
#include "shard_evaluation.hpp"

namespace rabbit::cpu_detail {

using cpu::BBKind;
using cpu::BinObservation;
using cpu::HyperDual;
using Eigen::MatrixXd;
using Eigen::VectorXd;

void check_observable_regularizers(ShardState& s) {
  // observable regularisers (SVD) act on the full yields, with BB only on bins whose β does not depend on
  // the fit (masked channels), see docs/likelihood.md. Every shard can compute the yields of all bins; the
  // first one (the one that starts at bin 0) adds the penalty of all of them, the others none
  // (docs/sharding-and-gpu.md "Regularisers and shards").
  s.regularized_ = !s.model_->regularizers.empty() && needs_observables(*s.model_) && s.begin_ == 0;
  if (s.regularized_) {
    if (s.has_bb()) {
      for (const auto& reg : s.model_->regularizers) {
        const VectorXd touched = reg->observable_footprint();
        if (touched.size() == 0) continue;
        if (touched.head(s.nbins_).cwiseAbs().maxCoeff() > 0.0)
          throw OptionError(
              "-r/--regularization on an observed (non-masked) channel together with bin-by-bin statistics "
              "is not "
              "supported; use --noBinByBinStat or regularise a masked channel");
        for (int64_t b = s.nbins_; b < s.nbinsfull_; ++b)
          if (s.betavar_rows_[b] && touched[b] != 0.0)
            throw OptionError(
                "-r/--regularization on a masked channel that receives beta variations (hbetavariations) "
                "with "
                "--binByBinStatMode full is not supported (the penalty would depend on the profiled beta)");
      }
      // add_regularizer's masked yields of a covariance fit: with beta variations they need the coupled
      // β̂, which comes from the evaluation that adds the penalty.
      if (s.coupled && s.betavar_)
        throw OptionError(
            "-r/--regularization with --covarianceFit, bin-by-bin statistics and beta variations "
            "(hbetavariations) is not supported (the penalty would depend on the profiled beta)");
    }
  }
}

// Adds exp(2τ)·penalty(ν_full) (docs/model.md "The regularisation term"): the value, and through accumulate()
// with φ = ∂pen/∂ν the gradient 𝒥ᵀφ and the second-order yield term 𝒞(φ). Returns 𝒥ᵀ (n × B_f) when curvature
// is needed.
inline MatrixXd ShardEvaluation::add_regularizer(const Request& req, Accum& acc, bool derivs,
                                                 VectorXd& nu_full) {
  const int64_t Bf = s.nbinsfull_;
  if (s.coupled && s.has_bb()) {
    // A covariance fit's β̂ is solved over all observed bins by this evaluation itself (run_coupled), so
    // asking the yield model for profiled yields would start it again, without end. With BB the penalty
    // reads masked bins only (check_observable_regularizers), whose yields take β⁰ and need no β̂; the
    // observed bins, which it does not read, are filled without β.
    VectorXd masked;
    owner.expected_yields(*req.xi, 0, s.nbins_, YieldModel::BetaMode::none, &nu_full, nullptr);
    owner.expected_yields(*req.xi, s.nbins_, Bf, YieldModel::BetaMode::profiled, &masked, nullptr);
    nu_full.conservativeResize(Bf);
    nu_full.tail(Bf - s.nbins_) = masked;
  } else {
    owner.expected_yields(*req.xi, 0, Bf, YieldModel::BetaMode::profiled, &nu_full, nullptr);
  }
  VectorXd gnu = VectorXd::Zero(Bf);
  acc.f += observable_penalty(*s.model_, nu_full, derivs ? &gnu : nullptr);
  if (!derivs) return MatrixXd();
  int64_t maxe = std::max<int64_t>(L.max_entries(0, Bf), 1);
  BinScratch sc;
  sc.resize(maxe, 1, 1, pt.k);
  for (int64_t b = 0; b < Bf; ++b) {
    if (gnu[b] == 0.0) continue;
    yields(b, sc, 0);
    for (int64_t e = L.bin_ptr[b]; e < L.bin_ptr[b + 1]; ++e) {
      const int64_t i = e - L.bin_ptr[b];
      double mu = 1.0;  // β fixed at β⁰ here (masked channels, or no BB)
      if (s.bb_ == BBKind::gamma || s.bb_ == BBKind::normal_multiplicative) {
        const int64_t f = s.bb_full_ ? L.entry_flat[e] : b;
        if (!s.bbmask_[f] && (s.bb_full_ || prof.active(e))) mu = s.beta0_[f];
      }
      sc.phi[i] = gnu[b] * mu;
      sc.U[i] = 0.0;
      sc.d[i] = 0.0;
    }
    sc.M[0] = 0.0;
    accumulate(b, sc, 0, 0, req, acc, nullptr);
  }
  if (req.hess) {
    flush_E(acc);
    flush_J(acc);
  }
  if (pt.k == 0 && !req.hess) return MatrixXd();
  // with BB the regularised bins are masked-channel bins (checked at construction): the observed rows
  // do not enter the penalty
  MatrixXd Jt = MatrixXd::Zero(n, Bf);
  const int64_t first = s.has_bb() ? s.nbins_ : 0;
  if (first < Bf)
    Jt.rightCols(Bf - first) =
        owner.yield_jacobian(*req.xi, first, Bf, YieldModel::BetaMode::profiled).transpose();
  return Jt;
}

}  // namespace rabbit::cpu_detail
