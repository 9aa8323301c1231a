// CpuShardEvaluator: wires the parts of the CPU backend (docs/architecture.md "The CPU backend"):
// the state is built by the units that own each part, every evaluation is one ShardEvaluation.
#include "rabbit/backend/cpu/cpu_shard.hpp"

#include <fmt/format.h>

#include <cmath>

#include "covariance_fit.hpp"
#include "rabbit/backend/cpu/cpu_shard_evaluator.hpp"
#include "rabbit/core/cpu_budget.hpp"
#include "rabbit/core/error.hpp"
#include "rabbit/model/param_model.hpp"
#include "shard_evaluation.hpp"

namespace rabbit {

using cpu::BBKind;
using cpu_detail::BetaTreatment;
using cpu_detail::Request;
using cpu_detail::ShardEvaluation;
using cpu_detail::ShardState;
using Eigen::MatrixXd;
using Eigen::VectorXd;

cpu_detail::ShardState::ShardState(std::shared_ptr<const Model> model, int64_t bin_begin, int64_t bin_end,
                                   int threads)
    : model_(std::move(model)), in(*model_->input), begin_(bin_begin), end_(bin_end) {
  nbins_ = in.nbins;
  nbinsfull_ = in.nbinsfull;
  nproc_ = in.nproc;
  nsyst_ = in.nsyst;
  nparams_ = model_->param_model ? model_->param_model->nparams() : 0;
  nx_ = nparams_ + nsyst_;
  if (begin_ < 0 || end_ < begin_ || end_ > nbins_)
    throw Error(
        fmt::format("CPU shard: bin range [{}, {}) outside the {} observed bins", begin_, end_, nbins_));
  threads_ = cpus::threads_or_detected(threads);
  pool = std::make_unique<WorkerPool>(threads_);
  likelihood_ = model_->options.likelihood;
  if (likelihood_ == DataLikelihood::covariance && (begin_ != 0 || end_ != nbins_))
    throw OptionError("--covarianceFit cannot be sharded; run with one device");
  coupled = likelihood_ == DataLikelihood::covariance;
  layout = cpu_detail::EntryLayout::build(in);
}

CpuShardEvaluator::CpuShardEvaluator(std::shared_ptr<const Model> model, int64_t bin_begin, int64_t bin_end,
                                     int threads)
    : state_(std::make_unique<ShardState>(std::move(model), bin_begin, bin_end, threads)) {
  ShardState& s = *state_;
  // ρ (normal pre-scaling, docs/likelihood.md "Systematic type normal"): the param model at the stored
  // defaults.
  s.rho_ = VectorXd::Ones(s.nproc_);
  s.bin_rates_ = s.model_->param_model && !s.model_->param_model->bin_independent();
  if (s.bin_rates_) {
    // the same per (bin, process) for a bin-dependent model (docs/likelihood.md "Bin-dependent rates")
    s.rho_bins_ = VectorXd::Ones(s.nbinsfull_ * s.nproc_);
    if (s.nparams_ > 0 && !s.layout.lognormal) {
      MatrixXd rho;
      s.model_->param_model->bin_rates(s.model_->parameters.x_default.head(s.nparams_), 0, s.nbinsfull_, rho);
      for (int64_t b = 0; b < s.nbinsfull_; ++b)
        s.rho_bins_.segment(b * s.nproc_, s.nproc_) = rho.row(b).transpose();
    }
  } else if (s.nparams_ > 0 && !s.layout.lognormal) {
    s.model_->param_model->rates(s.model_->parameters.x_default.head(s.nparams_), s.rho_, nullptr);
  }
  cpu_detail::build_bb_statistics(s);
  cpu_detail::build_covariance_matrices(s);
  cpu_detail::build_beta_variation_sources(s);
  cpu_detail::check_observable_regularizers(s);
  set_observed(s.in.data_obs, s.in.data_var.value_or(VectorXd()));
}

// A worker may still be inside an evaluation that has returned (WorkerPool::share_detached, backup
// execution in shard_evaluation.cpp): it reads the shard's tensor and observations until it leaves,
// so those are freed or changed only after drain().
CpuShardEvaluator::~CpuShardEvaluator() {
  if (state_ && state_->pool) state_->pool->drain();
}

int64_t CpuShardEvaluator::bin_begin() const {
  return state_->begin_;
}
int64_t CpuShardEvaluator::bin_end() const {
  return state_->end_;
}
int CpuShardEvaluator::threads() const {
  return state_->threads_;
}

bool CpuShardEvaluator::has_bb() const {
  return state_->has_bb();
}
bool CpuShardEvaluator::bb_full() const {
  return state_->bb_full_;
}
int64_t CpuShardEvaluator::bb_entries() const {
  return state_->bb_entries();
}
const VectorXd& CpuShardEvaluator::bb_kstat() const {
  return state_->kstat_;
}
const std::vector<uint8_t>& CpuShardEvaluator::bb_mask() const {
  return state_->bbmask_;
}
const VectorXd& CpuShardEvaluator::beta_centres() const {
  return state_->beta0_;
}
const VectorXd& CpuShardEvaluator::stored_beta() const {
  return state_->beta_stored_;
}
bool CpuShardEvaluator::beta_variations_active() const {
  return state_->betavar_;
}

VectorXd CpuShardEvaluator::default_beta_centres() const {
  return cpu_detail::default_beta_centres(*state_);
}

void CpuShardEvaluator::set_beta_centres(const VectorXd& beta0) {
  state_->pool->drain();
  cpu_detail::set_beta_centres(*state_, beta0);
}

void CpuShardEvaluator::set_stored_beta(const VectorXd& beta) {
  state_->pool->drain();
  if (beta.size() != bb_entries())
    throw Error(fmt::format("set_stored_beta: {} values for {} BB entries", beta.size(), bb_entries()));
  state_->beta_stored_ = beta;
}

void CpuShardEvaluator::set_observed(const VectorXd& nobs, const VectorXd& varnobs) {
  ShardState& s = *state_;
  s.pool->drain();
  if (nobs.size() != s.nbins_)
    throw Error(fmt::format("set_observed: {} observed values for {} bins", nobs.size(), s.nbins_));
  s.nobs_ = nobs;
  s.varnobs_ = varnobs.size() == 0 ? nobs : varnobs;
  ++s.generation;
  if (s.varnobs_.size() != s.nbins_)
    throw Error(fmt::format("set_observed: {} variances for {} bins", s.varnobs_.size(), s.nbins_));
  s.lognobs_.resize(s.nbins_);
  for (int64_t b = 0; b < s.nbins_; ++b) s.lognobs_[b] = s.nobs_[b] == 0.0 ? 0.0 : std::log(s.nobs_[b]);
  if (s.likelihood_ == DataLikelihood::chisq) {
    for (int64_t b = s.begin_; b < s.end_; ++b)
      if (!(s.varnobs_[b] > 0.0))
        throw InputError(
            fmt::format("--chisqFit needs positive data variances; bin {} has {}", b, s.varnobs_[b]));
  }
}

// ---- ShardEvaluator ----------------------------------------------------------------------------

double CpuShardEvaluator::value(const VectorXd& xi) {
  ShardEvaluation eval(*state_, *this);
  Request req;
  req.xi = &xi;
  return eval.run(req);
}

double CpuShardEvaluator::value_grad(const VectorXd& xi, VectorXd& grad) {
  ShardEvaluation eval(*state_, *this);
  Request req;
  req.xi = &xi;
  req.grad = true;
  req.grad_out = &grad;
  return eval.run(req);
}

double CpuShardEvaluator::value_grad_hvp(const VectorXd& xi, const MatrixXd& V, VectorXd& grad,
                                         MatrixXd& HV) {
  if (V.rows() != state_->nx_)
    throw Error(fmt::format("CPU shard HVP: V has {} rows, expected {}", V.rows(), state_->nx_));
  ShardEvaluation eval(*state_, *this);
  Request req;
  req.xi = &xi;
  req.grad = true;
  req.grad_out = &grad;
  req.V = &V;
  req.hv_out = &HV;
  return eval.run(req);
}

double CpuShardEvaluator::value_grad_hess(const VectorXd& xi, VectorXd& grad, MatrixXd& hess, bool profile) {
  ShardEvaluation eval(*state_, *this);
  Request req;
  req.xi = &xi;
  req.grad = true;
  req.grad_out = &grad;
  req.hess = true;
  req.hess_out = &hess;
  req.beta = profile ? BetaTreatment::profiled : BetaTreatment::held;
  return eval.run(req);
}

VectorXd CpuShardEvaluator::profiled_beta(const VectorXd& xi) {
  ShardState& s = *state_;
  if (!s.has_bb()) return VectorXd();
  // β̂ depends on ξ, the observations and the BB centres only (the generation counts their changes)
  auto& c = s.beta_cache;
  if (c.valid && c.generation == s.generation && c.xi.size() == xi.size() && c.xi == xi) return c.beta;
  ShardEvaluation eval(*state_, *this);
  Request req;
  req.xi = &xi;
  VectorXd beta;
  req.beta_out = &beta;
  eval.run(req);
  // masked entries stay at β⁰ (docs/likelihood.md "Profiled β")
  const int64_t w = s.beta_width();
  for (int64_t i = 0; i < beta.size(); ++i) {
    const int64_t f = s.begin_ * w + i;
    if (s.bb_ != BBKind::normal_additive && s.bbmask_[f]) beta[i] = s.beta0_[f];
  }
  c.xi = xi;
  c.beta = beta;
  c.generation = s.generation;
  c.valid = true;
  return beta;
}

double CpuShardEvaluator::full_value(const VectorXd& xi) {
  return value(xi) + full_nll_constant();
}

namespace {

// An input read with FitInputReadOptions::logk_bins (rank 0 of an MPI fit, docs/mpi.md "Memory per
// rank") holds no logk of the observed bins from logk_end on (the masked bins' it holds): no shard or
// yield model may reach those bins.
void check_logk_held(const FitInputData& in, int64_t bin_end) {
  if (in.logk_end >= 0 && bin_end > in.logk_end)
    throw Error(fmt::format("{}: the logk of bins [0, {}) was read, a CPU shard needs bins up to {}",
                            in.filename, in.logk_end, bin_end));
}

}  // namespace

std::unique_ptr<ShardEvaluator> make_cpu_shard(std::shared_ptr<const Model> model, int64_t bin_begin,
                                               int64_t bin_end, int threads) {
  // An empty shard reads no observed bin's logk (MPI rank 0's shard of the masked channels' BB
  // constants, docs/mpi.md "Postfit yields from the owning ranks").
  if (bin_begin < bin_end) check_logk_held(*model->input, bin_end);
  return std::make_unique<CpuShardEvaluator>(std::move(model), bin_begin, bin_end, threads);
}

std::unique_ptr<YieldModel> make_host_yield_model(std::shared_ptr<const Model> model, int threads) {
  const int64_t nbins = model->input->nbins;
  check_logk_held(*model->input, nbins);
  return std::make_unique<CpuShardEvaluator>(std::move(model), 0, nbins, threads);
}

}  // namespace rabbit
