// CPU shard: yields, BB profiles, NLL and its analytic derivatives over a range of observed bins.
// Structure (docs/likelihood.md): per bin, phase A computes the per-process yields N (one read of
// the bin's logk rows), the bin profile gives φ and the structured curvature Ψ = U M Uᵀ + diag(d),
// phase B accumulates gradient / HVP / Hessian (second read of the same rows, from cache).
// The covariance fit couples bins: phase A for all bins, one global profile, then phase B.
#include "rabbit/backend/cpu/cpu_shard_evaluator.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <Eigen/Cholesky>
#include <Eigen/LU>
#include <fmt/format.h>
#include <omp.h>

#include "rabbit/backend/cpu/cpu_shard.hpp"
#include "rabbit/core/error.hpp"
#include "rabbit/model/param_model.hpp"
#include "rabbit/model/regularizer.hpp"

namespace rabbit {

using cpu::BBKind;
using cpu::BinObservation;
using cpu::HyperDual;
using Eigen::MatrixXd;
using Eigen::VectorXd;

namespace {

// Entry-columns (entries × (1 + HVP columns)) below which one more thread does not pay.
constexpr int64_t kMinWorkPerThread = 2048;

constexpr int kMaxCols = 4;
using RowBlock = Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>;

// Smooth asymmetric interpolation h(θ) = θ·α(θ) and its derivatives (docs/likelihood.md "Asymmetric interpolation").
void interpolation(double theta, double& h, double& hp, double& hpp) {
  const double twox = 2.0 * theta;
  const double twox2 = twox * twox;
  double alpha = 0.125 * twox * (twox2 * (3.0 * twox2 - 10.0) + 15.0);
  alpha = std::min(std::max(alpha, -1.0), 1.0);
  h = theta * alpha;
  if (std::abs(theta) < 0.5) {
    const double t2 = theta * theta;
    hp = theta * (72.0 * t2 * t2 - 40.0 * t2 + 7.5);
    hpp = 360.0 * t2 * t2 - 120.0 * t2 + 7.5;
  } else {
    hp = theta > 0 ? 1.0 : -1.0;
    hpp = 0.0;
  }
}

double data_first(double nu, const BinObservation& o, DataLikelihood lik) {
  if (lik == DataLikelihood::chisq) return (nu - o.n) / o.v;
  return o.n == 0.0 ? 1.0 : 1.0 - o.n / nu;
}
double data_second(double nu, const BinObservation& o, DataLikelihood lik) {
  if (lik == DataLikelihood::chisq) return 1.0 / o.v;
  return o.n == 0.0 ? 0.0 : o.n / (nu * nu);
}

}  // namespace

// ------------------------------------------------------------------------------------------------
struct CpuShardEvaluator::Impl {
  CpuShardEvaluator& s;
  const FitInputData& in;
  bool sparse = false;
  bool symmetric = false;
  bool lognormal = true;
  int64_t W = 0;  // logk columns per entry
  std::vector<int64_t> bin_ptr;  // entries of bin b: [bin_ptr[b], bin_ptr[b+1]), all B_f bins
  std::vector<int32_t> entry_proc;
  std::vector<int64_t> entry_flat;  // b*P + p
  bool coupled = false;
  MatrixXd cov_inv;               // C⁻¹ (covariance fit)
  MatrixXd cov_profiled_weight;   // (C + diag V)⁻¹ for normal-additive
  Eigen::PartialPivLU<MatrixXd> additive_lu;
  VectorXd additive_V;            // per observed bin: s² (lite) or Σ σ² (full)

  // Per-point cache of the uncoupled profiled evaluation (phase A + profile + gradient), so that a
  // sequence of HVPs at one ξ (trust-region inner iterations, batched Hessians) reads the tensor
  // only for the directions. Keyed on ξ and on `generation` (observations, β centres).
  struct PointCache {
    bool valid = false;
    VectorXd xi;
    uint64_t generation = 0;
    int ncol = 0;
    std::vector<double> N, a, c, phi, d, U, M;
    double f = 0.0;
    VectorXd y, gpi;
  };
  PointCache cache;
  uint64_t generation = 0;
  bool cache_allowed = true;  // false when the per-entry cache would be too large

  Impl(CpuShardEvaluator& self) : s(self), in(*self.model_->input) {}

  const double* dense_row(int64_t e) const { return in.logk.data() + e * W; }

  double row_dot(int64_t e, const double* m) const {
    double acc = 0.0;
    if (!sparse) {
      const double* row = dense_row(e);
      for (int64_t c = 0; c < W; ++c) acc += row[c] * m[c];
    } else {
      const auto& L = in.logk_sparse;
      for (int64_t i = L.rowptr[e]; i < L.rowptr[e + 1]; ++i) acc += L.values[i] * m[L.cols[i]];
    }
    return acc;
  }
  void row_axpy(int64_t e, double w, double* y) const {
    if (w == 0.0) return;
    if (!sparse) {
      const double* row = dense_row(e);
      for (int64_t c = 0; c < W; ++c) y[c] += w * row[c];
    } else {
      const auto& L = in.logk_sparse;
      for (int64_t i = L.rowptr[e]; i < L.rowptr[e + 1]; ++i) y[L.cols[i]] += w * L.values[i];
    }
  }
  // E_e = ∂Λ_e/∂θ (length S) added with weight w into out.
  void row_E_axpy(int64_t e, double w, const double* hp, double* out) const {
    if (w == 0.0) return;
    const int64_t S = s.nsyst_;
    if (!sparse) {
      const double* row = dense_row(e);
      if (symmetric) {
        for (int64_t c = 0; c < S; ++c) out[c] += w * row[c];
      } else {
        for (int64_t c = 0; c < S; ++c) out[c] += w * (row[c] + hp[c] * row[S + c]);
      }
    } else {
      const auto& L = in.logk_sparse;
      for (int64_t i = L.rowptr[e]; i < L.rowptr[e + 1]; ++i) {
        const int64_t c = L.cols[i];
        if (c < S)
          out[c] += w * L.values[i];
        else
          out[c - S] += w * hp[c - S] * L.values[i];
      }
    }
  }
};

// Per-point quantities (θ-interpolation, rates, HVP directions).
struct PointData {
  VectorXd m, hp, hpp;  // m = [θ; h(θ)] (length W), h', h''
  VectorXd r;           // rates [P]
  MatrixXd jr;          // ∂r/∂π [P × M]
  VectorXd pi;
  int64_t k = 0;
  MatrixXd Um;          // [u_θ; h'∘u_θ]  (W × k)
  MatrixXd dr;          // ∂r/∂π u_π      (P × k)
  MatrixXd Vpi, Vtheta;
};

struct Request {
  const VectorXd* xi = nullptr;
  bool grad = false;
  const MatrixXd* V = nullptr;
  bool hess = false;
  bool profile = true;
  // outputs
  double f = 0.0;
  VectorXd* grad_out = nullptr;
  MatrixXd* hv_out = nullptr;
  MatrixXd* hess_out = nullptr;
  VectorXd* beta_out = nullptr;  // profiled β (shard layout)
};

// Per-entry scratch of a set of bins.
struct Scratch {
  std::vector<double> N, a, c, phi, d, U, dN, dLam;
  std::vector<double> M;  // per bin ncol × ncol
  std::vector<double> nu; // per bin final yield
  std::vector<double> aux; // per bin: gamma-full 1/(1 + q t)
  int ncol = 1;
  int64_t k = 0;
  void resize(int64_t entries, int64_t bins, int ncols, int64_t kk) {
    ncol = ncols;
    k = kk;
    N.assign(entries, 0.0);
    a.assign(entries, 0.0);
    c.assign(entries, 0.0);
    phi.assign(entries, 0.0);
    d.assign(entries, 0.0);
    U.assign(entries * ncols, 0.0);
    dN.assign(entries * kk, 0.0);
    dLam.assign(entries * kk, 0.0);
    M.assign(bins * ncols * ncols, 0.0);
    nu.assign(bins, 0.0);
    aux.assign(bins, 1.0);
  }
};

struct Accum {
  double f = 0.0;
  VectorXd y, gpi;      // K2ᵀ(φc) [W], Σ φ a per process [P]
  MatrixXd O, hpi;      // HVP: K2ᵀ ω [W × k], per-process π part [P × k]
  MatrixXd HJ;          // Σ Jᵀ M J (full, n × n)
  MatrixXd HE;          // Σ w E Eᵀ (lower, S × S)
  MatrixXd X;           // πθ per process [P × S]
  VectorXd Ypp;         // ππ per process [P]
  // Hessian batching
  MatrixXd Epos, Eneg;  // S × blk columns
  int64_t npos = 0, nneg = 0;
  MatrixXd Lrows, Rrows;  // n × blk
  int64_t nrows = 0;
};

constexpr int64_t kHessBlock = 64;

namespace {

void flush_E(Accum& acc) {
  if (acc.npos > 0) {
    acc.HE.selfadjointView<Eigen::Lower>().rankUpdate(acc.Epos.leftCols(acc.npos), 1.0);
    acc.npos = 0;
  }
  if (acc.nneg > 0) {
    acc.HE.selfadjointView<Eigen::Lower>().rankUpdate(acc.Eneg.leftCols(acc.nneg), -1.0);
    acc.nneg = 0;
  }
}
void flush_J(Accum& acc) {
  if (acc.nrows > 0) {
    acc.HJ.noalias() += acc.Lrows.leftCols(acc.nrows) * acc.Rrows.leftCols(acc.nrows).transpose();
    acc.nrows = 0;
  }
}

}  // namespace

// ------------------------------------------------------------------------------------------------
CpuShardEvaluator::CpuShardEvaluator(std::shared_ptr<const Model> model, int64_t bin_begin, int64_t bin_end,
                                     int threads)
    : model_(std::move(model)), begin_(bin_begin), end_(bin_end) {
  const FitInputData& in = *model_->input;
  nbins_ = in.nbins;
  nbinsfull_ = in.nbinsfull;
  nproc_ = in.nproc;
  nsyst_ = in.nsyst;
  nparams_ = model_->param_model ? model_->param_model->nparams() : 0;
  nx_ = nparams_ + nsyst_;
  if (begin_ < 0 || end_ < begin_ || end_ > nbins_)
    throw Error(fmt::format("CPU shard: bin range [{}, {}) outside the {} observed bins", begin_, end_, nbins_));
  threads_ = threads > 0 ? threads : omp_get_max_threads();
  likelihood_ = model_->options.likelihood;
  if (likelihood_ == DataLikelihood::covariance && (begin_ != 0 || end_ != nbins_))
    throw OptionError("--covarianceFit cannot be sharded; run with one device");

  impl_ = std::make_unique<Impl>(*this);
  Impl& I = *impl_;
  I.sparse = in.sparse;
  I.symmetric = in.symmetric_tensor;
  I.lognormal = in.systematic_type == SystematicType::log_normal;
  I.W = in.logk_width();
  I.coupled = likelihood_ == DataLikelihood::covariance;

  // entry structure over all B_f bins
  I.bin_ptr.assign(nbinsfull_ + 1, 0);
  if (!I.sparse) {
    for (int64_t b = 0; b <= nbinsfull_; ++b) I.bin_ptr[b] = b * nproc_;
    I.entry_proc.resize(nbinsfull_ * nproc_);
    I.entry_flat.resize(nbinsfull_ * nproc_);
    for (int64_t e = 0; e < nbinsfull_ * nproc_; ++e) {
      I.entry_proc[e] = static_cast<int32_t>(e % nproc_);
      I.entry_flat[e] = e;
    }
  } else {
    const int64_t nnz = static_cast<int64_t>(in.norm_index.size());
    I.entry_proc.resize(nnz);
    I.entry_flat = in.norm_index;
    int64_t e = 0;
    for (int64_t b = 0; b < nbinsfull_; ++b) {
      I.bin_ptr[b] = e;
      while (e < nnz && in.norm_index[e] / nproc_ == b) {
        I.entry_proc[e] = static_cast<int32_t>(in.norm_index[e] % nproc_);
        ++e;
      }
    }
    I.bin_ptr[nbinsfull_] = nnz;
    if (e != nnz) throw InputError(fmt::format("{}: hnorm_sparse indices are not sorted by bin", in.filename));
  }

  // ρ (normal pre-scaling, docs/likelihood.md "Systematic type normal"): the param model at the stored defaults.
  rho_ = VectorXd::Ones(nproc_);
  if (nparams_ > 0 && !I.lognormal) {
    model_->param_model->rates(model_->parameters.x_default.head(nparams_), rho_, nullptr);
  }

  // ---- BB statistics (docs/likelihood.md "Per-entry BB statistics") ----
  const auto& opt = model_->options;
  if (opt.bin_by_bin_stat) {
    switch (model_->bb_type) {
      case BBType::gamma: bb_ = BBKind::gamma; break;
      case BBType::normal_multiplicative: bb_ = BBKind::normal_multiplicative; break;
      case BBType::normal_additive: bb_ = BBKind::normal_additive; break;
      case BBType::automatic:
        bb_ = likelihood_ == DataLikelihood::covariance ? BBKind::normal_additive
              : opt.bb_mode == BBMode::full            ? BBKind::normal_multiplicative
                                                        : BBKind::gamma;
        break;
    }
    bb_full_ = opt.bb_mode == BBMode::full;
    legacy_sumw_ = in.sumw_per_bin;
    if (bb_full_ && legacy_sumw_)
      throw InputError(fmt::format("{}: --binByBinStatMode full needs per-process hsumw2 (file has only hkstat)",
                                   in.filename));
    if (likelihood_ == DataLikelihood::covariance && bb_ == BBKind::gamma)
      throw OptionError("--binByBinStatType gamma is not allowed with --covarianceFit");
    const int64_t ne = bb_entries();
    VectorXd wbar(ne), sig2(ne);
    zero_var_.assign(nbinsfull_ * nproc_, 0);
    if (bb_full_) {
      for (int64_t i = 0; i < ne; ++i) {
        sig2[i] = in.sumw2[i];
        wbar[i] = in.sumw[i];
      }
    } else if (legacy_sumw_) {
      for (int64_t b = 0; b < ne; ++b) {
        sig2[b] = in.sumw2[b];
        wbar[b] = in.sumw[b];
      }
    } else {
      for (int64_t b = 0; b < nbinsfull_; ++b) {
        double s2 = 0.0, w = 0.0;
        for (int64_t p = 0; p < nproc_; ++p) {
          const double v2 = in.sumw2[b * nproc_ + p];
          const bool z = v2 == 0.0;
          zero_var_[b * nproc_ + p] = z;
          any_zero_var_ = any_zero_var_ || z;
          s2 += v2;
          if (!z) w += in.sumw[b * nproc_ + p];
        }
        sig2[b] = s2;
        wbar[b] = w;
      }
    }
    kstat_.resize(ne);
    sigma2_ = sig2;
    sqrt_sigma2_ = sig2.cwiseSqrt();
    bbmask_.assign(ne, 0);
    for (int64_t i = 0; i < ne; ++i) {
      bool m = sig2[i] == 0.0 || wbar[i] == 0.0;
      if (opt.min_bb_kstat > 0.0) {
        const double denom = m ? 1.0 : sig2[i];
        m = m || (wbar[i] * wbar[i] / denom < opt.min_bb_kstat);
      }
      bbmask_[i] = m;
      kstat_[i] = m ? 1.0 : wbar[i] * wbar[i] / sig2[i];
    }
    set_beta_centres(default_beta_centres());
  }

  // covariance-fit matrices
  if (I.coupled) {
    if (in.data_cov_inv) {
      I.cov_inv = *in.data_cov_inv;
    } else {
      // rabbit's intended fallback (its code path is broken, docs/differences-from-rabbit.md)
      const VectorXd var = in.data_var.value_or(in.data_obs);
      I.cov_inv = var.cwiseInverse().asDiagonal();
    }
    if (bb_ == BBKind::normal_additive) {
      I.additive_V.resize(nbins_);
      for (int64_t b = 0; b < nbins_; ++b) {
        if (bb_full_) {
          double V = 0.0;
          for (int64_t p = 0; p < nproc_; ++p) V += sigma2_[b * nproc_ + p];
          I.additive_V[b] = V;
        } else {
          I.additive_V[b] = sigma2_[b];
        }
      }
      const MatrixXd Id = MatrixXd::Identity(nbins_, nbins_);
      if (bb_full_) {
        I.additive_lu.compute(I.additive_V.asDiagonal() * I.cov_inv + Id);
      } else {
        const VectorXd sv = sqrt_sigma2_.head(nbins_);
        I.additive_lu.compute(sv.asDiagonal() * I.cov_inv * sv.asDiagonal() + Id);
      }
      // (C + diag V)⁻¹ = C⁻¹ − C⁻¹ Vh (I + Vh C⁻¹ Vh)⁻¹ Vh C⁻¹ with Vh = diag(√V)
      const VectorXd vh = I.additive_V.cwiseSqrt();
      const MatrixXd inner = vh.asDiagonal() * I.cov_inv * vh.asDiagonal() + Id;
      const MatrixXd CiVh = I.cov_inv * vh.asDiagonal();
      I.cov_profiled_weight = I.cov_inv - CiVh * inner.partialPivLu().solve(CiVh.transpose());
    }
  }

  // beta variations (docs/likelihood.md "Beta variations"): masked-channel yields of full evaluations follow the observed β
  std::vector<uint8_t> betavar_rows(nbinsfull_, 0);
  if (in.betavariations && bb_full_ && (bb_ == BBKind::gamma || bb_ == BBKind::normal_multiplicative)) {
    betavar_ = true;
    const auto& bv = *in.betavariations;
    std::vector<uint8_t> source(nbins_, 0);
    for (int64_t b = 0; b < nbinsfull_; ++b)
      for (int64_t j = 0; j < nbins_; ++j)
        for (int64_t p = 0; p < nproc_; ++p) {
          if (bv[(b * nbins_ + j) * nproc_ + p] == 0.0) continue;
          if (b < nbins_)
            throw InputError(fmt::format(
                "{}: hbetavariations has a non-zero entry for observed bin {} (only masked channels may receive "
                "beta variations)",
                in.filename, b));
          source[j] = 1;
          betavar_rows[b] = 1;
        }
    for (int64_t j = 0; j < nbins_; ++j)
      if (source[j]) betavar_sources_.push_back(j);
  }

  // observable regularisers (SVD) act on the full yields: single shard only, and with BB only on
  // bins whose β does not depend on the fit (masked channels), see docs/likelihood.md
  regularized_ = !model_->regularizers.empty() && needs_observables(*model_);
  if (regularized_) {
    if (begin_ != 0 || end_ != nbins_)
      throw OptionError("-r/--regularization on predicted yields cannot be sharded; run with one device");
    if (has_bb()) {
      for (const auto& reg : model_->regularizers) {
        const auto* svd = dynamic_cast<const SvdRegularizer*>(reg.get());
        if (!svd) continue;
        int64_t cells = 1;
        for (int64_t d : svd->shape()) cells *= d;
        const VectorXd touched = svd->map_transpose(VectorXd::Ones(cells));
        if (touched.head(nbins_).cwiseAbs().maxCoeff() > 0.0)
          throw OptionError(
              "-r/--regularization on an observed (non-masked) channel together with bin-by-bin statistics is not "
              "supported; use --noBinByBinStat or regularise a masked channel");
        for (int64_t b = nbins_; b < nbinsfull_; ++b)
          if (betavar_rows[b] && touched[b] != 0.0)
            throw OptionError(
                "-r/--regularization on a masked channel that receives beta variations (hbetavariations) with "
                "--binByBinStatMode full is not supported (the penalty would depend on the profiled beta)");
      }
    }
  }

  set_observed(in.data_obs, in.data_var.value_or(VectorXd()));
}

CpuShardEvaluator::~CpuShardEvaluator() = default;

VectorXd CpuShardEvaluator::default_beta_centres() const {
  const double b0 = bb_ == BBKind::normal_additive ? 0.0 : 1.0;
  return VectorXd::Constant(bb_entries(), b0);
}

void CpuShardEvaluator::set_beta_centres(const VectorXd& beta0) {
  if (beta0.size() != bb_entries())
    throw Error(fmt::format("set_beta_centres: {} values for {} BB entries", beta0.size(), bb_entries()));
  beta0_ = beta0;
  log_beta0_.resize(beta0.size());
  for (int64_t i = 0; i < beta0.size(); ++i) log_beta0_[i] = beta0[i] > 0.0 ? std::log(beta0[i]) : 0.0;
  beta_stored_ = beta0_;
  gamma_masked_centres_ = false;
  if (bb_ == BBKind::gamma && bb_full_)
    for (int64_t i = 0; i < beta0.size(); ++i)
      gamma_masked_centres_ = gamma_masked_centres_ || (bbmask_[i] && beta0[i] != 1.0);
  if (impl_) ++impl_->generation;
}

void CpuShardEvaluator::set_stored_beta(const VectorXd& beta) {
  if (beta.size() != bb_entries())
    throw Error(fmt::format("set_stored_beta: {} values for {} BB entries", beta.size(), bb_entries()));
  beta_stored_ = beta;
}

void CpuShardEvaluator::set_observed(const VectorXd& nobs, const VectorXd& varnobs) {
  if (nobs.size() != nbins_)
    throw Error(fmt::format("set_observed: {} observed values for {} bins", nobs.size(), nbins_));
  nobs_ = nobs;
  varnobs_ = varnobs.size() == 0 ? nobs : varnobs;
  if (impl_) ++impl_->generation;
  if (varnobs_.size() != nbins_)
    throw Error(fmt::format("set_observed: {} variances for {} bins", varnobs_.size(), nbins_));
  lognobs_.resize(nbins_);
  for (int64_t b = 0; b < nbins_; ++b) lognobs_[b] = nobs_[b] == 0.0 ? 0.0 : std::log(nobs_[b]);
  if (likelihood_ == DataLikelihood::chisq) {
    for (int64_t b = begin_; b < end_; ++b)
      if (!(varnobs_[b] > 0.0))
        throw InputError(fmt::format("--chisqFit needs positive data variances; bin {} has {}", b, varnobs_[b]));
  }
}

// ------------------------------------------------------------------------------------------------
// The body of the evaluator lives in free functions with access through Impl.
namespace cpu_detail {

struct Engine {
  CpuShardEvaluator& s;
  CpuShardEvaluator::Impl& I;
  const FitInputData& in;
  PointData pt;
  int64_t P, S, M, n, W;

  Engine(CpuShardEvaluator& self, CpuShardEvaluator::Impl& impl)
      : s(self), I(impl), in(impl.in), P(self.nproc_), S(self.nsyst_), M(self.nparams_), n(self.nx_), W(impl.W) {}

  void prepare_point(const VectorXd& xi, const MatrixXd* V) {
    if (xi.size() != n) throw Error(fmt::format("CPU shard: ξ has length {}, the model has {}", xi.size(), n));
    pt.m.resize(W);
    pt.hp.resize(S);
    pt.hpp.resize(S);
    for (int64_t j = 0; j < S; ++j) {
      const double th = xi[M + j];
      pt.m[j] = th;
      double h, hp, hpp;
      interpolation(th, h, hp, hpp);
      if (I.symmetric) {
        hp = 1.0;
        hpp = 0.0;
      } else {
        pt.m[S + j] = h;
      }
      pt.hp[j] = hp;
      pt.hpp[j] = hpp;
    }
    pt.pi = xi.head(M);
    if (s.model_->param_model) {
      s.model_->param_model->rates(pt.pi, pt.r, &pt.jr);
    } else {
      pt.r = VectorXd::Ones(P);
      pt.jr.setZero(P, 0);
    }
    pt.k = V ? V->cols() : 0;
    if (V) {
      pt.Vpi = V->topRows(M);
      pt.Vtheta = V->bottomRows(S);
      pt.Um.resize(W, pt.k);
      pt.Um.topRows(S) = pt.Vtheta;
      if (!I.symmetric) pt.Um.bottomRows(S) = pt.hp.asDiagonal() * pt.Vtheta;
      pt.dr = pt.jr * pt.Vpi;
    }
  }

  int ncols(bool profile) const {
    if (I.coupled) return 1;
    if (s.bb_ == BBKind::none || !s.bb_full_) return s.any_zero_var_ ? 2 : 1;
    if (s.bb_ == BBKind::normal_additive) return 1;
    if (s.bb_ == BBKind::normal_multiplicative && profile) return 4;
    // gamma with masked centres ≠ 1: those bins carry the dense Hessian of rabbit's composite over
    // all their entries (U = identity)
    if (s.bb_ == BBKind::gamma && profile && s.gamma_masked_centres_) return static_cast<int>(std::max<int64_t>(P, 1));
    return 1;
  }

  // Phase A: per-process yields of bin b into scratch slots starting at `slot`.
  // directions_only: N, a, c are already in sc (cached point); only δΛ and δN are computed.
  void yields(int64_t b, Scratch& sc, int64_t slot, bool directions_only = false) const {
    const int64_t e0 = I.bin_ptr[b], e1 = I.bin_ptr[b + 1];
    const int64_t k = sc.k;
    // dense: the bin's rows are one contiguous row-major block, multiplied at once (vectorised)
    VectorXd lam_block;
    MatrixXd dlam_block;
    if (!I.sparse && e1 > e0) {
      const RowBlock Kb(I.dense_row(e0), e1 - e0, W);
      if (!directions_only) lam_block.noalias() = Kb * pt.m;
      if (k > 0) dlam_block.noalias() = Kb * pt.Um;
    }
    for (int64_t e = e0; e < e1; ++e) {
      const int64_t i = slot + (e - e0);
      const int p = I.entry_proc[e];
      if (!directions_only) {
        const double lam = I.sparse ? I.row_dot(e, pt.m.data()) : lam_block[e - e0];
        const double n0 = in.norm[e];
        if (I.lognormal) {
          const double q = n0 * std::exp(lam);
          sc.a[i] = q;
          sc.N[i] = pt.r[p] * q;
          sc.c[i] = sc.N[i];
        } else {
          sc.a[i] = n0;
          sc.N[i] = pt.r[p] * n0 + s.rho_[p] * lam;
          sc.c[i] = s.rho_[p];
        }
      }
      if (k > 0) {
        double* dl = &sc.dLam[i * k];
        double* dn = &sc.dN[i * k];
        for (int64_t j = 0; j < k; ++j) dl[j] = I.sparse ? I.row_dot(e, pt.Um.col(j).data()) : dlam_block(e - e0, j);
        for (int64_t j = 0; j < k; ++j) dn[j] = sc.a[i] * pt.dr(p, j) + sc.c[i] * dl[j];
      }
    }
  }

  BinObservation observation(int64_t b) const {
    BinObservation o;
    o.n = s.nobs_[b];
    o.v = s.varnobs_[b];
    o.log_n = s.lognobs_[b];
    return o;
  }

  cpu::LiteEntry lite_entry(int64_t b) const {
    cpu::LiteEntry e;
    if (s.bb_ == BBKind::none) return e;
    e.k = s.kstat_[b];
    e.beta0 = s.beta0_[b];
    e.log_beta0 = s.log_beta0_[b];
    e.masked = s.bbmask_[b];
    e.s = s.sqrt_sigma2_[b];
    e.sigma2 = s.sigma2_[b];
    return e;
  }

  bool active(int64_t e) const {
    return s.bb_ == BBKind::none || s.legacy_sumw_ || !s.zero_var_[I.entry_flat[e]];
  }

  // Lite (and no-BB) profile via hyper-duals over (A, Z).
  template <int K>
  double lite_profile(int64_t b, Scratch& sc, int64_t slot, int64_t bslot, bool derivs, bool fixed_beta,
                      double* beta_out) const {
    const int64_t e0 = I.bin_ptr[b], e1 = I.bin_ptr[b + 1];
    double A = 0.0, Z = 0.0;
    for (int64_t e = e0; e < e1; ++e) (active(e) ? A : Z) += sc.N[slot + e - e0];
    const BinObservation o = observation(b);
    const cpu::LiteEntry le = lite_entry(b);
    if (!derivs) {
      double beta, nu;
      const double F = cpu::lite_bin_objective(A, Z, o, s.likelihood_, s.bb_, le, s.legacy_sumw_, fixed_beta, &beta, &nu);
      if (beta_out) *beta_out = beta;
      sc.nu[bslot] = nu;
      return F;
    }
    using HD = HyperDual<K>;
    const HD hA = HD::variable(A, 0);
    const HD hZ = K > 1 ? HD::variable(Z, K - 1) : HD(Z);
    HD beta, nu;
    const HD F = cpu::lite_bin_objective(hA, hZ, o, s.likelihood_, s.bb_, le, s.legacy_sumw_, fixed_beta, &beta, &nu);
    if (beta_out) *beta_out = beta.v;
    sc.nu[bslot] = nu.v;
    const int nc = sc.ncol;
    for (int64_t e = e0; e < e1; ++e) {
      const int64_t i = slot + e - e0;
      const bool act = active(e);
      sc.phi[i] = act ? F.g[0] : F.g[K - 1];
      sc.d[i] = 0.0;
      for (int j = 0; j < nc; ++j) sc.U[i * nc + j] = 0.0;
      if (act)
        sc.U[i * nc + 0] = 1.0;
      else
        sc.U[i * nc + nc - 1] = 1.0;
    }
    double* Mb = &sc.M[bslot * nc * nc];
    for (int i = 0; i < nc; ++i)
      for (int j = 0; j < nc; ++j) Mb[i * nc + j] = F.h[i][j];
    return F.v;
  }

  double full_additive_profile(int64_t b, Scratch& sc, int64_t slot, int64_t bslot, bool derivs, bool fixed_beta,
                               double* beta_out) const {
    const int64_t e0 = I.bin_ptr[b], e1 = I.bin_ptr[b + 1];
    double nu0 = 0.0;
    for (int64_t e = e0; e < e1; ++e) nu0 += sc.N[slot + e - e0];
    double V = 0.0, W0 = 0.0;
    for (int64_t p = 0; p < P; ++p) {
      const int64_t f = b * P + p;
      V += s.sigma2_[f];
      W0 += s.sqrt_sigma2_[f] * s.beta0_[f];
    }
    const BinObservation o = observation(b);
    double rho_v;
    double F;
    if (!derivs) {
      double nu;
      F = cpu::full_additive_bin_objective(nu0, V, W0, o, s.likelihood_, fixed_beta, &rho_v, &nu);
      sc.nu[bslot] = nu;
    } else {
      using HD = HyperDual<1>;
      HD rho, nu;
      const HD Fh = cpu::full_additive_bin_objective(HD::variable(nu0, 0), V, W0, o, s.likelihood_, fixed_beta, &rho, &nu);
      rho_v = rho.v;
      sc.nu[bslot] = nu.v;
      for (int64_t e = e0; e < e1; ++e) {
        const int64_t i = slot + e - e0;
        sc.phi[i] = Fh.g[0];
        sc.d[i] = 0.0;
        sc.U[i] = 1.0;
      }
      sc.M[bslot] = Fh.h[0][0];
      F = Fh.v;
    }
    if (beta_out)
      for (int64_t p = 0; p < P; ++p) beta_out[p] = s.beta0_[b * P + p] + rho_v * s.sqrt_sigma2_[b * P + p];
    return F;
  }

  double full_multiplicative_profile(int64_t b, Scratch& sc, int64_t slot, int64_t bslot, bool derivs, bool profile,
                                     double* beta_out) const {
    const int64_t e0 = I.bin_ptr[b], e1 = I.bin_ptr[b + 1];
    double S_ = 0.0, Tu = 0.0, Tm = 0.0, Mm = 0.0;
    for (int64_t e = e0; e < e1; ++e) {
      const int64_t f = I.entry_flat[e];
      const double N = sc.N[slot + e - e0];
      if (s.bbmask_[f]) {
        Tm += s.beta0_[f] * N;
        Mm += N;
      } else {
        S_ += N * N / s.kstat_[f];
        Tu += s.beta0_[f] * N;
      }
    }
    const BinObservation o = observation(b);
    double rho_v, F;
    if (!derivs || !profile) {
      double nu;
      F = cpu::full_multiplicative_bin_objective(S_, Tu, Tm, Mm, o, s.likelihood_, &rho_v, &nu);
      sc.nu[bslot] = nu;
      if (derivs) {  // β held fixed: φ = μ̃ g, Ψ = ℓ'' μ̃ μ̃ᵀ
        const double g = data_first(nu, o, s.likelihood_), q = data_second(nu, o, s.likelihood_);
        for (int64_t e = e0; e < e1; ++e) {
          const int64_t i = slot + e - e0, f = I.entry_flat[e];
          const double mu = s.bbmask_[f] ? 1.0 : s.beta0_[f] + rho_v * sc.N[i] / s.kstat_[f];
          sc.phi[i] = mu * g;
          sc.U[i] = mu;
          sc.d[i] = 0.0;
        }
        sc.M[bslot] = q;
      }
    } else {
      using HD = HyperDual<4>;
      HD rho, nu;
      const HD Fh = cpu::full_multiplicative_bin_objective(HD::variable(S_, 0), HD::variable(Tu, 1), HD::variable(Tm, 2),
                                                           HD::variable(Mm, 3), o, s.likelihood_, &rho, &nu);
      rho_v = rho.v;
      sc.nu[bslot] = nu.v;
      F = Fh.v;
      for (int64_t e = e0; e < e1; ++e) {
        const int64_t i = slot + e - e0, f = I.entry_flat[e];
        double* u = &sc.U[i * 4];
        if (s.bbmask_[f]) {
          u[0] = 0.0; u[1] = 0.0; u[2] = s.beta0_[f]; u[3] = 1.0;
          sc.d[i] = 0.0;
        } else {
          u[0] = 2.0 * sc.N[i] / s.kstat_[f]; u[1] = s.beta0_[f]; u[2] = 0.0; u[3] = 0.0;
          sc.d[i] = 2.0 * Fh.g[0] / s.kstat_[f];
        }
        sc.phi[i] = u[0] * Fh.g[0] + u[1] * Fh.g[1] + u[2] * Fh.g[2] + u[3] * Fh.g[3];
      }
      double* Mb = &sc.M[bslot * 16];
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) Mb[i * 4 + j] = Fh.h[i][j];
    }
    if (beta_out) {
      for (int64_t p = 0; p < P; ++p) beta_out[p] = s.beta0_[b * P + p];
      for (int64_t e = e0; e < e1; ++e) {
        const int64_t f = I.entry_flat[e];
        if (!s.bbmask_[f]) beta_out[f - b * P] = s.beta0_[f] + rho_v * sc.N[slot + e - e0] / s.kstat_[f];
      }
    }
    return F;
  }

  // gamma + full: per-bin Newton (docs/likelihood.md "Profiled β"), envelope gradient and Schur curvature (docs/likelihood.md "Profiles and their derivatives").
  double full_gamma_profile(int64_t b, Scratch& sc, int64_t slot, int64_t bslot, bool derivs, bool profile,
                            double* beta_out) const {
    const int64_t e0 = I.bin_ptr[b], e1 = I.bin_ptr[b + 1];
    const int64_t ne = e1 - e0;
    const BinObservation o = observation(b);
    const bool chisq = s.likelihood_ == DataLikelihood::chisq;
    const double nn = o.n, v = o.v;
    // threshold
    double minratio = std::numeric_limits<double>::infinity();
    bool any_free = false;
    for (int64_t e = e0; e < e1; ++e) {
      const int64_t f = I.entry_flat[e];
      if (s.bbmask_[f]) continue;
      any_free = true;
      minratio = std::min(minratio, chisq ? s.kstat_[f] / sc.N[slot + e - e0] : 1.0 + s.kstat_[f] / sc.N[slot + e - e0]);
    }
    std::vector<double> beta(ne);
    for (int64_t e = e0; e < e1; ++e) beta[e - e0] = s.beta0_[I.entry_flat[e]];
    double u_converged = 0.0, Xthr_used = 0.0;
    (void)Xthr_used;
    if (any_free) {
      const double Xthr = chisq ? nn - v * minratio : nn / minratio;
      // F'(X), F''(X) of the reduced objective along the β(X) curve
      auto derivatives = [&](double X, double& F1, double& F2) {
        double nut = 0.0, nut1 = 0.0, nut2 = 0.0, c1sum = 0.0, c2sum = 0.0;
        for (int64_t e = e0; e < e1; ++e) {
          const int64_t f = I.entry_flat[e];
          const double N = sc.N[slot + e - e0];
          if (s.bbmask_[f]) {
            nut += s.beta0_[f] * N;
            continue;
          }
          const double k = s.kstat_[f], b0 = s.beta0_[f];
          double dd, d1, d2;
          if (chisq) {
            dd = k + (X - nn) / v * N;
            d1 = N / v;
            d2 = 0.0;
          } else {
            dd = (1.0 - nn / X) * N + k;
            d1 = nn * N / (X * X);
            d2 = -2.0 * nn * N / (X * X * X);
          }
          const double bt = k * b0 / dd;
          const double bt1 = -k * b0 * d1 / (dd * dd);
          const double bt2 = -k * b0 * (d2 / (dd * dd) - 2.0 * d1 * d1 / (dd * dd * dd));
          nut += bt * N;
          nut1 += bt1 * N;
          nut2 += bt2 * N;
          const double cp = b0 > 0.0 ? k - k * b0 / bt : k;
          const double cpp = b0 > 0.0 ? k * b0 / (bt * bt) : 0.0;
          c1sum += cp * bt1;
          c2sum += cpp * bt1 * bt1 + cp * bt2;
        }
        const double l1 = data_first(nut, o, s.likelihood_), l2 = data_second(nut, o, s.likelihood_);
        F1 = l1 * nut1 + c1sum;
        F2 = l2 * nut1 * nut1 + l1 * nut2 + c2sum;
      };
      double u = 0.0, edm = std::numeric_limits<double>::infinity();
      Xthr_used = Xthr;
      for (int it = 0; it < 50 && edm > 1e-10; ++it) {
        const double eu = std::exp(u);
        double F1, F2;
        derivatives(Xthr + eu, F1, F2);
        const double g = F1 * eu, h = F2 * eu * eu + F1 * eu;
        const double hs = std::max(h, 1e-8);
        u -= std::min(std::max(g / hs, -1.0), 1.0);
        edm = 0.5 * g * g / hs;
      }
      u_converged = u;
      {
        const double eu = std::exp(u);
        double F1, F2;
        derivatives(Xthr + eu, F1, F2);
        const double g = F1 * eu, h = F2 * eu * eu + F1 * eu;
        u -= g / std::max(h, 1e-8);
      }
      const double X = Xthr + std::exp(u);
      for (int64_t e = e0; e < e1; ++e) {
        const int64_t f = I.entry_flat[e];
        if (s.bbmask_[f]) continue;
        const double N = sc.N[slot + e - e0], k = s.kstat_[f], b0 = s.beta0_[f];
        const double dd = chisq ? k + (X - nn) / v * N : (1.0 - nn / X) * N + k;
        beta[e - e0] = k * b0 / dd;
      }
    }
    double nu = 0.0, Lb = 0.0;
    for (int64_t e = e0; e < e1; ++e) {
      const int64_t f = I.entry_flat[e];
      const double N = sc.N[slot + e - e0];
      if (s.bbmask_[f]) {
        nu += N;
      } else {
        nu += beta[e - e0] * N;
        Lb += cpu::gamma_constraint(beta[e - e0], s.kstat_[f], s.beta0_[f], s.log_beta0_[f]);
      }
    }
    sc.nu[bslot] = nu;
    const double F = cpu::data_term(nu, o, s.likelihood_) + Lb;
    bool special = false;  // a masked entry with β⁰ ≠ 1: rabbit's Newton ν̃ ≠ the bin's ν (docs/likelihood.md "BB derivative corner cases" item 3)
    if (derivs && profile && any_free && sc.ncol >= ne)
      for (int64_t e = e0; e < e1; ++e) {
        const int64_t f = I.entry_flat[e];
        special = special || (s.bbmask_[f] && s.beta0_[f] != 1.0);
      }
    const int nc = sc.ncol;
    if (derivs && special) {
      const cpu::DynHyperDual Fh = gamma_full_literal(b, sc, slot, u_converged);
      for (int64_t a = 0; a < ne; ++a) {
        const int64_t i = slot + a;
        sc.phi[i] = Fh.g[a];
        sc.d[i] = 0.0;
        for (int c = 0; c < nc; ++c) sc.U[i * nc + c] = c == a ? 1.0 : 0.0;
      }
      double* Mb = &sc.M[bslot * nc * nc];
      for (int a = 0; a < nc; ++a)
        for (int c = 0; c < nc; ++c) Mb[a * nc + c] = (a < ne && c < ne) ? Fh.h(a, c) : 0.0;
    } else if (derivs) {
      const double g = data_first(nu, o, s.likelihood_), q = data_second(nu, o, s.likelihood_);
      double t = 0.0;
      for (int64_t e = e0; e < e1; ++e) {
        const int64_t i = slot + e - e0, f = I.entry_flat[e];
        const bool masked = s.bbmask_[f];
        const double mu = masked ? 1.0 : beta[e - e0];
        sc.phi[i] = mu * g;
        double chat = 0.0;
        if (!masked && profile && s.beta0_[f] > 0.0) chat = mu * mu / (s.kstat_[f] * s.beta0_[f]);
        t += chat * sc.N[i] * sc.N[i];
        for (int c = 0; c < nc; ++c) sc.U[i * nc + c] = 0.0;
        sc.U[i * nc] = mu - g * chat * sc.N[i];
        sc.d[i] = -g * g * chat;
      }
      double* Mb = &sc.M[bslot * nc * nc];
      for (int c = 0; c < nc * nc; ++c) Mb[c] = 0.0;
      Mb[0] = q / (1.0 + q * t);
      sc.aux[bslot] = 1.0 / (1.0 + q * t);
    }
    if (beta_out)
      for (int64_t p = 0; p < P; ++p) beta_out[p] = s.beta0_[b * P + p];
    if (beta_out)
      for (int64_t e = e0; e < e1; ++e) beta_out[I.entry_flat[e] - b * P] = beta[e - e0];
    return F;
  }

  // gamma + full, rabbit's composite of one bin (bin_profile.hpp) on dynamic hyper-duals over the
  // bin's entries, at the converged Newton point u0.
  cpu::DynHyperDual gamma_full_literal(int64_t b, const Scratch& sc, int64_t slot, double u0) const {
    using D = cpu::DynHyperDual;
    const int64_t e0 = I.bin_ptr[b], e1 = I.bin_ptr[b + 1];
    const int K = static_cast<int>(e1 - e0);
    std::vector<D> N(K);
    std::vector<cpu::GammaFullEntry> entries(K);
    for (int a = 0; a < K; ++a) {
      N[a] = D::variable(sc.N[slot + a], a, K);
      const int64_t f = I.entry_flat[e0 + a];
      entries[a] = {s.kstat_[f], s.beta0_[f], s.log_beta0_[f], static_cast<bool>(s.bbmask_[f])};
    }
    return cpu::gamma_full_bin_composite(N.data(), entries.data(), K, observation(b), s.likelihood_, u0);
  }

  // Profile of one (uncoupled) bin; returns its objective. beta_out: lite 1, full P values.
  double profile_bin(int64_t b, Scratch& sc, int64_t slot, int64_t bslot, bool derivs, bool profile,
                     double* beta_out) const {
    if (s.bb_ == BBKind::none || !s.bb_full_) {
      if (sc.ncol == 2 || (!derivs && s.any_zero_var_))
        return lite_profile<2>(b, sc, slot, bslot, derivs, !profile, beta_out);
      return lite_profile<1>(b, sc, slot, bslot, derivs, !profile, beta_out);
    }
    if (s.bb_ == BBKind::normal_additive) return full_additive_profile(b, sc, slot, bslot, derivs, !profile, beta_out);
    if (s.bb_ == BBKind::normal_multiplicative)
      return full_multiplicative_profile(b, sc, slot, bslot, derivs, profile, beta_out);
    return full_gamma_profile(b, sc, slot, bslot, derivs, profile, beta_out);
  }

  // Phase B: accumulate gradient / HVP / Hessian contributions of bin b.
  // gradient = false: the gradient part is already known (cached point), only the HVP part is added.
  void accumulate(int64_t b, const Scratch& sc, int64_t slot, int64_t bslot, const Request& req, Accum& acc,
                  const double* zcoupled /* per-bin z (k) for coupled mode */, bool gradient = true) const {
    const int64_t e0 = I.bin_ptr[b], e1 = I.bin_ptr[b + 1];
    const int nc = sc.ncol;
    const int64_t k = sc.k;
    // gradient
    const int64_t ne = e1 - e0;
    if (!gradient) {
    } else if (!I.sparse && ne > 0) {
      VectorXd wv(ne);
      for (int64_t e = e0; e < e1; ++e) {
        const int64_t i = slot + e - e0;
        wv[e - e0] = sc.phi[i] * sc.c[i];
        acc.gpi[I.entry_proc[e]] += sc.phi[i] * sc.a[i];
      }
      const RowBlock Kb(I.dense_row(e0), ne, W);
      acc.y.noalias() += Kb.transpose() * wv;
    } else {
      for (int64_t e = e0; e < e1; ++e) {
        const int64_t i = slot + e - e0;
        const int p = I.entry_proc[e];
        I.row_axpy(e, sc.phi[i] * sc.c[i], acc.y.data());
        acc.gpi[p] += sc.phi[i] * sc.a[i];
      }
    }
    if (k > 0) {
      // t = Uᵀ δN per column, z = U (M t) + d δN
      double tbuf[kMaxCols];
      std::vector<double> tvec;
      double* t = tbuf;
      if (nc > kMaxCols) {
        tvec.resize(nc);
        t = tvec.data();
      }
      std::vector<double> zb(k * nc);
      if (!zcoupled) {
        const double* Mb = &sc.M[bslot * nc * nc];
        for (int64_t j = 0; j < k; ++j) {
          for (int a = 0; a < nc; ++a) t[a] = 0.0;
          for (int64_t e = e0; e < e1; ++e) {
            const int64_t i = slot + e - e0;
            for (int a = 0; a < nc; ++a) t[a] += sc.U[i * nc + a] * sc.dN[i * k + j];
          }
          for (int a = 0; a < nc; ++a) {
            double acc2 = 0.0;
            for (int c = 0; c < nc; ++c) acc2 += Mb[a * nc + c] * t[c];
            zb[j * nc + a] = acc2;
          }
        }
      } else {
        for (int64_t j = 0; j < k * nc; ++j) zb[j] = zcoupled[j];
      }
      std::vector<double> omega(k);
      MatrixXd Omega(I.sparse ? 0 : ne, k);
      for (int64_t e = e0; e < e1; ++e) {
        const int64_t i = slot + e - e0;
        const int p = I.entry_proc[e];
        for (int64_t j = 0; j < k; ++j) {
          double z = sc.d[i] * sc.dN[i * k + j];
          for (int a = 0; a < nc; ++a) z += sc.U[i * nc + a] * zb[j * nc + a];
          double om = sc.c[i] * z;
          double pipart = sc.a[i] * z;
          if (I.lognormal) {
            om += sc.phi[i] * sc.dN[i * k + j];
            pipart += sc.phi[i] * sc.a[i] * sc.dLam[i * k + j];
          }
          omega[j] = om;
          acc.hpi(p, j) += pipart;
        }
        if (!I.sparse) {
          for (int64_t j = 0; j < k; ++j) Omega(e - e0, j) = omega[j];
        } else {
          for (int64_t j = 0; j < k; ++j) I.row_axpy(e, omega[j], acc.O.col(j).data());
        }
      }
      if (!I.sparse && ne > 0) {
        const RowBlock Kb(I.dense_row(e0), ne, W);
        acc.O.noalias() += Kb.transpose() * Omega;
      }
    }
    if (req.hess) {
      // E-part: Σ_e (d c² + φ N [log-normal]) E Eᵀ, plus π parts per process
      for (int64_t e = e0; e < e1; ++e) {
        const int64_t i = slot + e - e0;
        const int p = I.entry_proc[e];
        const double w = sc.d[i] * sc.c[i] * sc.c[i] + (I.lognormal ? sc.phi[i] * sc.N[i] : 0.0);
        const double xw = sc.d[i] * sc.c[i] * sc.a[i] + (I.lognormal ? sc.phi[i] * sc.a[i] : 0.0);
        acc.Ypp[p] += sc.d[i] * sc.a[i] * sc.a[i];
        if (xw != 0.0 && M > 0) {
          VectorXd tmp = VectorXd::Zero(S);
          I.row_E_axpy(e, xw, pt.hp.data(), tmp.data());
          acc.X.row(p) += tmp.transpose();
        }
        if (w != 0.0) {
          const double sw = std::sqrt(std::abs(w));
          double* col;
          if (w > 0) {
            col = acc.Epos.col(acc.npos++).data();
          } else {
            col = acc.Eneg.col(acc.nneg++).data();
          }
          std::fill(col, col + S, 0.0);
          I.row_E_axpy(e, sw, pt.hp.data(), col);
          if (acc.npos == kHessBlock || acc.nneg == kHessBlock) flush_E(acc);
        }
      }
      if (!zcoupled) {
        // J-part: J_j = Σ_e U_ej 𝒥_e, H += Jᵀ M J
        const double* Mb = &sc.M[bslot * nc * nc];
        MatrixXd Jb = MatrixXd::Zero(n, nc);
        for (int64_t e = e0; e < e1; ++e) {
          const int64_t i = slot + e - e0;
          const int p = I.entry_proc[e];
          for (int a = 0; a < nc; ++a) {
            const double u = sc.U[i * nc + a];
            if (u == 0.0) continue;
            if (M > 0) Jb.col(a).head(M) += (u * sc.a[i]) * pt.jr.row(p).transpose();
            I.row_E_axpy(e, u * sc.c[i], pt.hp.data(), Jb.col(a).data() + M);
          }
        }
        for (int a = 0; a < nc; ++a) {
          if (acc.nrows == kHessBlock) flush_J(acc);
          acc.Lrows.col(acc.nrows) = Jb.col(a);
          VectorXd r = VectorXd::Zero(n);
          for (int c = 0; c < nc; ++c) r += Mb[a * nc + c] * Jb.col(c);
          acc.Rrows.col(acc.nrows) = r;
          ++acc.nrows;
        }
      }
    }
  }

  void init_accum(Accum& acc, const Request& req, int64_t k) const {
    acc.f = 0.0;
    acc.y = VectorXd::Zero(W);
    acc.gpi = VectorXd::Zero(P);
    if (k > 0) {
      acc.O = MatrixXd::Zero(W, k);
      acc.hpi = MatrixXd::Zero(P, k);
    }
    if (req.hess) {
      acc.HJ = MatrixXd::Zero(n, n);
      acc.HE = MatrixXd::Zero(S, S);
      acc.X = MatrixXd::Zero(P, S);
      acc.Ypp = VectorXd::Zero(P);
      acc.Epos.resize(S, kHessBlock);
      acc.Eneg.resize(S, kHessBlock);
      acc.Lrows.resize(n, kHessBlock);
      acc.Rrows.resize(n, kHessBlock);
    }
  }

  int64_t beta_width() const { return s.bb_ == BBKind::none ? 0 : (s.bb_full_ ? P : 1); }

  using BetaMode = CpuShardEvaluator::BetaMode;

  // β of bin b's BB entries for a postfit evaluation at the current point (phase A of b in slot 0
  // of sc when profiling an uncoupled bin). False when β does not enter (no BB, BetaMode::none).
  bool postfit_bin_beta(int64_t b, BetaMode mode, const VectorXd& coupled_beta, Scratch& sc, double* beta) const {
    if (!s.has_bb() || mode == BetaMode::none) return false;
    const int64_t bw = beta_width();
    if (mode == BetaMode::stored || b >= s.nbins_) {
      const VectorXd& src = mode == BetaMode::stored ? s.beta_stored_ : s.beta0_;
      for (int64_t j = 0; j < bw; ++j) beta[j] = src[b * bw + j];
    } else if (I.coupled) {
      for (int64_t j = 0; j < bw; ++j) beta[j] = coupled_beta[b * bw + j];
    } else {
      profile_bin(b, sc, 0, 0, false, true, beta);
    }
    return true;
  }

  // Δ_{jp} = √k_{jp} (β_{jp} − 1) over the observed entries (0 where BB-masked), with β of `mode`
  // (docs/likelihood.md "Beta variations"); only the source bins of hbetavariations are filled.
  VectorXd beta_variation_shifts(BetaMode mode, const VectorXd& coupled_beta) const {
    VectorXd delta = VectorXd::Zero(s.nbins_ * P);
    if (!s.betavar_ || mode == BetaMode::none) return delta;
    Scratch sc;
    sc.resize(P, 1, 1, 0);
    std::vector<double> beta(P);
    for (int64_t j : s.betavar_sources_) {
      if (mode == BetaMode::profiled && !I.coupled) yields(j, sc, 0);
      postfit_bin_beta(j, mode, coupled_beta, sc, beta.data());
      for (int64_t p = 0; p < P; ++p) {
        const int64_t f = j * P + p;
        if (!s.bbmask_[f]) delta[f] = std::sqrt(s.kstat_[f]) * (beta[p] - 1.0);
      }
    }
    return delta;
  }

  // docs/likelihood.md "Beta variations" on masked bin b (phase A in slot 0 of sc, dense): N_bp ← N_bp (1 + var_bp/n⁰_bp) where
  // n⁰_bp > 0; the π- and θ-weights a, c scale alike. factor (optional, P values) receives the factors.
  void apply_beta_variations(int64_t b, const VectorXd& delta, Scratch& sc, double* factor) const {
    const auto& bv = *in.betavariations;
    const int64_t B = s.nbins_;
    for (int64_t p = 0; p < P; ++p) {
      const double n0 = in.norm[b * P + p];
      double f = 1.0;
      if (n0 > 0.0) {
        double var = 0.0;
        for (int64_t j : s.betavar_sources_) var += bv[(b * B + j) * P + p] * delta[j * P + p];
        f = 1.0 + var / n0;
      }
      sc.N[p] *= f;
      sc.a[p] *= f;
      sc.c[p] *= f;
      if (factor) factor[p] = f;
    }
  }

  // ∂ν_b/∂ξ row contribution of entry e with weight w on N (phase A in sc at index i).
  void add_entry_jacobian(int64_t e, const Scratch& sc, int64_t i, double w, double* row) const {
    if (w == 0.0) return;
    const int p = I.entry_proc[e];
    for (int64_t k = 0; k < M; ++k) row[k] += w * sc.a[i] * pt.jr(p, k);
    I.row_E_axpy(e, w * sc.c[i], pt.hp.data(), row + M);
  }

  // dβ̂_p/dN_q [P × P] of observed bin b in BB full mode (gamma or normal-multiplicative, uncoupled,
  // dense; phase A in slot 0 of sc): the derivative of rabbit's closed form (normal-multiplicative),
  // resp. of the Newton solution by the implicit function theorem at the converged point, which is
  // what rabbit's final differentiable Newton step gives (gamma; stationarity of the Newton
  // objective, whose ν̃ carries β⁰ N on masked entries).
  MatrixXd full_beta_sensitivity(int64_t b, Scratch& sc) const {
    MatrixXd G = MatrixXd::Zero(P, P);
    const BinObservation o = observation(b);
    // per-process yields (sparse bins hold only their stored entries)
    std::vector<double> Nd(P, 0.0);
    for (int64_t e = I.bin_ptr[b]; e < I.bin_ptr[b + 1]; ++e) Nd[I.entry_proc[e]] = sc.N[e - I.bin_ptr[b]];
    if (s.bb_ == BBKind::normal_multiplicative) {
      double S_ = 0.0, Tu = 0.0, Tm = 0.0, Mm = 0.0;
      for (int64_t p = 0; p < P; ++p) {
        const int64_t f = b * P + p;
        const double N = Nd[p];
        if (s.bbmask_[f]) {
          Tm += s.beta0_[f] * N;
          Mm += N;
        } else {
          S_ += N * N / s.kstat_[f];
          Tu += s.beta0_[f] * N;
        }
      }
      using HD = HyperDual<4>;
      HD rho, nu;
      cpu::full_multiplicative_bin_objective(HD::variable(S_, 0), HD::variable(Tu, 1), HD::variable(Tm, 2),
                                             HD::variable(Mm, 3), o, s.likelihood_, &rho, &nu);
      VectorXd drho(P);
      for (int64_t q = 0; q < P; ++q) {
        const int64_t f = b * P + q;
        drho[q] = s.bbmask_[f] ? rho.g[2] * s.beta0_[f] + rho.g[3]
                               : rho.g[0] * 2.0 * Nd[q] / s.kstat_[f] + rho.g[1] * s.beta0_[f];
      }
      for (int64_t p = 0; p < P; ++p) {
        const int64_t f = b * P + p;
        if (s.bbmask_[f]) continue;
        G.row(p) = (Nd[p] / s.kstat_[f]) * drho.transpose();
        G(p, p) += rho.v / s.kstat_[f];
      }
      return G;
    }
    std::vector<double> beta(P);
    profile_bin(b, sc, 0, 0, false, true, beta.data());
    VectorXd mu(P);
    std::vector<int64_t> free;
    double nut = 0.0;
    for (int64_t p = 0; p < P; ++p) {
      const int64_t f = b * P + p;
      mu[p] = s.bbmask_[f] ? s.beta0_[f] : beta[p];
      nut += mu[p] * Nd[p];
      if (!s.bbmask_[f] && s.beta0_[f] > 0.0) free.push_back(p);
    }
    if (free.empty()) return G;
    const double l1 = data_first(nut, o, s.likelihood_), l2 = data_second(nut, o, s.likelihood_);
    const int64_t nf = static_cast<int64_t>(free.size());
    MatrixXd H(nf, nf), F(nf, P);
    for (int64_t i = 0; i < nf; ++i) {
      const int64_t p = free[i], f = b * P + p;
      for (int64_t j = 0; j < nf; ++j) H(i, j) = l2 * Nd[p] * Nd[free[j]];
      H(i, i) += s.kstat_[f] * s.beta0_[f] / (beta[p] * beta[p]);
      for (int64_t q = 0; q < P; ++q) F(i, q) = l2 * Nd[p] * mu[q];
      F(i, p) += l1;
    }
    const MatrixXd D = -H.partialPivLu().solve(F);
    for (int64_t i = 0; i < nf; ++i) G.row(free[i]) = D.row(i);
    return G;
  }

  // dβ̂/dξ of the observed entries of the hbetavariations source bins: row j·P + p of the result
  // at index_of[j]·P + p.
  MatrixXd source_beta_jacobian(std::vector<int64_t>& index_of) const {
    const int64_t nsrc = static_cast<int64_t>(s.betavar_sources_.size());
    index_of.assign(s.nbins_, -1);
    MatrixXd D = MatrixXd::Zero(nsrc * P, n);
    Scratch sc;
    sc.resize(P, 1, 1, 0);
    MatrixXd Jrows(P, n);
    for (int64_t i = 0; i < nsrc; ++i) {
      const int64_t b = s.betavar_sources_[i];
      index_of[b] = i;
      yields(b, sc, 0);
      Jrows.setZero();
      for (int64_t q = 0; q < P; ++q) {
        VectorXd r = VectorXd::Zero(n);
        add_entry_jacobian(b * P + q, sc, q, 1.0, r.data());
        Jrows.row(q) = r.transpose();
      }
      const MatrixXd G = full_beta_sensitivity(b, sc);
      D.middleRows(i * P, P) = G * Jrows;
    }
    return D;
  }

  // The full evaluation. Returns the value; fills the outputs of req.
  double run(Request& req) {
    const VectorXd& xi = *req.xi;
    prepare_point(xi, req.V);
    const int64_t k = pt.k;
    const bool derivs = req.grad || k > 0 || req.hess;
    const int nc = derivs ? ncols(req.profile) : 1;
    const int64_t nb = s.end_ - s.begin_;
    const int64_t bw = beta_width();
    if (req.beta_out) req.beta_out->setZero(nb * bw);
    // Threads only where each gets enough work to amortise the parallel region's barrier: on a
    // small model a second thread costs more in OpenMP waiting than it saves (measured: 70 % of a
    // toy loop on a 6-bin model spent spinning in libgomp).
    const int64_t entries = I.bin_ptr[s.end_] - I.bin_ptr[s.begin_];
    const int64_t work = std::max<int64_t>(entries, nb) * (1 + k);
    const int64_t by_work = std::max<int64_t>(1, work / kMinWorkPerThread);
    const int T = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>({s.threads_, std::max<int64_t>(nb, 1), by_work})));
    std::vector<Accum> accs(T);

    // per-point cache (uncoupled profiled evaluations without Hessian or β output)
    auto& cache = I.cache;
    const bool cacheable = !I.coupled && !s.regularized_ && req.profile && !req.hess && !req.beta_out && I.cache_allowed;
    // (value-only calls are not served from the cache: the double path rounds differently from the
    // hyper-dual one, and value() stays what it always was)
    const bool hit = cacheable && derivs && cache.valid && cache.generation == I.generation &&
                     cache.xi.size() == xi.size() && cache.xi == xi && cache.ncol == nc;
    const bool fill = cacheable && derivs && !hit;
    if (fill) {
      const int64_t E = I.bin_ptr[s.end_] - I.bin_ptr[s.begin_];
      const double bytes = 8.0 * static_cast<double>(E) * (6.0 + nc) + 8.0 * nb * nc * nc;
      if (bytes > 1.0e9) {
        I.cache_allowed = false;  // never mind: the evaluation runs uncached
      } else {
        cache.valid = false;
        cache.ncol = nc;
        for (auto* v : {&cache.N, &cache.a, &cache.c, &cache.phi, &cache.d}) v->resize(E);
        cache.U.resize(E * nc);
        cache.M.resize(nb * nc * nc);
      }
    }
    const bool store = fill && I.cache_allowed;

    if (hit) {
      run_cached(req, accs, T, nc);
    } else if (!I.coupled) {
      int64_t maxe = 0;
      for (int64_t b = s.begin_; b < s.end_; ++b) maxe = std::max(maxe, I.bin_ptr[b + 1] - I.bin_ptr[b]);
#pragma omp parallel num_threads(T)
      {
        const int t = omp_get_thread_num();
        Accum& acc = accs[t];
        init_accum(acc, req, k);
        Scratch sc;
        sc.resize(maxe, 1, nc, k);
        const int64_t lo = s.begin_ + nb * t / T, hi = s.begin_ + nb * (t + 1) / T;
        for (int64_t b = lo; b < hi; ++b) {
          yields(b, sc, 0);
          double* bo = req.beta_out ? req.beta_out->data() + (b - s.begin_) * bw : nullptr;
          acc.f += profile_bin(b, sc, 0, 0, derivs, req.profile, bo);
          if (store) cache_bin(b, sc, true);
          if (derivs) accumulate(b, sc, 0, 0, req, acc, nullptr);
        }
        if (req.hess) {
          flush_E(acc);
          flush_J(acc);
        }
      }
    } else {
      run_coupled(req, accs, T, derivs);
    }
    MatrixXd JregT;  // regulariser: 𝒥ᵀ of the full yields, for the curvature of the penalty
    VectorXd nu_full;
    if (s.regularized_) JregT = add_regularizer(req, accs[0], derivs, nu_full);
    const double f = finish(req, accs);
    if (store) {
      cache.f = accs[0].f;
      cache.y = accs[0].y;
      cache.gpi = accs[0].gpi;
      cache.xi = xi;
      cache.generation = I.generation;
      cache.valid = true;
    }
    if (s.regularized_ && JregT.size() > 0) {
      if (k > 0 && req.hv_out) {
        const MatrixXd JV = JregT.transpose() * (*req.V);
        *req.hv_out += JregT * observable_penalty_hessian_product(*s.model_, nu_full, JV);
      }
      if (req.hess && req.hess_out) {
        const MatrixXd Hreg = JregT * observable_penalty_hessian_product(*s.model_, nu_full, JregT.transpose());
        *req.hess_out += 0.5 * (Hreg + Hreg.transpose());
      }
    }
    return f;
  }

  // Copies bin b's phase-A and profile quantities between slot 0 of sc and the point cache.
  void cache_bin(int64_t b, Scratch& sc, bool to_cache) const {
    auto& cache = I.cache;
    const int nc = sc.ncol;
    const int64_t off = I.bin_ptr[b] - I.bin_ptr[s.begin_], ne = I.bin_ptr[b + 1] - I.bin_ptr[b];
    const int64_t boff = (b - s.begin_) * nc * nc;
    auto copy = [&](std::vector<double>& c, std::vector<double>& v, int64_t o, int64_t len) {
      if (to_cache)
        std::copy(v.begin(), v.begin() + len, c.begin() + o);
      else
        std::copy(c.begin() + o, c.begin() + o + len, v.begin());
    };
    copy(cache.N, sc.N, off, ne);
    copy(cache.a, sc.a, off, ne);
    copy(cache.c, sc.c, off, ne);
    copy(cache.phi, sc.phi, off, ne);
    copy(cache.d, sc.d, off, ne);
    copy(cache.U, sc.U, off * nc, ne * nc);
    copy(cache.M, sc.M, boff, nc * nc);
  }

  // Evaluation at the cached point: value and gradient from the cache; an HVP reads each bin's rows
  // for δΛ = K2_b·Um and Oᵀ += K2_bᵀω only (no Λ, no exponentials, no profile).
  void run_cached(const Request& req, std::vector<Accum>& accs, int T, int nc) {
    const auto& cache = I.cache;
    const int64_t k = pt.k;
    const int64_t nb = s.end_ - s.begin_;
    for (auto& acc : accs) init_accum(acc, req, k);
    if (k > 0) {
      int64_t maxe = 0;
      for (int64_t b = s.begin_; b < s.end_; ++b) maxe = std::max(maxe, I.bin_ptr[b + 1] - I.bin_ptr[b]);
#pragma omp parallel num_threads(T)
      {
        const int t = omp_get_thread_num();
        Accum& acc = accs[t];
        Scratch sc;
        sc.resize(maxe, 1, nc, k);
        const int64_t lo = s.begin_ + nb * t / T, hi = s.begin_ + nb * (t + 1) / T;
        for (int64_t b = lo; b < hi; ++b) {
          cache_bin(b, sc, false);
          yields(b, sc, 0, true);
          accumulate(b, sc, 0, 0, req, acc, nullptr, false);
        }
      }
    }
    accs[0].f = cache.f;
    accs[0].y = cache.y;
    accs[0].gpi = cache.gpi;
  }

  // Adds exp(2τ)·penalty(ν_full) (docs/model.md "The regularisation term"): the value, and through accumulate() with φ = ∂pen/∂ν the
  // gradient 𝒥ᵀφ and the second-order yield term 𝒞(φ). Returns 𝒥ᵀ (n × B_f) when curvature is needed.
  MatrixXd add_regularizer(const Request& req, Accum& acc, bool derivs, VectorXd& nu_full) {
    const int64_t Bf = s.nbinsfull_;
    s.expected_yields(*req.xi, 0, Bf, CpuShardEvaluator::BetaMode::profiled, &nu_full, nullptr);
    VectorXd gnu = VectorXd::Zero(Bf);
    acc.f += observable_penalty(*s.model_, nu_full, derivs ? &gnu : nullptr);
    if (!derivs) return MatrixXd();
    int64_t maxe = 1;
    for (int64_t b = 0; b < Bf; ++b) maxe = std::max(maxe, I.bin_ptr[b + 1] - I.bin_ptr[b]);
    Scratch sc;
    sc.resize(maxe, 1, 1, pt.k);
    for (int64_t b = 0; b < Bf; ++b) {
      if (gnu[b] == 0.0) continue;
      yields(b, sc, 0);
      for (int64_t e = I.bin_ptr[b]; e < I.bin_ptr[b + 1]; ++e) {
        const int64_t i = e - I.bin_ptr[b];
        double mu = 1.0;  // β fixed at β⁰ here (masked channels, or no BB)
        if (s.bb_ == BBKind::gamma || s.bb_ == BBKind::normal_multiplicative) {
          const int64_t f = s.bb_full_ ? I.entry_flat[e] : b;
          if (!s.bbmask_[f] && (s.bb_full_ || active(e))) mu = s.beta0_[f];
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
          s.yield_jacobian(*req.xi, first, Bf, CpuShardEvaluator::BetaMode::profiled).transpose();
    return Jt;
  }

  // Covariance fit, normal-multiplicative, lite: gradient and Hessian of F(x) = ½ rᵀC⁻¹r + Σ_unmasked
  // ½k(β̂ − β⁰)² in x = [A; Z] (2B) with β̂ = 𝔄⁻¹𝔟, 𝔄 = D'C⁻¹D' + diag(k), 𝔟 = D'C⁻¹(n − Z) + k∘β⁰,
  // D' = diag(A'), differentiated literally as rabbit's autodiff does (masked bins solved as free and
  // then replaced by β⁰; A' = 1 with zero derivative for A ≤ 0). With L_β the partial gradient in β
  // (0 at a true profile): ∇F = L_x + Qᵀ L_β, Q = ∂β̂/∂x, and the Hessian adds to the Gauss-Newton
  // and mixed terms the adjoint term λᵀ ∂²β̂ (λ = 𝔄⁻¹ L_β). Returns ∇F; H into Hx.
  VectorXd lite_multiplicative_exact(int64_t B, const VectorXd& xval, const VectorXd& g, const MatrixXd& R,
                                     const Eigen::PartialPivLU<MatrixXd>& lu, const VectorXd& Ap,
                                     const VectorXd& bhat, MatrixXd& Hx) const {
    const MatrixXd& Ci = I.cov_inv;
    const VectorXd A = xval.head(B), Z = xval.tail(B);
    const int64_t nv = 2 * B;
    VectorXd delta(B), kfree = VectorXd::Zero(B), freeb = VectorXd::Zero(B);
    for (int64_t b = 0; b < B; ++b) {
      delta[b] = A[b] > 0.0 ? 1.0 : 0.0;
      if (!s.bbmask_[b]) {
        freeb[b] = 1.0;
        kfree[b] = s.kstat_[b];
      }
    }
    // partial derivatives with β independent (β of masked bins enters nothing)
    VectorXd Lbeta(B);
    for (int64_t b = 0; b < B; ++b)
      Lbeta[b] = freeb[b] * (g[b] * A[b] + s.kstat_[b] * (bhat[b] - s.beta0_[b]));
    const VectorXd Lx = R.transpose() * g;
    MatrixXd DA = MatrixXd::Zero(B, B);  // ∂ν/∂β
    for (int64_t b = 0; b < B; ++b) DA(b, b) = freeb[b] * A[b];
    MatrixXd Lxb = R.transpose() * Ci * DA;  // nv × B
    for (int64_t b = 0; b < B; ++b) Lxb(b, b) += freeb[b] * g[b];
    MatrixXd Lbb = DA * Ci * DA;
    Lbb.diagonal() += kfree;
    // Q = ∂β̂/∂x = 𝔄⁻¹ [diag(δ∘w) − D'C⁻¹diag(δ∘β̂) , −D'C⁻¹], w = C⁻¹(n − Z − D'β̂)
    const VectorXd w = Ci * (s.nobs_ - Z - Ap.cwiseProduct(bhat));
    MatrixXd rhs(B, nv);
    const MatrixXd DCi = Ap.asDiagonal() * Ci;
    rhs.leftCols(B) = -(DCi * (delta.cwiseProduct(bhat)).asDiagonal());
    rhs.leftCols(B).diagonal() += delta.cwiseProduct(w);
    rhs.rightCols(B) = -DCi;
    const MatrixXd Q = lu.solve(rhs);
    const VectorXd grad = Lx + Q.transpose() * Lbeta;
    const MatrixXd LxbQ = Lxb * Q;
    Hx = R.transpose() * Ci * R + LxbQ + LxbQ.transpose() + Q.transpose() * Lbb * Q;
    // adjoint term Σ_j L_β_j ∂²β̂_j/∂x∂x = λᵀ(𝔟'' − 𝔄'Q − (𝔄'Q)ᵀ − 𝔄''β̂), 𝔄 symmetric
    const VectorXd lambda = lu.transpose().solve(Lbeta);
    if (lambda.cwiseAbs().maxCoeff() > 0.0) {
      const MatrixXd CQ = Ci * Ap.asDiagonal() * Q;          // C⁻¹D'Q  (B × nv)
      const VectorXd cl = Ci * Ap.cwiseProduct(lambda);      // C⁻¹D'λ
      MatrixXd Y = MatrixXd::Zero(nv, nv);                    // rows A_i: λᵀ 𝔄_{A_i} Q
      for (int64_t i = 0; i < B; ++i)
        if (delta[i] != 0.0) Y.row(i) = lambda[i] * CQ.row(i) + cl[i] * Q.row(i);
      MatrixXd T = -(Y + Y.transpose());
      for (int64_t i = 0; i < B; ++i) {
        if (delta[i] == 0.0) continue;
        for (int64_t j = 0; j < B; ++j) {
          // 𝔟_{A_i Z_j} = −δ_i e_i C⁻¹_ij
          T(i, B + j) -= lambda[i] * Ci(i, j);
          T(B + j, i) -= lambda[i] * Ci(i, j);
          // 𝔄_{A_i A_j} β̂ = δ_iδ_j (e_i C⁻¹_ij β̂_j + e_j C⁻¹_ji β̂_i)
          if (delta[j] != 0.0) T(i, j) -= Ci(i, j) * (lambda[i] * bhat[j] + lambda[j] * bhat[i]);
        }
      }
      Hx += T;
    }
    Hx = 0.5 * (Hx + Hx.transpose()).eval();
    return grad;
  }

  // Covariance fit, normal-additive lite (per-process sumw2): F(ν⁰, A) = ½ rᵀC⁻¹r + ½|β̂ − β⁰|² with
  // β̂ = 𝔏⁻¹(s∘C⁻¹(n − ν⁰) + β⁰) (𝔏 = diag(s)C⁻¹diag(s) + I) and ν = ν⁰ + s∘f∘β̂, f_b = 1 for A_b > 0
  // and A_b otherwise (rabbit's A' = 1), differentiated literally in x = [ν⁰; A] (2B; the A_b
  // variables act only where A_b ≤ 0). profile = false: β̂ held fixed. Returns ∇F; the Hessian into Hx.
  VectorXd additive_lite_exact(int64_t B, const VectorXd& g, const VectorXd& bhat, const VectorXd& A,
                               const VectorXd& special, bool profile, MatrixXd& Hx) const {
    const MatrixXd& Ci = I.cov_inv;
    const VectorXd sv = s.sqrt_sigma2_.head(B);
    VectorXd f = VectorXd::Ones(B);
    for (int64_t b = 0; b < B; ++b)
      if (special[b] != 0.0) f[b] = A[b];
    const VectorXd sbA = special.cwiseProduct(sv).cwiseProduct(bhat);  // ∂ν_b/∂A_b
    MatrixXd Rb = MatrixXd::Zero(B, B);                                   // −∂β̂/∂ν⁰
    if (profile) Rb = I.additive_lu.solve(MatrixXd(sv.asDiagonal() * Ci));
    const MatrixXd Gm = MatrixXd::Identity(B, B) - sv.cwiseProduct(f).asDiagonal() * Rb;  // ∂ν/∂ν⁰
    const MatrixXd CiGm = Ci * Gm;
    VectorXd grad(2 * B);
    grad.head(B) = Gm.transpose() * g;
    if (profile) grad.head(B) -= Rb.transpose() * (bhat - s.beta0_.head(B));
    grad.tail(B) = sbA.cwiseProduct(g);
    Hx.resize(2 * B, 2 * B);
    Hx.topLeftCorner(B, B) = Gm.transpose() * CiGm;
    if (profile) Hx.topLeftCorner(B, B) += Rb.transpose() * Rb;
    MatrixXd HAn = sbA.asDiagonal() * CiGm;  // ∂²F/∂A_b∂ν⁰_j
    if (profile) HAn -= (special.cwiseProduct(sv).cwiseProduct(g)).asDiagonal() * Rb;
    Hx.bottomLeftCorner(B, B) = HAn;
    Hx.topRightCorner(B, B) = HAn.transpose();
    Hx.bottomRightCorner(B, B) = sbA.asDiagonal() * Ci * sbA.asDiagonal();
    return grad;
  }

  void run_coupled(Request& req, std::vector<Accum>& accs, int T, bool derivs) {
    const int64_t k = pt.k;
    const int64_t B = s.nbins_;  // coupled shards cover all observed bins
    const int64_t E = I.bin_ptr[B];
    const bool mult = s.bb_ == BBKind::normal_multiplicative;
    // coupled variables: v = a·B + b with a = 0 (ν⁰), a ∈ {active, zero-variance} (lite mult.),
    // or a = process (full mult.)
    // normal-additive lite: variables [ν⁰; A] (ν = ν⁰ + sβA/A' depends on A itself where A ≤ 0)
    const bool additive_lite = s.bb_ == BBKind::normal_additive && !s.bb_full_ && !s.legacy_sumw_;
    const int nc = !mult ? (additive_lite ? 2 : 1) : (s.bb_full_ ? static_cast<int>(P) : 2);
    const int64_t nvar = nc * B;
    Scratch sc;
    sc.resize(E, B, nc, k);
#pragma omp parallel for num_threads(T) schedule(static)
    for (int64_t b = 0; b < B; ++b) yields(b, sc, I.bin_ptr[b]);
    VectorXd nu0 = VectorXd::Zero(B);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t e = I.bin_ptr[b]; e < I.bin_ptr[b + 1]; ++e) nu0[b] += sc.N[e];
    const VectorXd& nobs = s.nobs_;
    const MatrixXd& Ci = I.cov_inv;
    VectorXd nu = nu0, beta_b;
    double Lb = 0.0;
    // per-entry multiplicative factor μ̃ (mult.), variable column a of each entry
    std::vector<double> mu(E, 1.0);
    std::vector<int> col(E, 0), col2(E, -1);  // col2: a second variable of the entry (normal-additive lite)
    VectorXd additive_A, additive_special;     // normal-additive lite: A_b, [A_b ≤ 0]
    if (s.bb_ == BBKind::normal_additive) {
      if (!s.bb_full_) {
        const VectorXd sv = s.sqrt_sigma2_.head(B);
        const VectorXd rhs = sv.cwiseProduct(Ci * (nobs - nu0)) + s.beta0_.head(B);
        beta_b = I.additive_lu.solve(rhs);
        additive_A = VectorXd::Zero(B);
        additive_special = VectorXd::Zero(B);
        for (int64_t b = 0; b < B; ++b) {
          double A = 0.0;
          for (int64_t e = I.bin_ptr[b]; e < I.bin_ptr[b + 1]; ++e)
            if (active(e)) A += sc.N[e];
          const double f = s.legacy_sumw_ ? 1.0 : (A > 0.0 ? 1.0 : A);
          nu[b] = nu0[b] + sv[b] * beta_b[b] * f;
          additive_A[b] = A;
          if (additive_lite && !(A > 0.0)) {
            additive_special[b] = 1.0;
            for (int64_t e = I.bin_ptr[b]; e < I.bin_ptr[b + 1]; ++e)
              if (active(e)) col2[e] = 1;
          }
        }
        Lb = 0.5 * (beta_b - s.beta0_.head(B)).squaredNorm();
      } else {
        VectorXd W0 = VectorXd::Zero(B);
        for (int64_t b = 0; b < B; ++b)
          for (int64_t p = 0; p < P; ++p) W0[b] += s.sqrt_sigma2_[b * P + p] * s.beta0_[b * P + p];
        const VectorXd Tt = I.additive_lu.solve(I.additive_V.cwiseProduct(Ci * (nobs - nu0)) + W0);
        const VectorXd u = Ci * (Tt + nu0 - nobs);
        nu = nu0 + W0 - I.additive_V.cwiseProduct(u);
        Lb = 0.5 * I.additive_V.dot(u.cwiseProduct(u));
        beta_b.resize(B * P);
        for (int64_t b = 0; b < B; ++b)
          for (int64_t p = 0; p < P; ++p)
            beta_b[b * P + p] = s.beta0_[b * P + p] - s.sqrt_sigma2_[b * P + p] * u[b];
      }
    }
    // normal-multiplicative (docs/likelihood.md "Profiled β" covariance table): general linear solves
    VectorXd xval;  // the coupled variables' values (A/Z per bin, or N per (bin, process))
    Eigen::PartialPivLU<MatrixXd> lite_mult_lu;  // lite: the solve of rabbit's closed form, its A', all β̂
    VectorXd lite_mult_Ap, lite_mult_beta;
    std::vector<int64_t> free_index;  // β entries that are free (unmasked)
    if (mult) {
      xval = VectorXd::Zero(nvar);
      for (int64_t b = 0; b < B; ++b)
        for (int64_t e = I.bin_ptr[b]; e < I.bin_ptr[b + 1]; ++e) {
          col[e] = s.bb_full_ ? I.entry_proc[e] : (active(e) ? 0 : 1);
          xval[col[e] * B + b] += sc.N[e];
        }
      if (!s.bb_full_) {
        VectorXd A = xval.head(B), Z = xval.tail(B), Ap = A;
        for (int64_t b = 0; b < B; ++b)
          if (!(A[b] > 0.0)) Ap[b] = 1.0;
        const VectorXd kv = s.kstat_.head(B);
        MatrixXd mat = Ap.asDiagonal() * Ci * Ap.asDiagonal();
        mat.diagonal() += kv;
        lite_mult_lu.compute(mat);
        lite_mult_Ap = Ap;
        beta_b = lite_mult_lu.solve(Ap.cwiseProduct(Ci * (nobs - Z)) + kv.cwiseProduct(s.beta0_.head(B)));
        lite_mult_beta = beta_b;
        for (int64_t b = 0; b < B; ++b) {
          if (s.bbmask_[b]) {
            beta_b[b] = s.beta0_[b];
            nu[b] = A[b] + Z[b];
          } else {
            nu[b] = beta_b[b] * A[b] + Z[b];
            Lb += 0.5 * kv[b] * (beta_b[b] - s.beta0_[b]) * (beta_b[b] - s.beta0_[b]);
            free_index.push_back(b);
          }
          for (int64_t e = I.bin_ptr[b]; e < I.bin_ptr[b + 1]; ++e)
            mu[e] = (!s.bbmask_[b] && active(e)) ? beta_b[b] : 1.0;
        }
      } else {
        VectorXd Sb = VectorXd::Zero(B), Tb = VectorXd::Zero(B);
        for (int64_t b = 0; b < B; ++b)
          for (int64_t e = I.bin_ptr[b]; e < I.bin_ptr[b + 1]; ++e) {
            const int64_t f = I.entry_flat[e];
            if (!s.bbmask_[f]) Sb[b] += sc.N[e] * sc.N[e] / s.kstat_[f];
            Tb[b] += sc.N[e] * s.beta0_[f];
          }
        MatrixXd mat = Sb.asDiagonal() * Ci;
        mat.diagonal().array() += 1.0;
        const VectorXd nuhat = mat.partialPivLu().solve(Sb.cwiseProduct(Ci * nobs) + Tb);
        const VectorXd u = Ci * (nuhat - nobs);
        beta_b = s.beta0_.head(B * P);
        nu.setZero();
        for (int64_t b = 0; b < B; ++b)
          for (int64_t e = I.bin_ptr[b]; e < I.bin_ptr[b + 1]; ++e) {
            const int64_t f = I.entry_flat[e];
            if (!s.bbmask_[f]) {
              beta_b[f] = s.beta0_[f] - sc.N[e] / s.kstat_[f] * u[b];
              Lb += 0.5 * s.kstat_[f] * (beta_b[f] - s.beta0_[f]) * (beta_b[f] - s.beta0_[f]);
              mu[e] = beta_b[f];
              free_index.push_back(e);
            }
            nu[b] += mu[e] * sc.N[e];
          }
      }
    }
    const VectorXd r = nu - nobs;
    const VectorXd g = Ci * r;
    if (req.beta_out && beta_b.size() > 0) *req.beta_out = beta_b;
    for (int t = 0; t < T; ++t) init_accum(accs[t], req, k);
    accs[0].f = 0.5 * r.dot(g) + Lb;
    if (!derivs) return;
    // Ψ over the coupled variables
    MatrixXd Wmat;
    VectorXd gradx;  // ∂F/∂x when it is not the envelope g∘μ
    if (additive_lite) {
      gradx = additive_lite_exact(B, g, beta_b, additive_A, additive_special, req.profile, Wmat);
    } else if (!mult) {
      Wmat = (s.bb_ == BBKind::normal_additive && req.profile) ? I.cov_profiled_weight : I.cov_inv;
    } else {
      // R (B × nvar): ∂ν/∂x at fixed β; D (B × nβ): ∂ν/∂β; G (nvar × nβ): g_b where x is scaled by β_j
      MatrixXd R = MatrixXd::Zero(B, nvar);
      for (int64_t b = 0; b < B; ++b)
        for (int64_t e = I.bin_ptr[b]; e < I.bin_ptr[b + 1]; ++e) R(b, col[e] * B + b) = mu[e];
      Wmat = R.transpose() * Ci * R;
      const int64_t nbeta = static_cast<int64_t>(free_index.size());
      if (req.profile && !s.bb_full_) {
        // rabbit's derivatives of its own closed form (covers the BB-masked bins solved as free and
        // A' = 1 for A ≤ 0, where β̂ is not the profile, docs/likelihood.md "BB derivative corner cases" item 2)
        gradx = lite_multiplicative_exact(B, xval, g, R, lite_mult_lu, lite_mult_Ap, lite_mult_beta, Wmat);
      } else if (req.profile && nbeta > 0) {
        MatrixXd D = MatrixXd::Zero(B, nbeta), G = MatrixXd::Zero(nvar, nbeta);
        VectorXd c2(nbeta);
        for (int64_t j = 0; j < nbeta; ++j) {
          if (!s.bb_full_) {
            const int64_t b = free_index[j];
            D(b, j) = xval[b];  // A_b
            G(b, j) = g[b];     // variable A_b is scaled by β_b
            c2[j] = s.kstat_[b];
          } else {
            const int64_t e = free_index[j];
            const int64_t b = I.entry_flat[e] / P;
            D(b, j) = sc.N[e];
            G(col[e] * B + b, j) = g[b];
            c2[j] = s.kstat_[I.entry_flat[e]];
          }
        }
        const MatrixXd fxb = R.transpose() * Ci * D + G;
        MatrixXd fbb = D.transpose() * Ci * D;
        fbb.diagonal() += c2;
        Wmat -= fxb * fbb.ldlt().solve(fxb.transpose());
        Wmat = 0.5 * (Wmat + Wmat.transpose()).eval();
      }
    }
    for (int64_t b = 0; b < B; ++b)
      for (int64_t e = I.bin_ptr[b]; e < I.bin_ptr[b + 1]; ++e) {
        sc.phi[e] = gradx.size() ? gradx[col[e] * B + b] : g[b] * mu[e];
        for (int a = 0; a < nc; ++a) sc.U[e * nc + a] = 0.0;
        sc.U[e * nc + col[e]] = 1.0;
        if (col2[e] >= 0) {
          sc.phi[e] += gradx[col2[e] * B + b];
          sc.U[e * nc + col2[e]] = 1.0;
        }
        sc.d[e] = 0.0;
      }
    std::vector<double> zbuf;
    if (k > 0) {
      MatrixXd tb = MatrixXd::Zero(nvar, k);
      for (int64_t b = 0; b < B; ++b)
        for (int64_t e = I.bin_ptr[b]; e < I.bin_ptr[b + 1]; ++e)
          for (int64_t j = 0; j < k; ++j) {
            tb(col[e] * B + b, j) += sc.dN[e * k + j];
            if (col2[e] >= 0) tb(col2[e] * B + b, j) += sc.dN[e * k + j];
          }
      const MatrixXd zc = Wmat * tb;
      zbuf.assign(B * k * nc, 0.0);
      for (int64_t b = 0; b < B; ++b)
        for (int64_t j = 0; j < k; ++j)
          for (int a = 0; a < nc; ++a) zbuf[(b * k + j) * nc + a] = zc(a * B + b, j);
    }
#pragma omp parallel num_threads(T)
    {
      const int t = omp_get_thread_num();
      Accum& acc = accs[t];
      const int64_t lo = B * t / T, hi = B * (t + 1) / T;
      for (int64_t b = lo; b < hi; ++b)
        accumulate(b, sc, I.bin_ptr[b], b, req, acc, k > 0 ? zbuf.data() + b * k * nc : nullptr);
      if (req.hess) flush_E(acc);
    }
    if (req.hess) {
      MatrixXd J = MatrixXd::Zero(n, nvar);
      for (int64_t b = 0; b < B; ++b)
        for (int64_t e = I.bin_ptr[b]; e < I.bin_ptr[b + 1]; ++e) {
          const int p = I.entry_proc[e];
          for (int which = 0; which < 2; ++which) {
            const int a = which == 0 ? col[e] : col2[e];
            if (a < 0) continue;
            const int64_t v = a * B + b;
            if (M > 0) J.col(v).head(M) += sc.a[e] * pt.jr.row(p).transpose();
            I.row_E_axpy(e, sc.c[e], pt.hp.data(), J.col(v).data() + M);
          }
        }
      accs[0].HJ.noalias() += J * (Wmat * J.transpose());
    }
  }

  double finish(Request& req, std::vector<Accum>& accs) {
    Accum& tot = accs[0];
    for (size_t t = 1; t < accs.size(); ++t) {
      tot.f += accs[t].f;
      tot.y += accs[t].y;
      tot.gpi += accs[t].gpi;
      if (pt.k > 0) {
        tot.O += accs[t].O;
        tot.hpi += accs[t].hpi;
      }
      if (req.hess) {
        tot.HJ += accs[t].HJ;
        tot.HE += accs[t].HE;
        tot.X += accs[t].X;
        tot.Ypp += accs[t].Ypp;
      }
    }
    req.f = tot.f;
    const bool derivs = req.grad || pt.k > 0 || req.hess;
    if (!derivs) return tot.f;
    // y = [y_a; y_d]
    VectorXd gth = tot.y.head(S);
    VectorXd yd = I.symmetric ? VectorXd::Zero(S) : VectorXd(tot.y.tail(S));
    if (!I.symmetric) gth += pt.hp.cwiseProduct(yd);
    if (req.grad_out) {
      VectorXd& g = *req.grad_out;
      g.resize(n);
      if (M > 0) g.head(M) = pt.jr.transpose() * tot.gpi;
      g.tail(S) = gth;
    }
    MatrixXd curv;  // 𝒞_ππ
    if (M > 0 && (pt.k > 0 || req.hess)) curv = s.model_->param_model->rate_curvature(pt.pi, tot.gpi);
    if (pt.k > 0 && req.hv_out) {
      MatrixXd& HV = *req.hv_out;
      HV.resize(n, pt.k);
      MatrixXd oth = tot.O.topRows(S);
      if (!I.symmetric) {
        oth += pt.hp.asDiagonal() * tot.O.bottomRows(S);
        oth += (pt.hpp.cwiseProduct(yd)).asDiagonal() * pt.Vtheta;
      }
      HV.bottomRows(S) = oth;
      if (M > 0) HV.topRows(M) = pt.jr.transpose() * tot.hpi + curv * pt.Vpi;
    }
    if (req.hess && req.hess_out) {
      MatrixXd& H = *req.hess_out;
      H = 0.5 * (tot.HJ + tot.HJ.transpose());
      MatrixXd HEfull = tot.HE.selfadjointView<Eigen::Lower>();
      H.bottomRightCorner(S, S) += HEfull;
      if (!I.symmetric) H.bottomRightCorner(S, S).diagonal() += pt.hpp.cwiseProduct(yd);
      if (M > 0) {
        MatrixXd Hpp = curv;
        for (int64_t p = 0; p < P; ++p) Hpp += tot.Ypp[p] * pt.jr.row(p).transpose() * pt.jr.row(p);
        H.topLeftCorner(M, M) += Hpp;
        const MatrixXd Hpt = pt.jr.transpose() * tot.X;
        H.topRightCorner(M, S) += Hpt;
        H.bottomLeftCorner(S, M) += Hpt.transpose();
      }
    }
    return tot.f;
  }
};

}  // namespace cpu_detail

// ------------------------------------------------------------------------------------------------
double CpuShardEvaluator::value(const VectorXd& xi) {
  cpu_detail::Engine eng(*this, *impl_);
  Request req;
  req.xi = &xi;
  return eng.run(req);
}

double CpuShardEvaluator::value_grad(const VectorXd& xi, VectorXd& grad) {
  cpu_detail::Engine eng(*this, *impl_);
  Request req;
  req.xi = &xi;
  req.grad = true;
  req.grad_out = &grad;
  return eng.run(req);
}

double CpuShardEvaluator::value_grad_hvp(const VectorXd& xi, const MatrixXd& V, VectorXd& grad, MatrixXd& HV) {
  if (V.rows() != nx_) throw Error(fmt::format("CPU shard HVP: V has {} rows, expected {}", V.rows(), nx_));
  cpu_detail::Engine eng(*this, *impl_);
  Request req;
  req.xi = &xi;
  req.grad = true;
  req.grad_out = &grad;
  req.V = &V;
  req.hv_out = &HV;
  return eng.run(req);
}

double CpuShardEvaluator::value_grad_hess(const VectorXd& xi, VectorXd& grad, MatrixXd& hess, bool profile) {
  cpu_detail::Engine eng(*this, *impl_);
  Request req;
  req.xi = &xi;
  req.grad = true;
  req.grad_out = &grad;
  req.hess = true;
  req.hess_out = &hess;
  req.profile = profile;
  return eng.run(req);
}

VectorXd CpuShardEvaluator::profiled_beta(const VectorXd& xi) {
  if (!has_bb()) return VectorXd();
  cpu_detail::Engine eng(*this, *impl_);
  Request req;
  req.xi = &xi;
  VectorXd beta;
  req.beta_out = &beta;
  eng.run(req);
  // masked entries stay at β⁰ (docs/likelihood.md "Profiled β")
  const int64_t w = bb_full_ ? nproc_ : 1;
  for (int64_t i = 0; i < beta.size(); ++i) {
    const int64_t f = begin_ * w + i;
    if (bb_ != BBKind::normal_additive && bbmask_[f]) beta[i] = beta0_[f];
  }
  return beta;
}


// ---- postfit -------------------------------------------------------------------------------------

void CpuShardEvaluator::expected_yields(const VectorXd& xi, int64_t first, int64_t last, BetaMode mode,
                                        VectorXd* per_bin, MatrixXd* per_process) {
  if (first < 0 || last < first || last > nbinsfull_)
    throw Error(fmt::format("expected_yields: bin range [{}, {}) outside the {} bins", first, last, nbinsfull_));
  cpu_detail::Engine eng(*this, *impl_);
  eng.prepare_point(xi, nullptr);
  Impl& I = *impl_;
  const int64_t nb = last - first, P = nproc_;
  if (per_bin) per_bin->setZero(nb);
  if (per_process) per_process->setZero(nb, P);
  const int64_t bw = eng.beta_width();
  VectorXd coupled_beta;
  if (mode == BetaMode::profiled && has_bb() && I.coupled && (first < nbins_ || betavar_)) coupled_beta = profiled_beta(xi);
  int64_t maxe = 0;
  for (int64_t b = first; b < last; ++b) maxe = std::max(maxe, I.bin_ptr[b + 1] - I.bin_ptr[b]);
  Scratch sc;
  sc.resize(std::max<int64_t>(maxe, 1), 1, 1, 0);
  std::vector<double> beta(std::max<int64_t>(bw, 1));
  VectorXd delta;
  if (betavar_ && last > nbins_) delta = eng.beta_variation_shifts(mode, coupled_beta);
  for (int64_t b = first; b < last; ++b) {
    eng.yields(b, sc, 0);
    const int64_t e0 = I.bin_ptr[b], e1 = I.bin_ptr[b + 1];
    const bool use_beta = eng.postfit_bin_beta(b, mode, coupled_beta, sc, beta.data());
    if (use_beta && betavar_ && b >= nbins_) eng.apply_beta_variations(b, delta, sc, nullptr);
    double A = 0.0;
    for (int64_t e = e0; e < e1; ++e)
      if (eng.active(e)) A += sc.N[e - e0];
    // lite normal-additive: the bin's s·β is distributed in proportion to N/A (A' = 1 where A ≤ 0,
    // so there the addition is s·β·A); legacy per-bin input has no A' and adds s·β (rabbit's N/ν⁰)
    const bool divide_by_A = A > 0.0 || (legacy_sumw_ && A != 0.0);
    const double Asafe = divide_by_A ? A : 1.0;
    double total = 0.0;
    for (int64_t e = e0; e < e1; ++e) {
      const int p = I.entry_proc[e];
      const int64_t f = I.entry_flat[e];
      double y = sc.N[e - e0];
      if (use_beta) {
        if (bb_ == BBKind::normal_additive) {
          if (!bb_full_) y += sqrt_sigma2_[b] * beta[0] * (eng.active(e) ? sc.N[e - e0] : 0.0) / Asafe;
        } else if (bb_full_) {
          if (!bbmask_[f]) y *= beta[p];
        } else if (!bbmask_[b] && eng.active(e)) {
          y *= beta[0];
        }
      }
      total += y;
      if (per_process) (*per_process)(b - first, p) += y;
    }
    if (use_beta && bb_ == BBKind::normal_additive && bb_full_) {
      for (int64_t p = 0; p < P; ++p) {
        const double add = sqrt_sigma2_[b * P + p] * beta[p];
        total += add;
        if (per_process) (*per_process)(b - first, p) += add;
      }
    }
    if (per_bin) (*per_bin)[b - first] = total;
  }
}

namespace {

// Covariance fit, normal-multiplicative: dν/dξ [B × n] of the observed bins' yields through rabbit's
// closed-form β̂ (differentiated literally, as its autodiff does; masked bins/entries unscaled).
// Lite, x = [A; Z]: ν_b = Z_b + A_b β̂_b (unmasked) or A_b + Z_b, β̂ = 𝔄⁻¹𝔟 with 𝔄 = D'C⁻¹D' + diag(k),
// 𝔟 = D'C⁻¹(n − Z) + k∘β⁰, D' = diag(A'), ∂β̂/∂x = Q as in lite_multiplicative_exact.
// Full: ν_b = Tu_b + M_b − S_b u_b, u = C⁻¹(ν̂ − n), 𝔐ν̂ = diag(S)C⁻¹n + Tu + Tm, 𝔐 = diag(S)C⁻¹ + I, so
// dν = dTu + dM − u∘dS − S∘K(dTu + dTm − u∘dS) with K = C⁻¹𝔐⁻¹ (S = Σ_unmasked N²/k, Tu/Tm = Σ β⁰N over
// unmasked/masked entries, M = Σ_masked N).
template <class Engine, class AddRow>
MatrixXd coupled_multiplicative_jacobian(const CpuShardEvaluator& s, Engine& eng, const AddRow& add_row,
                                         int64_t B, int64_t P, int64_t M, int64_t n, bool full,
                                         const std::vector<uint8_t>& mask, const VectorXd& kstat,
                                         const VectorXd& beta0, const VectorXd& nobs, const MatrixXd& Ci,
                                         MatrixXd* beta_jac = nullptr) {
  auto& I = eng.I;
  (void)s;
  Scratch so;
  int64_t maxo = 1;
  for (int64_t b = 0; b < B; ++b) maxo = std::max(maxo, I.bin_ptr[b + 1] - I.bin_ptr[b]);
  so.resize(maxo, 1, 1, 0);
  // per-bin sums and their Jacobian rows: lite (A, Z); full (S, Tu, Tm, M)
  const int nsum = full ? 4 : 2;
  std::vector<VectorXd> val(nsum, VectorXd::Zero(B));
  std::vector<MatrixXd> jac(nsum, MatrixXd::Zero(B, n));
  MatrixXd entry_rows;  // full with beta_jac: ∂N_f/∂ξ per flat entry b·P + p
  VectorXd entry_N;
  if (beta_jac) {
    entry_rows = MatrixXd::Zero(B * P, n);
    entry_N = VectorXd::Zero(B * P);
  }
  VectorXd r(n);
  for (int64_t b = 0; b < B; ++b) {
    eng.yields(b, so, 0);
    for (int64_t e = I.bin_ptr[b]; e < I.bin_ptr[b + 1]; ++e) {
      const int64_t i = e - I.bin_ptr[b], f = I.entry_flat[e];
      const double N = so.N[i];
      r.setZero();
      add_row(e, so.a[i], r.data());
      I.row_E_axpy(e, so.c[i], eng.pt.hp.data(), r.data() + M);
      if (beta_jac) {
        entry_rows.row(f) = r.transpose();
        entry_N[f] = N;
      }
      auto add = [&](int which, double value, double weight) {
        val[which][b] += value;
        jac[which].row(b) += weight * r.transpose();
      };
      if (!full) {
        add(eng.active(e) ? 0 : 1, N, 1.0);
      } else if (mask[f]) {
        add(2, beta0[f] * N, beta0[f]);
        add(3, N, 1.0);
      } else {
        add(0, N * N / kstat[f], 2.0 * N / kstat[f]);
        add(1, beta0[f] * N, beta0[f]);
      }
    }
  }
  const MatrixXd Id = MatrixXd::Identity(B, B);
  if (!full) {
    const VectorXd& A = val[0];
    const VectorXd& Z = val[1];
    VectorXd Ap = A, delta = VectorXd::Zero(B), k = kstat.head(B);
    for (int64_t b = 0; b < B; ++b) {
      if (A[b] > 0.0) delta[b] = 1.0;
      else Ap[b] = 1.0;
    }
    MatrixXd mat = Ap.asDiagonal() * Ci * Ap.asDiagonal();
    mat.diagonal() += k;
    const Eigen::PartialPivLU<MatrixXd> lu(mat);
    const VectorXd bhat = lu.solve(Ap.cwiseProduct(Ci * (nobs - Z)) + k.cwiseProduct(beta0.head(B)));
    const VectorXd w = Ci * (nobs - Z - Ap.cwiseProduct(bhat));
    const MatrixXd DCi = Ap.asDiagonal() * Ci;
    MatrixXd QA = -(DCi * delta.cwiseProduct(bhat).asDiagonal());
    QA.diagonal() += delta.cwiseProduct(w);
    QA = lu.solve(QA);                 // ∂β̂/∂A
    const MatrixXd QZ = lu.solve(-DCi);  // ∂β̂/∂Z
    MatrixXd dA = Id, dZ = Id;
    for (int64_t b = 0; b < B; ++b) {
      if (mask[b]) continue;
      dA(b, b) = bhat[b];
      dA.row(b) += A[b] * QA.row(b);
      dZ.row(b) += A[b] * QZ.row(b);
    }
    return dA * jac[0] + dZ * jac[1];
  }
  const VectorXd& S = val[0];
  MatrixXd mat = S.asDiagonal() * Ci;
  mat.diagonal().array() += 1.0;
  const Eigen::PartialPivLU<MatrixXd> lu(mat);
  const VectorXd nuhat = lu.solve(S.cwiseProduct(Ci * nobs) + val[1] + val[2]);
  const VectorXd u = Ci * (nuhat - nobs);
  const MatrixXd SK = S.asDiagonal() * Ci * lu.solve(Id);  // diag(S) C⁻¹ 𝔐⁻¹
  const MatrixXd dS = -MatrixXd(u.asDiagonal()) + SK * u.asDiagonal();
  if (beta_jac) {
    // β̂_f = β⁰_f − (N_f/k_f) u_b (unmasked), du = C⁻¹𝔐⁻¹(dTu + dTm − u∘dS)
    const MatrixXd du = Ci * lu.solve(MatrixXd(jac[1] + jac[2] - u.asDiagonal() * jac[0]));
    beta_jac->setZero(B * P, n);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t p = 0; p < P; ++p) {
        const int64_t f = b * P + p;
        if (mask[f]) continue;
        beta_jac->row(f) = -(u[b] * entry_rows.row(f) + entry_N[f] * du.row(b)) / kstat[f];
      }
  }
  return dS * jac[0] + (Id - SK) * jac[1] - SK * jac[2] + jac[3];
}

}  // namespace

MatrixXd CpuShardEvaluator::yield_jacobian(const VectorXd& xi, int64_t first, int64_t last, BetaMode mode) {
  if (first < 0 || last < first || last > nbinsfull_)
    throw Error(fmt::format("yield_jacobian: bin range [{}, {}) outside the {} bins", first, last, nbinsfull_));
  cpu_detail::Engine eng(*this, *impl_);
  eng.prepare_point(xi, nullptr);
  Impl& I = *impl_;
  const int64_t nb = last - first, M = nparams_, n = nx_;
  MatrixXd J = MatrixXd::Zero(nb, n);
  const bool through_beta = mode == BetaMode::profiled && has_bb();
  VectorXd coupled_beta;
  if (through_beta && I.coupled && (first < nbins_ || betavar_)) coupled_beta = profiled_beta(xi);
  // beta variations (docs/likelihood.md "Beta variations"): masked-bin factors and, through β̂, dβ̂/dξ of the source bins
  const bool betavar_rows = betavar_ && mode != BetaMode::none && last > nbins_;
  VectorXd delta;
  MatrixXd source_jac;
  std::vector<int64_t> source_index;
  if (betavar_rows) {
    delta = eng.beta_variation_shifts(mode, coupled_beta);
    if (through_beta && !I.coupled) source_jac = eng.source_beta_jacobian(source_index);
  }
  std::vector<double> pre_N(nproc_), bv_factor(nproc_);
  const int64_t bw = eng.beta_width();
  int64_t maxe = 0;
  for (int64_t b = first; b < last; ++b) maxe = std::max(maxe, I.bin_ptr[b + 1] - I.bin_ptr[b]);
  if (I.coupled) maxe = std::max(maxe, I.bin_ptr[nbins_]);
  Scratch sc;
  sc.resize(std::max<int64_t>(maxe, 1), 1, 4, 0);
  std::vector<double> kappa(std::max<int64_t>(maxe, 1)), beta(std::max<int64_t>(bw, 1));
  // rows of the coupled fit: ν = Mix ν⁰ over the observed bins
  MatrixXd J0;  // Σ_e 𝒥_e per observed bin (coupled, profiled)
  auto add_row = [&](int64_t e, double w, double* row) {
    const int p = I.entry_proc[e];
    const int64_t i = e - I.bin_ptr[0];
    (void)i;
    if (M > 0)
      for (int64_t k = 0; k < M; ++k) row[k] += w * eng.pt.jr(p, k);
  };
  if (betavar_rows && through_beta && I.coupled) {
    // covariance fit (normal-multiplicative full): dβ̂/dξ of every observed entry from the linear solve
    source_index.resize(nbins_);
    for (int64_t j = 0; j < nbins_; ++j) source_index[j] = j;
    coupled_multiplicative_jacobian(*this, eng, add_row, nbins_, nproc_, M, n, bb_full_, bbmask_, kstat_, beta0_,
                                    nobs_, I.cov_inv, &source_jac);
  }
  for (int64_t b = first; b < last; ++b) {
    const int64_t e0 = I.bin_ptr[b], e1 = I.bin_ptr[b + 1];
    eng.yields(b, sc, 0);
    const bool observed = b < nbins_;
    if (betavar_rows && !observed) {
      for (int64_t p = 0; p < nproc_; ++p) pre_N[p] = sc.N[p];
      eng.apply_beta_variations(b, delta, sc, bv_factor.data());
    }
    double A = 0.0;
    for (int64_t e = e0; e < e1; ++e)
      if (eng.active(e)) A += sc.N[e - e0];
    if (through_beta && observed && !I.coupled) {
      if (!bb_full_) {
        using HD = HyperDual<2>;
        double Z = 0.0;
        for (int64_t e = e0; e < e1; ++e)
          if (!eng.active(e)) Z += sc.N[e - e0];
        HD hb, hnu;
        cpu::lite_bin_objective(HD::variable(A, 0), HD::variable(Z, 1), eng.observation(b), likelihood_, bb_,
                                eng.lite_entry(b), legacy_sumw_, false, &hb, &hnu);
        for (int64_t e = e0; e < e1; ++e) kappa[e - e0] = eng.active(e) ? hnu.g[0] : hnu.g[1];
      } else if (bb_ == BBKind::normal_additive) {
        using HD = HyperDual<1>;
        double nu0 = 0.0, V = 0.0, W0 = 0.0;
        for (int64_t e = e0; e < e1; ++e) nu0 += sc.N[e - e0];
        for (int64_t p = 0; p < nproc_; ++p) {
          V += sigma2_[b * nproc_ + p];
          W0 += sqrt_sigma2_[b * nproc_ + p] * beta0_[b * nproc_ + p];
        }
        HD rho, hnu;
        cpu::full_additive_bin_objective(HD::variable(nu0, 0), V, W0, eng.observation(b), likelihood_, false, &rho,
                                         &hnu);
        for (int64_t e = e0; e < e1; ++e) kappa[e - e0] = hnu.g[0];
      } else if (bb_ == BBKind::normal_multiplicative) {
        using HD = HyperDual<4>;
        double S_ = 0.0, Tu = 0.0, Tm = 0.0, Mm = 0.0;
        for (int64_t e = e0; e < e1; ++e) {
          const int64_t f = I.entry_flat[e];
          const double N = sc.N[e - e0];
          if (bbmask_[f]) {
            Tm += beta0_[f] * N;
            Mm += N;
          } else {
            S_ += N * N / kstat_[f];
            Tu += beta0_[f] * N;
          }
        }
        HD rho, hnu;
        cpu::full_multiplicative_bin_objective(HD::variable(S_, 0), HD::variable(Tu, 1), HD::variable(Tm, 2),
                                               HD::variable(Mm, 3), eng.observation(b), likelihood_, &rho, &hnu);
        for (int64_t e = e0; e < e1; ++e) {
          const int64_t f = I.entry_flat[e];
          const double N = sc.N[e - e0];
          kappa[e - e0] = bbmask_[f] ? beta0_[f] * hnu.g[2] + hnu.g[3]
                                     : 2.0 * N / kstat_[f] * hnu.g[0] + beta0_[f] * hnu.g[1];
        }
      } else {
        bool masked_off_one = false;  // docs/likelihood.md "BB derivative corner cases" item 3: the Newton objective's ν̃ ≠ the bin's ν
        for (int64_t e = e0; e < e1; ++e) {
          const int64_t f = I.entry_flat[e];
          masked_off_one = masked_off_one || (bbmask_[f] && beta0_[f] != 1.0);
        }
        if (!masked_off_one) {  // gamma full: dν/dN_p = w_p / (1 + q t)
          sc.ncol = 1;
          eng.full_gamma_profile(b, sc, 0, 0, true, true, nullptr);
          for (int64_t e = e0; e < e1; ++e) kappa[e - e0] = sc.U[e - e0] * sc.aux[0];
          sc.ncol = 4;
        } else {
          // ν = Σ_unmasked β̂_p N_p + Σ_masked N_p with dβ̂/dN of the Newton solution (implicit function;
          // rabbit's one differentiable Newton step from the converged point has the same first
          // derivative up to O(f'(u0))): dν/dN_q = μ_q + Σ_unmasked N_p ∂β̂_p/∂N_q.
          const MatrixXd G = eng.full_beta_sensitivity(b, sc);
          std::vector<double> bh(nproc_);
          eng.profile_bin(b, sc, 0, 0, false, true, bh.data());
          VectorXd Nu = VectorXd::Zero(nproc_);
          for (int64_t e = e0; e < e1; ++e)
            if (!bbmask_[I.entry_flat[e]]) Nu[I.entry_proc[e]] = sc.N[e - e0];
          const VectorXd dnu = G.transpose() * Nu;
          for (int64_t e = e0; e < e1; ++e) {
            const int q = I.entry_proc[e];
            kappa[e - e0] = (bbmask_[I.entry_flat[e]] ? 1.0 : bh[q]) + dnu[q];
          }
        }
      }
    } else if (through_beta && observed && I.coupled) {
      for (int64_t e = e0; e < e1; ++e) kappa[e - e0] = 1.0;  // mixed below
    } else {
      // β fixed (stored, β⁰ for masked channels in profiled mode, or none)
      const bool use_beta = has_bb() && mode != BetaMode::none;
      if (use_beta) {
        const VectorXd& src = (mode == BetaMode::stored) ? beta_stored_ : beta0_;
        for (int64_t j = 0; j < bw; ++j) beta[j] = src[b * bw + j];
      }
      for (int64_t e = e0; e < e1; ++e) {
        const int p = I.entry_proc[e];
        const int64_t f = I.entry_flat[e];
        double kv = 1.0;
        if (use_beta) {
          if (bb_ == BBKind::normal_additive) {
            if (!bb_full_ && !legacy_sumw_ && A <= 0.0 && eng.active(e)) kv += sqrt_sigma2_[b] * beta[0];
          } else if (bb_full_) {
            if (!bbmask_[f]) kv = beta[p];
          } else if (!bbmask_[b] && eng.active(e)) {
            kv = beta[0];
          }
        }
        kappa[e - e0] = kv;
      }
    }
    double* row = J.row(b - first).data();
    (void)row;
    VectorXd r = VectorXd::Zero(n);
    for (int64_t e = e0; e < e1; ++e) {
      const double w = kappa[e - e0];
      if (w == 0.0) continue;
      add_row(e, w * sc.a[e - e0], r.data());
      I.row_E_axpy(e, w * sc.c[e - e0], eng.pt.hp.data(), r.data() + M);
    }
    if (betavar_rows && !observed && through_beta) {
      // N_bp μ_bp var_bp/n⁰_bp with var linear in Δ = √k (β̂ − 1) of the source bins
      const auto& bv = *I.in.betavariations;
      for (int64_t p = 0; p < nproc_; ++p) {
        const double n0 = I.in.norm[b * nproc_ + p];
        if (!(n0 > 0.0) || kappa[p] == 0.0) continue;
        const double w = kappa[p] * pre_N[p] / n0;
        for (int64_t j : betavar_sources_) {
          const double c = bv[(b * nbins_ + j) * nproc_ + p];
          const int64_t f = j * nproc_ + p;
          if (c == 0.0 || bbmask_[f]) continue;
          r += (w * c * std::sqrt(kstat_[f])) * source_jac.row(source_index[j] * nproc_ + p).transpose();
        }
      }
    }
    J.row(b - first) = r.transpose();
  }
  if (through_beta && I.coupled && first < nbins_) {
    // ν = ν⁰ + s∘β̂(ν⁰) (lite) or ν⁰ + W0 − V∘C⁻¹(T(ν⁰) + ν⁰ − n) (full): dν/dν⁰ mixes observed bins
    const int64_t B = nbins_;
    const MatrixXd Id = MatrixXd::Identity(B, B);
    MatrixXd mix;
    MatrixXd active_term;  // normal-additive lite, A_b ≤ 0: ∂ν_b/∂A_b · ∂A_b/∂ξ (B × n)
    if (bb_ == BBKind::normal_additive && !bb_full_) {
      // ν = ν⁰ + s∘f∘β̂ with f_b = A_b where A_b ≤ 0 (rabbit's A' = 1) and 1 elsewhere; β̂ depends on
      // ν⁰ only, so dν/dξ = (I − diag(s∘f)𝔏⁻¹diag(s)C⁻¹) dν⁰/dξ + diag([A ≤ 0] s∘β̂) dA/dξ.
      const VectorXd sv = sqrt_sigma2_.head(B);
      VectorXd f = VectorXd::Ones(B);
      if (!legacy_sumw_) {
        active_term = MatrixXd::Zero(B, n);
        Scratch so;
        int64_t maxo = 1;
        for (int64_t b = 0; b < B; ++b) maxo = std::max(maxo, I.bin_ptr[b + 1] - I.bin_ptr[b]);
        so.resize(maxo, 1, 1, 0);
        for (int64_t b = 0; b < B; ++b) {
          eng.yields(b, so, 0);
          double A = 0.0;
          VectorXd JA = VectorXd::Zero(n);
          for (int64_t e = I.bin_ptr[b]; e < I.bin_ptr[b + 1]; ++e) {
            if (!eng.active(e)) continue;
            const int64_t i = e - I.bin_ptr[b];
            A += so.N[i];
            add_row(e, so.a[i], JA.data());
            I.row_E_axpy(e, so.c[i], eng.pt.hp.data(), JA.data() + M);
          }
          if (A > 0.0) continue;
          f[b] = A;
          active_term.row(b) = (sv[b] * coupled_beta[b]) * JA.transpose();
        }
      }
      mix = Id - sv.cwiseProduct(f).asDiagonal() * I.additive_lu.solve(MatrixXd(sv.asDiagonal() * I.cov_inv));
    } else if (bb_ == BBKind::normal_additive) {
      const MatrixXd dT = -I.additive_lu.solve(MatrixXd(I.additive_V.asDiagonal() * I.cov_inv));
      mix = Id - I.additive_V.asDiagonal() * I.cov_inv * (dT + Id);
    }
    MatrixXd Jobs;
    if (bb_ == BBKind::normal_multiplicative) {
      Jobs = coupled_multiplicative_jacobian(*this, eng, add_row, B, nproc_, M, n, bb_full_, bbmask_, kstat_, beta0_,
                                             nobs_, I.cov_inv);
    } else {
      // all observed rows at fixed β are needed for the mixing
      MatrixXd J0all = yield_jacobian(xi, 0, B, BetaMode::none);
      Jobs = mix * J0all;
      if (active_term.size()) Jobs += active_term;
    }
    for (int64_t b = first; b < std::min(last, B); ++b) J.row(b - first) = Jobs.row(b);
  }
  return J;
}

MatrixXd CpuShardEvaluator::process_yield_jacobian(const VectorXd& xi, int64_t first, int64_t last, BetaMode mode) {
  if (first < 0 || last < first || last > nbinsfull_)
    throw Error(fmt::format("process_yield_jacobian: bin range [{}, {}) outside the {} bins", first, last,
                            nbinsfull_));
  cpu_detail::Engine eng(*this, *impl_);
  eng.prepare_point(xi, nullptr);
  Impl& I = *impl_;
  const int64_t nb = last - first, M = nparams_, n = nx_, P = nproc_;
  MatrixXd J = MatrixXd::Zero(nb * P, n);
  const int64_t bw = eng.beta_width();
  VectorXd coupled_beta;
  if (mode == BetaMode::profiled && has_bb() && I.coupled && (first < nbins_ || betavar_)) coupled_beta = profiled_beta(xi);
  int64_t maxe = 0;
  for (int64_t b = first; b < last; ++b) maxe = std::max(maxe, I.bin_ptr[b + 1] - I.bin_ptr[b]);
  Scratch sc;
  sc.resize(std::max<int64_t>(maxe, 1), 1, 1, 0);
  std::vector<double> beta(std::max<int64_t>(bw, 1));
  VectorXd delta;
  if (betavar_ && last > nbins_) delta = eng.beta_variation_shifts(mode, coupled_beta);
  for (int64_t b = first; b < last; ++b) {
    const int64_t e0 = I.bin_ptr[b], e1 = I.bin_ptr[b + 1];
    eng.yields(b, sc, 0);
    const bool use_beta = eng.postfit_bin_beta(b, mode, coupled_beta, sc, beta.data());
    if (use_beta && betavar_ && b >= nbins_) eng.apply_beta_variations(b, delta, sc, nullptr);
    double A = 0.0;
    VectorXd JA = VectorXd::Zero(n);
    for (int64_t e = e0; e < e1; ++e) {
      if (!eng.active(e)) continue;
      A += sc.N[e - e0];
      const int p = I.entry_proc[e];
      if (M > 0) JA.head(M) += sc.a[e - e0] * eng.pt.jr.row(p).transpose();
      I.row_E_axpy(e, sc.c[e - e0], eng.pt.hp.data(), JA.data() + M);
    }
    // lite normal-additive: the bin's s·β is distributed in proportion to N/A (A' = 1 where A ≤ 0,
    // so there the addition is s·β·A); legacy per-bin input has no A' and adds s·β (rabbit's N/ν⁰)
    const bool divide_by_A = A > 0.0 || (legacy_sumw_ && A != 0.0);
    const double Asafe = divide_by_A ? A : 1.0;
    for (int64_t e = e0; e < e1; ++e) {
      const int p = I.entry_proc[e];
      const int64_t f = I.entry_flat[e];
      double kv = 1.0;
      double extra = 0.0;  // coefficient of J_A (normal-additive lite)
      if (use_beta) {
        if (bb_ == BBKind::normal_additive) {
          if (!bb_full_ && eng.active(e)) {
            const double sb = sqrt_sigma2_[b] * beta[0];
            kv += sb / Asafe;
            if (divide_by_A) extra = -sb * sc.N[e - e0] / (Asafe * Asafe);
          }
        } else if (bb_full_) {
          if (!bbmask_[f]) kv = beta[p];
        } else if (!bbmask_[b] && eng.active(e)) {
          kv = beta[0];
        }
      }
      VectorXd r = VectorXd::Zero(n);
      if (M > 0) r.head(M) = (kv * sc.a[e - e0]) * eng.pt.jr.row(p).transpose();
      I.row_E_axpy(e, kv * sc.c[e - e0], eng.pt.hp.data(), r.data() + M);
      if (extra != 0.0) r += extra * JA;
      J.row((b - first) * P + p) = r.transpose();
    }
  }
  return J;
}

MatrixXd CpuShardEvaluator::beta_yield_partials(const VectorXd& xi, int64_t first, int64_t last, BetaMode mode) {
  if (first < 0 || last < first || last > nbinsfull_)
    throw Error(fmt::format("beta_yield_partials: bin range [{}, {}) outside the {} bins", first, last, nbinsfull_));
  const int64_t nb = last - first, P = nproc_;
  MatrixXd D = MatrixXd::Zero(nb, bb_entries());
  // BetaMode::none: the yields are ν⁰, β is not a variable of them.
  if (!has_bb() || mode == BetaMode::none) return D;
  cpu_detail::Engine eng(*this, *impl_);
  eng.prepare_point(xi, nullptr);
  Impl& I = *impl_;
  VectorXd coupled_beta;
  if (mode == BetaMode::profiled && I.coupled && (first < nbins_ || betavar_)) coupled_beta = profiled_beta(xi);
  int64_t maxe = 1;
  for (int64_t b = first; b < last; ++b) maxe = std::max(maxe, I.bin_ptr[b + 1] - I.bin_ptr[b]);
  Scratch sc;
  sc.resize(maxe, 1, 1, 0);
  std::vector<double> beta(std::max<int64_t>(eng.beta_width(), 1)), pre_N(P);
  VectorXd delta;
  if (betavar_ && last > nbins_) delta = eng.beta_variation_shifts(mode, coupled_beta);
  for (int64_t b = first; b < last; ++b) {
    const int64_t e0 = I.bin_ptr[b], e1 = I.bin_ptr[b + 1];
    eng.yields(b, sc, 0);
    eng.postfit_bin_beta(b, mode, coupled_beta, sc, beta.data());
    const bool varied = betavar_ && b >= nbins_;
    if (varied) {
      for (int64_t p = 0; p < P; ++p) pre_N[p] = sc.N[p];
      eng.apply_beta_variations(b, delta, sc, nullptr);
    }
    double A = 0.0;
    for (int64_t e = e0; e < e1; ++e)
      if (eng.active(e)) A += sc.N[e - e0];
    auto row = D.row(b - first);
    if (bb_ == BBKind::normal_additive) {
      if (!bb_full_) {
        row[b] = sqrt_sigma2_[b] * (legacy_sumw_ || A > 0.0 ? 1.0 : A);
      } else {
        for (int64_t p = 0; p < P; ++p) row[b * P + p] = sqrt_sigma2_[b * P + p];
      }
      continue;
    }
    if (!bb_full_) {
      if (!bbmask_[b]) row[b] = A;
      continue;
    }
    for (int64_t e = e0; e < e1; ++e) {
      const int64_t f = I.entry_flat[e];
      if (!bbmask_[f]) row[f] += sc.N[e - e0];
    }
    if (!varied) continue;
    const auto& bv = *I.in.betavariations;
    for (int64_t p = 0; p < P; ++p) {
      const double n0 = I.in.norm[b * P + p];
      if (!(n0 > 0.0)) continue;
      const double mu = bbmask_[b * P + p] ? 1.0 : beta[p];
      for (int64_t j : betavar_sources_) {
        const int64_t f = j * P + p;
        const double c = bv[(b * nbins_ + j) * P + p];
        if (c != 0.0 && !bbmask_[f]) row[f] += mu * pre_N[p] / n0 * c * std::sqrt(kstat_[f]);
      }
    }
  }
  return D;
}

double CpuShardEvaluator::full_nll_constant() const {
  constexpr double half_log_2pi = 0.9189385332046727;
  double c = 0.0;
  if (likelihood_ == DataLikelihood::poisson) {
    for (int64_t b = begin_; b < end_; ++b) {
      const double n = nobs_[b];
      c += std::lgamma(n + 1.0) - n * lognobs_[b] + n;
    }
  }
  if (!has_bb()) return c;
  const int64_t w = bb_full_ ? nproc_ : 1;
  // the shard's observed entries, plus the masked channels on the last shard
  const int64_t lo = begin_ * w, hi = (end_ == nbins_ ? nbinsfull_ : end_) * w;
  for (int64_t i = lo; i < hi; ++i) {
    const double k = kstat_[i], b0 = beta0_[i];
    switch (bb_) {
      case BBKind::gamma:
        // Poisson(kβ⁰ | kβ) with lgamma(kβ⁰ + 1); BB-masked entries are not part of the likelihood
        if (!bbmask_[i] && b0 > 0.0) c += -k * b0 * std::log(k) - k * b0 * log_beta0_[i] + k * b0 + std::lgamma(k * b0 + 1.0);
        break;
      case BBKind::normal_multiplicative:
        if (!bbmask_[i]) c += half_log_2pi - 0.5 * std::log(k);
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

double CpuShardEvaluator::full_value(const VectorXd& xi) { return value(xi) + full_nll_constant(); }

std::unique_ptr<ShardEvaluator> make_cpu_shard(std::shared_ptr<const Model> model, int64_t bin_begin, int64_t bin_end,
                                               int threads) {
  return std::make_unique<CpuShardEvaluator>(std::move(model), bin_begin, bin_end, threads);
}

}  // namespace rabbit
