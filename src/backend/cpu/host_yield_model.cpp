// The host YieldModel of the CPU backend (docs/architecture.md "The seams"): expected yields over
// any range of the full bin axis (masked channels included) with β none, stored or profiled, the
// per-process yield Jacobian, ∂ν/∂β and the full-NLL constants. The per-bin yield Jacobian is in
// yield_jacobian.cpp.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "rabbit/backend/cpu/cpu_shard_evaluator.hpp"
#include "rabbit/core/error.hpp"
#include "shard_evaluation.hpp"

namespace rabbit {

using cpu::BBKind;
using cpu_detail::BetaTreatment;
using cpu_detail::BinScratch;
using cpu_detail::EntryLayout;
using cpu_detail::ShardEvaluation;
using cpu_detail::ShardState;
using Eigen::MatrixXd;
using Eigen::VectorXd;

// ---- postfit -------------------------------------------------------------------------------------

void CpuShardEvaluator::expected_yields_rows(const VectorXd& xi, int64_t first, int64_t last, BetaMode mode,
                                             VectorXd* per_bin, MatrixXd* per_process) {
  ShardState& s = *state_;
  if (first < 0 || last < first || last > s.nbinsfull_)
    throw Error(
        fmt::format("expected_yields: bin range [{}, {}) outside the {} bins", first, last, s.nbinsfull_));
  ShardEvaluation eng(s, *this);
  eng.pt.prepare(s, xi, nullptr);
  const EntryLayout& L = s.layout;
  const int64_t nb = last - first, P = s.nproc_;
  if (per_bin) per_bin->setZero(nb);
  if (per_process) per_process->setZero(nb, P);
  const int64_t bw = s.beta_width();
  VectorXd coupled_beta;
  if (mode == BetaMode::profiled && has_bb() && s.coupled && (first < s.nbins_ || s.betavar_))
    coupled_beta = profiled_beta(xi);
  int64_t maxe = L.max_entries(first, last);
  BinScratch sc;
  sc.resize(std::max<int64_t>(maxe, 1), 1, 1, 0);
  std::vector<double> beta(std::max<int64_t>(bw, 1));
  VectorXd delta;
  if (s.betavar_ && last > s.nbins_) delta = eng.beta_variation_shifts(mode, coupled_beta);
  for (int64_t b = first; b < last; ++b) {
    eng.yields(b, sc, 0);
    const int64_t e0 = L.bin_ptr[b], e1 = L.bin_ptr[b + 1];
    const bool use_beta = eng.postfit_bin_beta(b, mode, coupled_beta, sc, beta.data());
    if (use_beta && s.betavar_ && b >= s.nbins_) eng.apply_beta_variations(b, delta, sc, nullptr);
    double A = 0.0;
    for (int64_t e = e0; e < e1; ++e)
      if (eng.prof.active(e)) A += sc.N[e - e0];
    // lite normal-additive: the bin's s·β is distributed in proportion to N/A (A' = 1 where A ≤ 0,
    // so there the addition is s·β·A); legacy per-bin input has no A' and adds s·β (rabbit's N/ν⁰)
    const bool divide_by_A = A > 0.0 || (s.legacy_sumw_ && A != 0.0);
    const double Asafe = divide_by_A ? A : 1.0;
    double total = 0.0;
    for (int64_t e = e0; e < e1; ++e) {
      const int p = L.entry_proc[e];
      const int64_t f = L.entry_flat[e];
      double y = sc.N[e - e0];
      if (use_beta) {
        if (s.bb_ == BBKind::normal_additive) {
          if (!s.bb_full_)
            y += s.sqrt_sigma2_[b] * beta[0] * (eng.prof.active(e) ? sc.N[e - e0] : 0.0) / Asafe;
        } else if (s.bb_full_) {
          if (!s.bbmask_[f]) y *= beta[p];
        } else if (!s.bbmask_[b] && eng.prof.active(e)) {
          y *= beta[0];
        }
      }
      total += y;
      if (per_process) (*per_process)(b - first, p) += y;
    }
    if (use_beta && s.bb_ == BBKind::normal_additive && s.bb_full_) {
      for (int64_t p = 0; p < P; ++p) {
        const double add = s.sqrt_sigma2_[b * P + p] * beta[p];
        total += add;
        if (per_process) (*per_process)(b - first, p) += add;
      }
    }
    if (per_bin) (*per_bin)[b - first] = total;
  }
}

void CpuShardEvaluator::process_yield_jacobian_rows(const VectorXd& xi, int64_t first, int64_t last,
                                                    BetaMode mode, Eigen::Ref<MatrixXd> J) {
  ShardState& s = *state_;
  if (first < 0 || last < first || last > s.nbinsfull_)
    throw Error(fmt::format("process_yield_jacobian: bin range [{}, {}) outside the {} bins", first, last,
                            s.nbinsfull_));
  ShardEvaluation eng(s, *this);
  eng.pt.prepare(s, xi, nullptr);
  const EntryLayout& L = s.layout;
  const int64_t M = s.nparams_, n = s.nx_, P = s.nproc_;
  J.setZero();
  const int64_t bw = s.beta_width();
  VectorXd coupled_beta;
  if (mode == BetaMode::profiled && has_bb() && s.coupled && (first < s.nbins_ || s.betavar_))
    coupled_beta = profiled_beta(xi);
  int64_t maxe = L.max_entries(first, last);
  BinScratch sc;
  sc.resize(std::max<int64_t>(maxe, 1), 1, 1, 0);
  std::vector<double> beta(std::max<int64_t>(bw, 1));
  VectorXd delta;
  if (s.betavar_ && last > s.nbins_) delta = eng.beta_variation_shifts(mode, coupled_beta);
  for (int64_t b = first; b < last; ++b) {
    const int64_t e0 = L.bin_ptr[b], e1 = L.bin_ptr[b + 1];
    eng.yields(b, sc, 0);
    const bool use_beta = eng.postfit_bin_beta(b, mode, coupled_beta, sc, beta.data());
    if (use_beta && s.betavar_ && b >= s.nbins_) eng.apply_beta_variations(b, delta, sc, nullptr);
    double A = 0.0;
    VectorXd JA = VectorXd::Zero(n);
    for (int64_t e = e0; e < e1; ++e) {
      if (!eng.prof.active(e)) continue;
      A += sc.N[e - e0];
      const int p = L.entry_proc[e];
      if (M > 0 && eng.pt.bin_dependent) {
        eng.pt.add_rate_gradient(b, p, sc.a[e - e0], JA.data());
      } else if (M > 0) {
        JA.head(M) += sc.a[e - e0] * eng.pt.jr.row(p).transpose();
      }
      L.row_E_axpy(e, sc.c[e - e0], eng.pt.hp.data(), JA.data() + M);
    }
    // lite normal-additive: the bin's s·β is distributed in proportion to N/A (A' = 1 where A ≤ 0,
    // so there the addition is s·β·A); legacy per-bin input has no A' and adds s·β (rabbit's N/ν⁰)
    const bool divide_by_A = A > 0.0 || (s.legacy_sumw_ && A != 0.0);
    const double Asafe = divide_by_A ? A : 1.0;
    for (int64_t e = e0; e < e1; ++e) {
      const int p = L.entry_proc[e];
      const int64_t f = L.entry_flat[e];
      double kv = 1.0;
      double extra = 0.0;  // coefficient of J_A (normal-additive lite)
      if (use_beta) {
        if (s.bb_ == BBKind::normal_additive) {
          if (!s.bb_full_ && eng.prof.active(e)) {
            const double sb = s.sqrt_sigma2_[b] * beta[0];
            kv += sb / Asafe;
            if (divide_by_A) extra = -sb * sc.N[e - e0] / (Asafe * Asafe);
          }
        } else if (s.bb_full_) {
          if (!s.bbmask_[f]) kv = beta[p];
        } else if (!s.bbmask_[b] && eng.prof.active(e)) {
          kv = beta[0];
        }
      }
      VectorXd r = VectorXd::Zero(n);
      if (M > 0 && eng.pt.bin_dependent) {
        eng.pt.add_rate_gradient(b, p, kv * sc.a[e - e0], r.data());
      } else if (M > 0) {
        r.head(M) = (kv * sc.a[e - e0]) * eng.pt.jr.row(p).transpose();
      }
      L.row_E_axpy(e, kv * sc.c[e - e0], eng.pt.hp.data(), r.data() + M);
      if (extra != 0.0) r += extra * JA;
      J.row((b - first) * P + p) = r.transpose();
    }
  }
}

MatrixXd CpuShardEvaluator::beta_yield_partials(const VectorXd& xi, int64_t first, int64_t last,
                                                BetaMode mode) {
  ShardState& s = *state_;
  if (first < 0 || last < first || last > s.nbinsfull_)
    throw Error(fmt::format("beta_yield_partials: bin range [{}, {}) outside the {} bins", first, last,
                            s.nbinsfull_));
  const int64_t nb = last - first, P = s.nproc_;
  MatrixXd D = MatrixXd::Zero(nb, bb_entries());
  // BetaMode::none: the yields are ν⁰, β is not a variable of them.
  if (!has_bb() || mode == BetaMode::none) return D;
  ShardEvaluation eng(s, *this);
  eng.pt.prepare(s, xi, nullptr);
  const EntryLayout& L = s.layout;
  VectorXd coupled_beta;
  if (mode == BetaMode::profiled && s.coupled && (first < s.nbins_ || s.betavar_))
    coupled_beta = profiled_beta(xi);
  int64_t maxe = std::max<int64_t>(L.max_entries(first, last), 1);
  BinScratch sc;
  sc.resize(maxe, 1, 1, 0);
  std::vector<double> beta(std::max<int64_t>(s.beta_width(), 1)), pre_N(P);
  VectorXd delta;
  if (s.betavar_ && last > s.nbins_) delta = eng.beta_variation_shifts(mode, coupled_beta);
  for (int64_t b = first; b < last; ++b) {
    const int64_t e0 = L.bin_ptr[b], e1 = L.bin_ptr[b + 1];
    eng.yields(b, sc, 0);
    eng.postfit_bin_beta(b, mode, coupled_beta, sc, beta.data());
    const bool varied = s.betavar_ && b >= s.nbins_;
    if (varied) {
      for (int64_t p = 0; p < P; ++p) pre_N[p] = sc.N[p];
      eng.apply_beta_variations(b, delta, sc, nullptr);
    }
    double A = 0.0;
    for (int64_t e = e0; e < e1; ++e)
      if (eng.prof.active(e)) A += sc.N[e - e0];
    auto row = D.row(b - first);
    if (s.bb_ == BBKind::normal_additive) {
      if (!s.bb_full_) {
        row[b] = s.sqrt_sigma2_[b] * (s.legacy_sumw_ || A > 0.0 ? 1.0 : A);
      } else {
        for (int64_t p = 0; p < P; ++p) row[b * P + p] = s.sqrt_sigma2_[b * P + p];
      }
      continue;
    }
    if (!s.bb_full_) {
      if (!s.bbmask_[b]) row[b] = A;
      continue;
    }
    for (int64_t e = e0; e < e1; ++e) {
      const int64_t f = L.entry_flat[e];
      if (!s.bbmask_[f]) row[f] += sc.N[e - e0];
    }
    if (!varied) continue;
    const auto& bv = *s.in.betavariations;
    for (int64_t p = 0; p < P; ++p) {
      const double n0 = s.in.norm[b * P + p];
      if (!(n0 > 0.0)) continue;
      const double mu = s.bbmask_[b * P + p] ? 1.0 : beta[p];
      for (int64_t j : s.betavar_sources_) {
        const int64_t f = j * P + p;
        const double c = bv[(b * s.nbins_ + j) * P + p];
        if (c != 0.0 && !s.bbmask_[f]) row[f] += mu * pre_N[p] / n0 * c * std::sqrt(s.kstat_[f]);
      }
    }
  }
  return D;
}

double CpuShardEvaluator::full_nll_constant() const {
  const ShardState& s = *state_;
  constexpr double half_log_2pi = 0.9189385332046727;
  double c = 0.0;
  if (s.likelihood_ == DataLikelihood::poisson) {
    for (int64_t b = s.begin_; b < s.end_; ++b) {
      const double n = s.nobs_[b];
      c += std::lgamma(n + 1.0) - n * s.lognobs_[b] + n;
    }
  }
  if (!has_bb()) return c;
  const int64_t w = s.bb_full_ ? s.nproc_ : 1;
  // the shard's observed entries, plus the masked channels on the last shard
  const int64_t lo = s.begin_ * w, hi = (s.end_ == s.nbins_ ? s.nbinsfull_ : s.end_) * w;
  for (int64_t i = lo; i < hi; ++i) {
    const double k = s.kstat_[i], b0 = s.beta0_[i];
    switch (s.bb_) {
      case BBKind::gamma:
        // Poisson(kβ⁰ | kβ) with lgamma(kβ⁰ + 1); BB-masked entries are not part of the likelihood
        if (!s.bbmask_[i] && b0 > 0.0)
          c += -k * b0 * std::log(k) - k * b0 * s.log_beta0_[i] + k * b0 + std::lgamma(k * b0 + 1.0);
        break;
      case BBKind::normal_multiplicative:
        if (!s.bbmask_[i]) c += half_log_2pi - 0.5 * std::log(k);
        break;
      case BBKind::normal_additive:
        c += half_log_2pi;
        break;
      case BBKind::none:
        break;
    }
  }
  return c;
}

}  // namespace rabbit
