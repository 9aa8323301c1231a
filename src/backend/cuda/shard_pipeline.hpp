#pragma once
// The CUDA shard's evaluation pipeline, written once over an `Ops` policy that owns memory, copies,
// the dense tensor products and the element kernels: CudaOps (cuda_shard.cpp: cudart, cuBLAS and the
// kernels of kernels.cu) in the library, and a host policy in tests/backend/cuda that runs the same
// element bodies (pipeline_elements.hpp) in loops — so the pipeline is tested without a GPU.
//
// Per evaluation: Λ = K2·m, per-entry yields, one profile per bin (bin_math.hpp), K2ᵀ(φ∘N) for the θ
// gradient and per-process sums over bins for the param-model part; over a dense tensor loss+grad is
// one fused pass that reads K2 once (fused_elements.hpp), and the state of the last derivative call
// is kept for HVPs at the same point (docs/sharding-and-gpu.md "Per-point cache").
// An HVP batch of k directions runs the same passes with k columns (K2·[u; h'∘u] and K2ᵀ ω); the dense
// Hessian is the HVP of identity blocks, symmetrised. Only parameter-sized vectors cross between host and
// device per call.
//
// Ops must provide: select(); void* alloc(bytes, what); release(void*); to_device(dst, src, bytes,
// what); to_host(dst, src, bytes, what) (both synchronous, for set-up and β); alloc_pinned(bytes, what),
// release_pinned(p), to_device_async / to_host_async(dst, src, bytes, what) (page-locked host side,
// ordered on the shard's stream) and synchronize(what) for the per-call copies; zero(ptr, bytes); check(what)
// after kernels; free_memory(&total); batch_budget() (bytes the HVP batch may take, read once at the first
// HVP); name(); k2_dense(transpose, K2, E, W, X, Y, k); and the launchers entry_yields, profile_bins,
// gradient_weights, delta_yields, apply_psi, hvp_weights, fill with the signatures of kernels.hpp minus
// the stream, and sum_over_bins, csr_multiply with those of reduce_kernels.hpp minus the stream (and the
// scratch of sum_over_bins, which the policy owns); l2_cache_bytes(), fused_max_blocks(),
// fused_loss_grad(pass) and reduce_partials(partial, blocks, W, y) for the fused pass (fused_kernels.hpp
// minus the stream); for the dense Hessian process_indicator, theta_tile, mix_tile (hessian_kernels.hpp
// minus the stream) and syrkx_lower(n, k, A, B, C, accumulate).
#include <fmt/format.h>

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "csr_segment_buffers.hpp"
#include "pipeline_buffers.hpp"
#include "rabbit/backend/cuda/bin_math.hpp"
#include "rabbit/backend/cuda/cuda_shard.hpp"
#include "rabbit/backend/cuda/fixed_order_sum.hpp"
#include "rabbit/backend/cuda/fused_elements.hpp"
#include "rabbit/backend/cuda/hessian_elements.hpp"
#include "rabbit/backend/cuda/pipeline_elements.hpp"
#include "rabbit/core/error.hpp"
#include "rabbit/likelihood/interpolation.hpp"
#include "rabbit/model/bb_statistics.hpp"
#include "rabbit/model/model.hpp"
#include "rabbit/model/param_model.hpp"
#include "rabbit/model/regularizer.hpp"
#include "rabbit/model/shard_evaluator.hpp"
#include "shard_memory.hpp"
#include "shard_slice.hpp"

namespace rabbit::pipeline {

namespace bm = bin_math;
using likelihood::BBKind;

template <class Ops>
class ShardPipeline : public ShardEvaluator {
  template <class T>
  using Buf = Buffer<Ops, T>;

 public:
  ShardPipeline(std::shared_ptr<const Model> model, int64_t begin, int64_t end, std::unique_ptr<Ops> ops)
      : model_(std::move(model)), begin_(begin), end_(end), ops_(std::move(ops)) {
    const FitInputData& in = *model_->input;
    if (model_->options.likelihood == DataLikelihood::covariance)
      throw OptionError("--covarianceFit is not supported by the CUDA backend; use --backend cpu");
    // The kernels take one rate per process; the ABCD family's rates differ per bin.
    if (model_->param_model && !model_->param_model->bin_independent())
      throw OptionError(
          "--paramModel: bin-dependent param models (ABCD family) are not supported by the CUDA "
          "backend; use --backend cpu");
    // The SVD regulariser reads the predicted yields of all bins (masked channels included), which
    // only the CPU shard evaluates; silently dropping its penalty would change the fit.
    if (!model_->regularizers.empty() && needs_observables(*model_))
      throw OptionError(
          "-r/--regularization on predicted yields is not supported by the CUDA backend; use --backend cpu");
    if (begin < 0 || end < begin || end > in.nbins)
      throw Error(
          fmt::format("CUDA shard range [{}, {}) outside the {} observed bins", begin, end, in.nbins));
    nproc_ = static_cast<int>(in.nproc);
    nsyst_ = in.nsyst;
    width_ = in.logk_width();
    npar_ = model_->parameters.size();
    nparams_ = model_->parameters.nparams();
    log_normal_ = in.systematic_type == SystematicType::log_normal;
    symmetric_ = in.symmetric_tensor;
    sparse_ = in.sparse;
    const BBStatistics bb(*model_);
    cfg_.likelihood = model_->options.likelihood;
    cfg_.nproc = nproc_;
    cfg_.bb = bb.kind();
    cfg_.mode = bb.full() ? BBMode::full : BBMode::lite;
    cfg_.legacy_lite = bb.on() && !bb.full() && bb.legacy_per_bin();
    rho_.assign(nproc_, 1.0);
    if (!log_normal_ && nparams_ > 0 && model_->param_model) {
      Eigen::VectorXd r;
      model_->param_model->rates(model_->parameters.x_default.head(nparams_), r, nullptr);
      for (int p = 0; p < nproc_; ++p) rho_[p] = r[p];
    }

    HostShardData h = slice_shard(in, bb, begin, end, full());
    nbins_ = h.nbins;
    nentries_ = h.nentries;
    masked_host_ = h.masked;

    ops_->select();
    // Refused only when even a one-column HVP batch cannot fit (shard_memory.hpp).
    const uint64_t need = plan_shard_memory(*model_, begin, end).minimum_bytes();
    uint64_t total_bytes = 0;
    const uint64_t free_bytes = ops_->free_memory(&total_bytes);
    if (need > free_bytes)
      throw ResourceError(
          fmt::format("{}: the shard over bins [{}, {}) needs {:.2f} GiB of device memory, {:.2f} GiB of "
                      "{:.2f} GiB are free; "
                      "use more shards (--nDevices) or --backend cpu",
                      ops_->name(), begin, end, need / 1073741824.0, free_bytes / 1073741824.0,
                      total_bytes / 1073741824.0));

    bin_.upload(h.bin, "copying the shard");
    proc_.upload(h.proc, "copying the shard");
    norm_.upload(h.norm, "copying norm");
    if (sparse_) {
      rowptr_.upload(h.rowptr, "copying logk");
      cols_.upload(h.cols, "copying logk");
      vals_.upload(h.vals, "copying logk");
      colptr_.upload(h.colptr, "copying logk");
      rows_.upload(h.rows, "copying logk");
      tvals_.upload(h.tvals, "copying logk");
      // The load-balanced products' segment plans, made once (docs/sharding-and-gpu.md "Sparse
      // products"); their piece partials take max_slots_ doubles per column.
      const int64_t target = segment_target(static_cast<int64_t>(h.vals.size()));
      const CsrSegmentPlan by_row = plan_csr_segments(h.rowptr, target),
                           by_col = plan_csr_segments(h.colptr, target);
      csr_segments_.upload(by_row, "copying the sparse segment plan");
      csc_segments_.upload(by_col, "copying the sparse segment plan");
      max_slots_ = std::max(by_row.nslots, by_col.nslots);
      partial_.allocate(max_slots_, "allocating the sparse partials");
    } else {
      logk_.upload(h.dense_logk, "copying logk");
    }
    if (cfg_.bb != BBKind::none) {
      kstat_.upload(h.kstat, "copying kstat");
      beta0_.upload(h.beta0, "copying beta0");
      sigma2_.upload(h.sigma2, "copying sumw2");
      masked_.upload(h.masked, "copying the BB mask");
      if (!h.zero_var.empty()) zero_var_.upload(h.zero_var, "copying the BB flags");
    }
    const size_t nbp = static_cast<size_t>(nbins_) * nproc_;
    rho_d_.upload(rho_, "copying rho");
    m_vec_.allocate(width_, "allocating the parameters");
    rates_d_.allocate(nproc_, "allocating the parameters");
    value_d_.allocate(1, "allocating the NLL");
    stage_.reserve(width_ + nproc_, "allocating pinned host buffers");
    result_.reserve(1 + width_ + nproc_, "allocating pinned host buffers");
    for (Buf<double>* b : {&lambda_, &q_, &N_, &gw_}) b->allocate(nentries_, "allocating yields");
    for (Buf<double>* b : {&Nbp_, &phi_, &u1_, &u2_, &d_, &pw_}) b->allocate(nbp, "allocating yields");
    m_.allocate(3 * static_cast<size_t>(nbins_), "allocating yields");
    binval_.allocate(nbins_, "allocating yields");
    if (cfg_.bb != BBKind::none) beta_.allocate(full() ? nbp : nbins_, "allocating beta");
    y_.allocate(width_, "allocating the gradient");
    small_.allocate(std::max<int64_t>(1, nproc_), "allocating the gradient");
    if (!sparse_) {
      tiles_ = plan_fused_tiles(nbins_, nproc_, width_, ops_->l2_cache_bytes(), ops_->fused_max_blocks());
      if (tiles_.fused())
        block_partial_.allocate(tiles_.blocks * static_cast<size_t>(width_), "allocating the gradient");
    }
    set_observed(in.data_obs, in.data_var.value_or(Eigen::VectorXd()));
  }

  // The buffers are freed after this body, on whichever device the destroying thread last selected:
  // select this shard's first (with several GPUs a cudaFree on the wrong one fails).
  ~ShardPipeline() override {
    try {
      ops_->select();
    } catch (...) {
      // A destructor must not throw; a device that cannot be selected is lost, frees or not.
    }
  }

  int64_t bin_begin() const override { return begin_; }
  int64_t bin_end() const override { return end_; }
  std::string device() const override { return ops_->name(); }

  void set_observed(const Eigen::VectorXd& nobs, const Eigen::VectorXd& varnobs) override {
    ops_->select();
    point_valid_ = false;
    std::vector<double> n(nbins_), v(nbins_), ln(nbins_);
    for (int64_t b = 0; b < nbins_; ++b) {
      n[b] = nobs[begin_ + b];
      v[b] = varnobs.size() ? varnobs[begin_ + b] : n[b];
      ln[b] = n[b] > 0 ? std::log(n[b]) : 0.0;
    }
    nobs_.upload(n, "copying observed data");
    varnobs_.upload(v, "copying observed data");
    lognobs_.upload(ln, "copying observed data");
  }

  bool accepts_beta_centres() const override { return true; }
  void set_beta_centres(const Eigen::VectorXd& beta0) override {
    if (cfg_.bb == BBKind::none) return;
    const FitInputData& in = *model_->input;
    const int64_t per_bin = full() ? nproc_ : 1;
    if (beta0.size() != in.nbinsfull * per_bin)
      throw Error(
          fmt::format("BB centres have {} entries, expected {}", beta0.size(), in.nbinsfull * per_bin));
    std::vector<double> slice(beta0.data() + begin_ * per_bin, beta0.data() + end_ * per_bin);
    // docs/likelihood.md "BB derivative corner cases" item 3: on masked full-mode entries rabbit's closed
    // forms use β⁰ N where the yields use N; the CPU backend differentiates that composite, this pipeline
    // does not.
    if (full() && cfg_.bb != BBKind::normal_additive)
      for (size_t i = 0; i < slice.size(); ++i)
        if (masked_host_[i] && slice[i] != 1.0)
          throw OptionError(fmt::format(
              "the CUDA backend does not support BB centres beta0 != 1 on masked full-mode entries (bin {}, "
              "process {}: beta0 = {}), as randomised by frequentist toys with --binByBinStatMode full; use "
              "--backend cpu",
              begin_ + static_cast<int64_t>(i) / nproc_, static_cast<int64_t>(i) % nproc_, slice[i]));
    ops_->select();
    point_valid_ = false;
    beta0_.upload(slice, "copying beta0");
  }

  // One synchronisation per call (docs/sharding-and-gpu.md "Pinned copies, one synchronisation"):
  // parameters go out and results come back through pinned buffers on the shard's stream; HVP and
  // Hessian batches beyond the first wait once each, as they reuse the staging.
  double value(const Eigen::VectorXd& xi) override {
    ops_->select();
    forward(xi, true);
    enqueue_value();
    ops_->synchronize("evaluating the NLL");
    return result_.get()[0];
  }

  double value_grad(const Eigen::VectorXd& xi, Eigen::VectorXd& grad) override {
    ops_->select();
    if (enqueue_point(xi, true)) {
      ops_->synchronize("evaluating the gradient");
      keep_point(xi, true);
    }
    grad = grad_;
    return f_;
  }

  double value_grad_hvp(const Eigen::VectorXd& xi, const Eigen::MatrixXd& V, Eigen::VectorXd& grad,
                        Eigen::MatrixXd& HV) override {
    ops_->select();
    const int64_t width = V.cols() > 0 ? batch_width() : 1;
    const bool pending = enqueue_point(xi, true);
    HV.resize(npar_, V.cols());
    for (int64_t c = 0; c == 0 || c < V.cols(); c += width) {
      const int64_t k = std::min<int64_t>(width, V.cols() - c);
      if (k > 0) enqueue_hvp(V.middleCols(c, k));
      if (k > 0 || pending) ops_->synchronize("evaluating the HVP");
      if (c == 0 && pending) keep_point(xi, true);
      if (k <= 0) break;
      Eigen::MatrixXd out;
      read_hvp(V.middleCols(c, k), out);
      HV.middleCols(c, k) = out;
    }
    grad = grad_;
    return f_;
  }

  double value_grad_hess(const Eigen::VectorXd& xi, Eigen::VectorXd& grad, Eigen::MatrixXd& hess,
                         bool profile) override {
    ops_->select();
    const int64_t width = batch_width();
    const bool pending = enqueue_point(xi, profile);
    if (syrk_tile_rows(width) > 0) return hessian_by_syrk(width, xi, profile, pending, grad, hess);
    hess.resize(npar_, npar_);
    for (int64_t c = 0; c == 0 || c < npar_; c += width) {
      const int64_t k = std::min<int64_t>(width, npar_ - c);
      Eigen::MatrixXd unit = Eigen::MatrixXd::Zero(npar_, std::max<int64_t>(k, 0)), out;
      for (int64_t j = 0; j < k; ++j) unit(c + j, j) = 1.0;
      if (k > 0) enqueue_hvp(unit);
      if (k > 0 || pending) ops_->synchronize("evaluating the Hessian");
      if (c == 0 && pending) keep_point(xi, profile);
      if (k <= 0) break;
      read_hvp(unit, out);
      hess.middleCols(c, k) = out;
    }
    hess = (0.5 * (hess + hess.transpose())).eval();
    grad = grad_;
    return f_;
  }

  Eigen::VectorXd profiled_beta(const Eigen::VectorXd& xi) override {
    ops_->select();
    if (cfg_.bb == BBKind::none) return Eigen::VectorXd();
    forward(xi, true);
    Eigen::VectorXd beta(beta_.size());
    download(beta.data(), beta_.get(), beta_.size(), "reading beta");
    return beta;
  }

 private:
  bool full() const { return cfg_.mode == BBMode::full; }

  // Entries per SYRK tile of the dense Hessian (docs/sharding-and-gpu.md "The dense Hessian as a
  // SYRK"), whole bins; 0 where the HVP-batch path is kept: sparse tensors, no systematics, an empty
  // shard, or a batch too narrow for the P process columns, for the π columns plus one (the staging
  // of h'), or for one bin's tile. The tiles G and 𝒲G live in the batch buffers δN and z (B·P × width
  // doubles each), free once 𝒲 is formed.
  int64_t syrk_tile_rows(int64_t width) const {
    if (sparse_ || nsyst_ == 0 || nbins_ == 0 || width < nproc_ || width <= nparams_) return 0;
    const int64_t fit = static_cast<int64_t>(static_cast<uint64_t>(nbins_) * nproc_ * width / nsyst_);
    const int64_t rows = std::min<int64_t>(nentries_, fit / nproc_ * nproc_);
    return rows >= nproc_ ? rows : 0;
  }

  // The dense Hessian with its θθ block as a SYRK (docs/sharding-and-gpu.md "The dense Hessian as a
  // SYRK"), after enqueue_point (`pending`: loss+grad enqueued, kept after the synchronisation; else the
  // cached point's device state), with one synchronisation: the π columns by one
  // HVP batch of unit directions (its results stay in the staging), 𝒲 by the HVP element bodies on
  // the process indicators, then Σ_tiles G (𝒲G)ᵀ into the lower triangle (SYRKX), mirrored on the host.
  double hessian_by_syrk(int64_t width, const Eigen::VectorXd& xi, bool profile, bool pending,
                         Eigen::VectorXd& grad, Eigen::MatrixXd& hess);

  // Device bytes of one HVP batch column (shard_memory.hpp, the same figure as the memory plan's).
  uint64_t batch_column_bytes() const {
    return pipeline::batch_column_bytes(nentries_, static_cast<uint64_t>(nbins_) * nproc_, width_, nproc_);
  }

  // The HVP batch width, and its buffers allocated once at that width on the first call (after every
  // shard of the fit holds its tensor, so that shards sharing a device all fit): as many columns as
  // Ops::batch_budget() allows, at most one per parameter. Later calls and batches reuse them
  // (docs/sharding-and-gpu.md "HVP batch width").
  int64_t batch_width();

  void download(double* host, const double* dev, size_t n, const char* what) {
    if (n) ops_->to_host(host, dev, n * sizeof(double), what);
  }

  EntryArrays entries() const { return {nentries_, bin_.get(), proc_.get(), norm_.get()}; }

  BinArrays bins() const {
    BinArrays b;
    b.nbins = nbins_;
    b.nproc = nproc_;
    b.nobs = nobs_.get();
    b.varnobs = varnobs_.get();
    b.lognobs = lognobs_.get();
    b.kstat = kstat_.get();
    b.beta0 = beta0_.get();
    b.masked = masked_.get();
    b.sigma2 = sigma2_.get();
    b.zero_var = zero_var_.get();
    return b;
  }

  // K2 (E × W) times X (W × k) → Y (E × k), or K2ᵀ (W × E) times X (E × k) → Y (W × k).
  void k2_multiply(bool transpose, const double* X, double* Y, int k) {
    const int64_t rows = transpose ? width_ : nentries_;
    if (nentries_ == 0 || width_ == 0 || k == 0) {
      ops_->fill(Y, rows * k, 0.0);
      return;
    }
    if (sparse_) {
      if (transpose)
        ops_->csr_multiply(csc_segments_.view(), nentries_, colptr_.get(), rows_.get(), tvals_.get(), X, Y,
                           partial_.get(), k);
      else
        ops_->csr_multiply(csr_segments_.view(), width_, rowptr_.get(), cols_.get(), vals_.get(), X, Y,
                           partial_.get(), k);
    } else {
      ops_->k2_dense(transpose, logk_.get(), nentries_, width_, X, Y, k);
    }
    ops_->check("a tensor product");
  }

  // Per-point cache (docs/sharding-and-gpu.md "Per-point cache"; the CPU shard's rules,
  // src/backend/cpu/point_cache.hpp): a derivative call at the ξ (bitwise equal) and profile flag of the
  // last derivative call, with no forward pass, observed data or BB centres set in between, reuses its
  // device state (yields, φ, Ψ) and its loss and gradient; only the HVP directions read the tensor.
  // Enqueues loss+grad and returns true (keep_point after the synchronisation), or false on a hit.
  bool enqueue_point(const Eigen::VectorXd& xi, bool profile) {
    if (point_valid_ && point_profile_ == profile && point_xi_.size() == xi.size() && point_xi_ == xi)
      return false;
    if (tiles_.fused()) {
      enqueue_fused(xi, profile);
    } else {
      forward(xi, profile);
      enqueue_value();
      enqueue_gradient();
    }
    return true;
  }

  void keep_point(const Eigen::VectorXd& xi, bool profile) {
    read_gradient(grad_);
    f_ = result_.get()[0];
    point_xi_ = xi;
    point_profile_ = profile;
    point_valid_ = true;
  }

  // Loss+grad over the dense tensor in one read (docs/sharding-and-gpu.md "Fused loss+grad pass"):
  // the fused kernel leaves the same device state as forward() + enqueue_gradient(), the gradient as
  // per-block partials summed in block order.
  void enqueue_fused(const Eigen::VectorXd& xi, bool profile);

  // The host part of a point (h(θ), rates, their Jacobian) and m and the rates copied to the device;
  // the device state of the last point is overwritten from here on.
  void upload_point(const Eigen::VectorXd& xi) {
    point_valid_ = false;
    if (xi.size() != npar_)
      throw Error(fmt::format("CUDA shard: parameter vector has length {}, expected {}", xi.size(), npar_));
    pi_ = xi.head(nparams_);
    theta_ = xi.tail(nsyst_);
    rates_ = Eigen::VectorXd::Ones(nproc_);
    jac_ = Eigen::MatrixXd::Zero(nproc_, nparams_);
    if (model_->param_model) model_->param_model->rates(pi_, rates_, nparams_ > 0 ? &jac_ : nullptr);
    h_.resize(nsyst_);
    h1_.resize(nsyst_);
    h2_.resize(nsyst_);
    double* m = stage_.get();
    for (int64_t s = 0; s < nsyst_; ++s) {
      likelihood::interpolation(theta_[s], h_[s], h1_[s], h2_[s]);
      m[s] = theta_[s];
      if (!symmetric_) m[nsyst_ + s] = h_[s];
    }
    std::copy(rates_.data(), rates_.data() + nproc_, m + width_);
    ops_->to_device_async(m_vec_.get(), m, width_ * sizeof(double), "copying the parameters");
    ops_->to_device_async(rates_d_.get(), m + width_, nproc_ * sizeof(double), "copying the parameters");
  }

  // Yields, BB profile, per-bin values, φ and Ψ at ξ (two-pass path: Λ by a tensor product).
  void forward(const Eigen::VectorXd& xi, bool profile) {
    upload_point(xi);
    k2_multiply(false, m_vec_.get(), lambda_.get(), 1);
    if (sparse_) Nbp_.zero();
    ops_->entry_yields(entries(), log_normal_, lambda_.get(), rates_d_.get(), rho_d_.get(), q_.get(),
                       N_.get(), Nbp_.get(), nproc_);
    bm::BinConfig cfg = cfg_;
    cfg.profile = profile;
    ops_->profile_bins(cfg, bins(), Nbp_.get(), beta_.get(), phi_.get(), u1_.get(), u2_.get(), d_.get(),
                       m_.get(), binval_.get());
    ops_->check("the yield kernels");
  }

  // The NLL into result_[0] (after the call's synchronisation).
  void enqueue_value() {
    if (nbins_ == 0) {
      result_.get()[0] = 0.0;
      return;
    }
    ops_->sum_over_bins(binval_.get(), nbins_, 1, nbins_, 1, value_d_.get());
    ops_->to_host_async(result_.get(), value_d_.get(), sizeof(double), "summing the NLL");
  }

  // K2ᵀ(φ∘N) into result_[1, 1+W) and the per-process sums into result_[1+W, 1+W+P).
  void enqueue_gradient() {
    if (nbins_ == 0) return;
    if (sparse_) pw_.zero();
    ops_->gradient_weights(entries(), log_normal_, phi_.get(), q_.get(), N_.get(), rho_d_.get(), gw_.get(),
                           pw_.get(), nproc_);
    k2_multiply(true, gw_.get(), y_.get(), 1);
    enqueue_gradient_sums();
  }

  // The per-process sums of pw, then y and those sums copied back.
  void enqueue_gradient_sums() {
    if (nbins_ == 0) return;
    ops_->sum_over_bins(pw_.get(), nbins_, nproc_, 0, 1, small_.get());
    ops_->check("the gradient kernels");
    ops_->to_host_async(result_.get() + 1, y_.get(), width_ * sizeof(double), "reading the gradient");
    ops_->to_host_async(result_.get() + 1 + width_, small_.get(), nproc_ * sizeof(double),
                        "reading the gradient");
  }

  // ∇_ξ of the shard's partial NLL after the synchronisation; keeps y and the per-process weights for
  // the HVP.
  void read_gradient(Eigen::VectorXd& grad) {
    grad = Eigen::VectorXd::Zero(npar_);
    y_host_.assign(width_, 0.0);
    wproc_ = Eigen::VectorXd::Zero(nproc_);
    if (nbins_ == 0) return;
    const double* r = result_.get();
    std::copy(r + 1, r + 1 + width_, y_host_.begin());
    std::copy(r + 1 + width_, r + 1 + width_ + nproc_, wproc_.data());
    for (int64_t s = 0; s < nsyst_; ++s)
      grad[nparams_ + s] = y_host_[s] + (symmetric_ ? 0.0 : h1_[s] * y_host_[nsyst_ + s]);
    if (nparams_ > 0) grad.head(nparams_) = jac_.transpose() * wproc_;
  }

  // The device part of H_ξ U for U (npar × k), k <= batch_width(), after forward() and
  // enqueue_gradient() at the same point: K2ᵀω into result_ after the gradient, the per-process sums t
  // after it.
  void enqueue_hvp(const Eigen::MatrixXd& U);

  // H_ξ U after the synchronisation: the device part plus the h'' and param-model curvature terms.
  void read_hvp(const Eigen::MatrixXd& U, Eigen::MatrixXd& out);

  std::shared_ptr<const Model> model_;
  int64_t begin_, end_;
  // Declared before the buffers so that it outlives them (members are destroyed in reverse order).
  std::unique_ptr<Ops> ops_;
  int nproc_ = 0;
  int64_t nsyst_ = 0, width_ = 0, npar_ = 0, nparams_ = 0, nbins_ = 0, nentries_ = 0;
  bool log_normal_ = true, symmetric_ = false, sparse_ = false;
  bm::BinConfig cfg_;
  int64_t batch_ = 0;  // HVP batch width, set with its buffers at the first HVP (batch_width())
  FusedTiles tiles_;   // the fused loss+grad tiling (dense; none: the two-pass path)
  std::vector<double> rho_;
  std::vector<unsigned char> masked_host_;

  // per-point host state
  Eigen::VectorXd pi_, theta_, rates_, h_, h1_, h2_, wproc_;
  Eigen::MatrixXd jac_;
  std::vector<double> y_host_;
  // the per-point cache: the key and the loss and gradient of the last derivative call
  bool point_valid_ = false, point_profile_ = true;
  Eigen::VectorXd point_xi_, grad_;
  double f_ = 0.0;

  Ops* o() { return ops_.get(); }
  Buf<int32_t> bin_{o()}, proc_{o()}, cols_{o()}, rows_{o()};
  Buf<int64_t> rowptr_{o()}, colptr_{o()};
  Buf<double> norm_{o()}, logk_{o()}, vals_{o()}, tvals_{o()};
  DeviceCsrSegments<Ops> csr_segments_{o()}, csc_segments_{o()};
  Buf<double> partial_{o()};  // the sparse products' piece sums (max_slots_ per column)
  int64_t max_slots_ = 0;
  Buf<double> kstat_{o()}, beta0_{o()}, sigma2_{o()};
  Buf<unsigned char> masked_{o()}, zero_var_{o()};
  Buf<double> nobs_{o()}, varnobs_{o()}, lognobs_{o()}, rho_d_{o()}, rates_d_{o()}, m_vec_{o()};
  Buf<double> lambda_{o()}, q_{o()}, N_{o()}, gw_{o()}, Nbp_{o()}, phi_{o()}, u1_{o()}, u2_{o()}, d_{o()},
      pw_{o()}, m_{o()}, binval_{o()}, beta_{o()}, y_{o()}, small_{o()};
  Buf<double> cols_d_{o()}, dr_d_{o()}, dlambda_{o()}, omega_{o()}, dN_{o()}, z_{o()}, t_{o()}, O_{o()},
      tproc_{o()}, value_d_{o()};
  Buf<double> block_partial_{o()};  // the fused pass's per-block gradients (tiles_.blocks × W)
  Pinned<Ops> stage_{o()}, result_{o()};
  Buf<double> h1_d_{o()}, hess_d_{o()};  // the SYRK path's h' and θθ lower triangle (S × S)
  Pinned<Ops> hess_host_{o()};
};

}  // namespace rabbit::pipeline

#include "shard_pipeline_hvp.hpp"
#include "shard_pipeline_passes.hpp"
