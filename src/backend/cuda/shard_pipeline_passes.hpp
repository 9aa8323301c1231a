#pragma once
// Out-of-class members of ShardPipeline (shard_pipeline.hpp), kept apart so that each file reads in
// one sitting: the fused loss+grad pass (docs/sharding-and-gpu.md "Fused loss+grad pass") and the dense
// Hessian with its θθ block as a SYRK (docs/sharding-and-gpu.md "The dense Hessian as a SYRK").
// Included at the end of shard_pipeline.hpp only.

namespace rabbit::pipeline {

template <class Ops>
void ShardPipeline<Ops>::enqueue_fused(const Eigen::VectorXd& xi, bool profile) {
  upload_point(xi);
  FusedPass a;
  a.tiles = tiles_;
  a.cfg = cfg_;
  a.cfg.profile = profile;
  a.entries = entries();
  a.bins = bins();
  a.log_normal = log_normal_;
  a.width = width_;
  a.K2 = logk_.get();
  a.m = m_vec_.get();
  a.rates = rates_d_.get();
  a.rho = rho_d_.get();
  a.lambda = lambda_.get();
  a.q = q_.get();
  a.N = N_.get();
  a.Nbp = Nbp_.get();
  a.beta = beta_.get();
  a.phi = phi_.get();
  a.u1 = u1_.get();
  a.u2 = u2_.get();
  a.d = d_.get();
  a.schur = m_.get();
  a.value = binval_.get();
  a.gw = gw_.get();
  a.pw = pw_.get();
  a.partial = block_partial_.get();
  ops_->fused_loss_grad(a);
  ops_->reduce_partials(block_partial_.get(), tiles_.blocks, width_, y_.get());
  ops_->check("the fused loss+grad pass");
  enqueue_value();
  enqueue_gradient_sums();
}

template <class Ops>
double ShardPipeline<Ops>::hessian_by_syrk(int64_t width, const Eigen::VectorXd& xi, bool profile,
                                           bool pending, Eigen::VectorXd& grad, Eigen::MatrixXd& hess) {
  const int64_t S = nsyst_, E = nentries_, R = syrk_tile_rows(width);
  hess = Eigen::MatrixXd::Zero(npar_, npar_);
  const Eigen::MatrixXd pi_unit = Eigen::MatrixXd::Identity(npar_, nparams_);
  if (nparams_ > 0) enqueue_hvp(pi_unit);
  ops_->process_indicator(entries(), nproc_, dlambda_.get());
  dr_d_.zero(static_cast<size_t>(nproc_) * nproc_);
  const int64_t nbp = nbins_ * nproc_;
  ops_->delta_yields(entries(), log_normal_, q_.get(), N_.get(), rho_d_.get(), dlambda_.get(), dr_d_.get(),
                     dN_.get(), nbp, nproc_, nproc_);
  ops_->apply_psi(nbins_, nproc_, nproc_, u1_.get(), u2_.get(), d_.get(), m_.get(), dN_.get(), z_.get());
  ops_->hvp_weights(entries(), log_normal_, z_.get(), phi_.get(), q_.get(), N_.get(), rho_d_.get(),
                    dlambda_.get(), dr_d_.get(), omega_.get(), t_.get(), nbp, nproc_, nproc_);
  // h' to the device through the staging after the π directions (width > nparams leaves room).
  double* h1 = stage_.get() + (width_ + nproc_) * (1 + nparams_);
  std::copy(h1_.data(), h1_.data() + S, h1);
  h1_d_.allocate(S, "allocating the Hessian");
  ops_->to_device_async(h1_d_.get(), h1, S * sizeof(double), "copying h'");
  hess_d_.allocate(static_cast<size_t>(S) * S, "allocating the Hessian");
  hess_host_.reserve(static_cast<size_t>(S) * S, "allocating pinned host buffers");
  for (int64_t e0 = 0; e0 < E; e0 += R) {
    const int64_t rows = std::min<int64_t>(R, E - e0);
    ops_->theta_tile(logk_.get(), width_, S, symmetric_, h1_d_.get(), e0, rows, dN_.get());
    ops_->mix_tile(E, nproc_, S, omega_.get(), dN_.get(), e0, rows, z_.get());
    ops_->syrkx_lower(S, rows, dN_.get(), z_.get(), hess_d_.get(), e0 > 0);
  }
  ops_->check("the Hessian kernels");
  ops_->to_host_async(hess_host_.get(), hess_d_.get(), S * S * sizeof(double), "reading the Hessian");
  ops_->synchronize("evaluating the Hessian");
  if (pending) keep_point(xi, profile);
  grad = grad_;
  if (nparams_ > 0) {
    Eigen::MatrixXd out;
    read_hvp(pi_unit, out);
    hess.leftCols(nparams_) = out;
  }
  // θθ: the device's lower triangle, mirrored, plus h''∘y_d (read_hvp's diagonal term).
  Eigen::Map<const Eigen::MatrixXd> Hd(hess_host_.get(), S, S);
  auto Htt = hess.bottomRightCorner(S, S);
  Htt = Hd.selfadjointView<Eigen::Lower>();
  if (!symmetric_)
    for (int64_t s = 0; s < S; ++s) Htt(s, s) += h2_[s] * y_host_[nsyst_ + s];
  // π rows from the π columns; the ππ block symmetrised as the HVP path does.
  if (nparams_ > 0) {
    hess.topRightCorner(nparams_, S) = hess.bottomLeftCorner(S, nparams_).transpose();
    auto Hpp = hess.topLeftCorner(nparams_, nparams_);
    Hpp = (0.5 * (Hpp + Hpp.transpose())).eval();
  }
  return f_;
}

}  // namespace rabbit::pipeline
