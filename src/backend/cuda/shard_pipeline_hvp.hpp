#pragma once
// Out-of-class members of ShardPipeline (shard_pipeline.hpp): its HVP batch. The batch width and its
// buffers, allocated once at the first HVP (docs/sharding-and-gpu.md "HVP batch width"); the device
// part of H_ξ U for a batch of directions, which runs the loss+grad passes with k columns
// (K2·[u; h'∘u] and K2ᵀ ω); and the host terms added to it after the synchronisation.
// Included at the end of shard_pipeline.hpp only. Declared `inline` as members defined in the class
// are, so that the compiler weighs inlining them as before they moved here.

namespace rabbit::pipeline {

template <class Ops>
inline int64_t ShardPipeline<Ops>::batch_width() {
  if (batch_ > 0) return batch_;
  const uint64_t budget = ops_->batch_budget(),
                 per_column = std::max<uint64_t>(1, batch_column_bytes() + max_slots_ * sizeof(double));
  const int64_t width = batch_columns(budget, per_column, npar_);
  if (width < 1)
    throw ResourceError(fmt::format(
        "{}: one HVP batch column of the shard over bins [{}, {}) needs {:.2f} MiB of device memory, "
        "{:.2f} MiB are available; use more shards (--nDevices) or --backend cpu",
        ops_->name(), begin_, end_, per_column / 1048576.0, budget / 1048576.0));
  const size_t k = static_cast<size_t>(width), nbp = static_cast<size_t>(nbins_) * nproc_;
  cols_d_.allocate(width_ * k, "allocating the HVP batch");
  dr_d_.allocate(nproc_ * k, "allocating the HVP batch");
  for (Buf<double>* b : {&dlambda_, &omega_}) b->allocate(nentries_ * k, "allocating the HVP batch");
  for (Buf<double>* b : {&dN_, &z_, &t_}) b->allocate(nbp * k, "allocating the HVP batch");
  O_.allocate(width_ * k, "allocating the HVP batch");
  tproc_.allocate(nproc_ * k, "allocating the HVP batch");
  partial_.allocate(max_slots_ * k, "allocating the HVP batch");
  // Pinned staging: [m | rates | directions | dr] out, [f | y | wproc | O | tproc] back.
  stage_.reserve((width_ + nproc_) * (1 + k), "allocating pinned host buffers");
  result_.reserve(1 + (width_ + nproc_) * (1 + k), "allocating pinned host buffers");
  batch_ = width;
  return batch_;
}

template <class Ops>
inline void ShardPipeline<Ops>::enqueue_hvp(const Eigen::MatrixXd& U) {
  if (nbins_ == 0) return;
  const int k = static_cast<int>(U.cols());
  const int64_t nbp = nbins_ * nproc_;
  double* stage = stage_.get() + width_ + nproc_;
  Eigen::Map<Eigen::MatrixXd> cols(stage, width_, k), dr(stage + width_ * k, nproc_, k);
  const auto Ut = U.bottomRows(nsyst_);
  cols.topRows(nsyst_) = Ut;
  if (!symmetric_) cols.bottomRows(nsyst_) = h1_.asDiagonal() * Ut;
  if (nparams_ > 0)
    dr = jac_ * U.topRows(nparams_);
  else
    dr.setZero();
  ops_->to_device_async(cols_d_.get(), cols.data(), cols.size() * sizeof(double), "copying HVP directions");
  ops_->to_device_async(dr_d_.get(), dr.data(), dr.size() * sizeof(double), "copying HVP directions");
  k2_multiply(false, cols_d_.get(), dlambda_.get(), k);
  if (sparse_) {
    dN_.zero(nbp * k);
    t_.zero(nbp * k);
  }
  ops_->delta_yields(entries(), log_normal_, q_.get(), N_.get(), rho_d_.get(), dlambda_.get(), dr_d_.get(),
                     dN_.get(), nbp, nproc_, k);
  ops_->apply_psi(nbins_, nproc_, k, u1_.get(), u2_.get(), d_.get(), m_.get(), dN_.get(), z_.get());
  ops_->hvp_weights(entries(), log_normal_, z_.get(), phi_.get(), q_.get(), N_.get(), rho_d_.get(),
                    dlambda_.get(), dr_d_.get(), omega_.get(), t_.get(), nbp, nproc_, k);
  k2_multiply(true, omega_.get(), O_.get(), k);
  ops_->sum_over_bins(t_.get(), nbins_, nproc_, nbp, k, tproc_.get());
  ops_->check("the HVP kernels");
  double* back = result_.get() + 1 + width_ + nproc_;
  ops_->to_host_async(back, O_.get(), width_ * k * sizeof(double), "reading the HVP");
  ops_->to_host_async(back + width_ * k, tproc_.get(), nproc_ * k * sizeof(double), "reading the HVP");
}

template <class Ops>
inline void ShardPipeline<Ops>::read_hvp(const Eigen::MatrixXd& U, Eigen::MatrixXd& out) {
  const int64_t k = U.cols();
  out = Eigen::MatrixXd::Zero(npar_, k);
  if (nparams_ > 0 && model_->param_model) {
    // 𝒞_ππ: Σ_p w_p ∂²r_p/∂π∂πᵀ with w = Σ_b φ q (param-model curvature, host).
    out.topRows(nparams_) = model_->param_model->rate_curvature(pi_, wproc_) * U.topRows(nparams_);
  }
  if (nbins_ == 0) return;
  const double* back = result_.get() + 1 + width_ + nproc_;
  Eigen::Map<const Eigen::MatrixXd> O(back, width_, k), tp(back + width_ * k, nproc_, k);
  const auto Ut = U.bottomRows(nsyst_);
  for (int64_t s = 0; s < nsyst_; ++s) {
    out.row(nparams_ + s) = O.row(s);
    if (!symmetric_) {
      out.row(nparams_ + s) += h1_[s] * O.row(nsyst_ + s);
      out.row(nparams_ + s) += (h2_[s] * y_host_[nsyst_ + s]) * Ut.row(s);
    }
  }
  if (nparams_ > 0) out.topRows(nparams_) += jac_.transpose() * tp;
}

}  // namespace rabbit::pipeline
