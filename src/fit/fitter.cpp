#include "rabbit/fit/fitter.hpp"

#include <fmt/format.h>

#include "rabbit/backend/cpu/cpu_shard.hpp"
#include "rabbit/core/error.hpp"
#include "rabbit/core/logging.hpp"

namespace rabbit {

struct Fitter::Point {
  Eigen::VectorXd xi, d1, d2;
};

Fitter::Fitter(std::shared_ptr<Model> model, std::vector<std::unique_ptr<ShardEvaluator>> shards)
    : model_(std::move(model)), shards_(std::move(shards)) {
  if (shards_.empty()) throw Error("Fitter needs at least one shard");
  int64_t expected = 0;
  for (const auto& s : shards_) {
    if (s->bin_begin() != expected || s->bin_end() < s->bin_begin())
      throw Error(fmt::format("shards do not tile the observed bins: shard [{}, {}) after bin {}",
                              s->bin_begin(), s->bin_end(), expected));
    expected = s->bin_end();
  }
  if (expected != model_->input->nbins)
    throw Error(fmt::format("shards cover {} bins, the model has {}", expected, model_->input->nbins));
  set_observed(model_->input->data_obs, model_->input->data_var.value_or(Eigen::VectorXd()));
}

Fitter::~Fitter() = default;

int64_t Fitter::size() const {
  return model_->parameters.size();
}

void Fitter::for_each_shard(const std::function<void(size_t)>& fn) {
  for (size_t i = 0; i < shards_.size(); ++i) fn(i);
}

Fitter::Point Fitter::transform(const Eigen::VectorXd& x) const {
  if (x.size() != size())
    throw Error(fmt::format("parameter vector has length {}, the model has {} parameters", x.size(), size()));
  Point p;
  model_->parameters.transform(x, p.xi, p.d1, p.d2);
  return p;
}

void Fitter::set_observed(const Eigen::VectorXd& nobs, const Eigen::VectorXd& varnobs) {
  nobs_ = nobs;
  varnobs_ = varnobs;
  for_each_shard([&](size_t i) { shards_[i]->set_observed(nobs_, varnobs_); });
  if (host_yields_) host_yields_->set_observed(nobs_, varnobs_);
}

YieldModel& Fitter::yield_model() {
  if (YieldModel* own = shards_.front()->yield_model()) return *own;
  if (!host_yields_) {
    log().info("Building a CPU shard over the {} observed bins for the postfit yields (the fit runs on {})",
               model_->input->nbins, shards_.front()->device());
    host_yields_ = make_host_yield_model(model_, postfit_threads_);
    host_yields_->set_observed(nobs_, varnobs_);
    if (beta0_.size()) host_yields_->set_beta_centres(beta0_);
    if (stored_beta_.size()) host_yields_->set_stored_beta(stored_beta_);
  }
  return *host_yields_;
}

void Fitter::set_beta_centres(const Eigen::VectorXd& beta0) {
  // Check every shard can take them before changing any.
  for (const auto& s : shards_)
    if (!s->accepts_beta_centres()) s->set_beta_centres(beta0);  // refuses with the shard's OptionError
  for (const auto& s : shards_) s->set_beta_centres(beta0);
  beta0_ = beta0;
  stored_beta_.resize(0);  // YieldModel::set_beta_centres resets the stored β to β⁰
  if (host_yields_) host_yields_->set_beta_centres(beta0);
}

void Fitter::set_stored_beta(const Eigen::VectorXd& beta) {
  for (const auto& s : shards_)
    if (YieldModel* own = s->yield_model()) own->set_stored_beta(beta);
  stored_beta_ = beta;
  if (host_yields_) host_yields_->set_stored_beta(beta);
}

double Fitter::value(const Eigen::VectorXd& x) {
  const Point p = transform(x);
  std::vector<double> partial(shards_.size());
  for_each_shard([&](size_t i) { partial[i] = shards_[i]->value(p.xi); });
  double f = 0.0;
  for (double v : partial) f += v;
  f += model_->global_terms->xi_terms(p.xi, nullptr, nullptr, nullptr, nullptr);
  f += model_->global_terms->x_terms(x, nullptr, nullptr, nullptr, nullptr);
  return f;
}

double Fitter::value_grad(const Eigen::VectorXd& x, Eigen::VectorXd& grad) {
  const Point p = transform(x);
  const int64_t n = size();
  std::vector<double> partial(shards_.size());
  std::vector<Eigen::VectorXd> grads(shards_.size(), Eigen::VectorXd::Zero(n));
  for_each_shard([&](size_t i) { partial[i] = shards_[i]->value_grad(p.xi, grads[i]); });
  double f = 0.0;
  Eigen::VectorXd gxi = Eigen::VectorXd::Zero(n);
  for (size_t i = 0; i < shards_.size(); ++i) {
    f += partial[i];
    gxi += grads[i];
  }
  f += model_->global_terms->xi_terms(p.xi, &gxi, nullptr, nullptr, nullptr);
  grad = p.d1.cwiseProduct(gxi);
  f += model_->global_terms->x_terms(x, &grad, nullptr, nullptr, nullptr);
  return f;
}

double Fitter::value_grad_hvp(const Eigen::VectorXd& x, const Eigen::MatrixXd& V, Eigen::VectorXd& grad,
                              Eigen::MatrixXd& HV) {
  const Point p = transform(x);
  const int64_t n = size();
  const int64_t k = V.cols();
  // H_x v = T' ∘ (H_ξ (T' ∘ v)) + T'' ∘ ∇_ξ L ∘ v   (+ the x-space terms)
  const Eigen::MatrixXd Vxi = p.d1.asDiagonal() * V;
  std::vector<double> partial(shards_.size());
  std::vector<Eigen::VectorXd> grads(shards_.size(), Eigen::VectorXd::Zero(n));
  std::vector<Eigen::MatrixXd> hvs(shards_.size(), Eigen::MatrixXd::Zero(n, k));
  for_each_shard([&](size_t i) { partial[i] = shards_[i]->value_grad_hvp(p.xi, Vxi, grads[i], hvs[i]); });
  double f = 0.0;
  Eigen::VectorXd gxi = Eigen::VectorXd::Zero(n);
  Eigen::MatrixXd hxi = Eigen::MatrixXd::Zero(n, k);
  for (size_t i = 0; i < shards_.size(); ++i) {
    f += partial[i];
    gxi += grads[i];
    hxi += hvs[i];
  }
  f += model_->global_terms->xi_terms(p.xi, &gxi, &Vxi, &hxi, nullptr);
  HV = p.d1.asDiagonal() * hxi;
  HV += (p.d2.cwiseProduct(gxi)).asDiagonal() * V;
  grad = p.d1.cwiseProduct(gxi);
  f += model_->global_terms->x_terms(x, &grad, &V, &HV, nullptr);
  return f;
}

double Fitter::value_grad_hess(const Eigen::VectorXd& x, Eigen::VectorXd& grad, Eigen::MatrixXd& hess) {
  return value_grad_hess(x, grad, hess, true);
}

double Fitter::value_grad_hess(const Eigen::VectorXd& x, Eigen::VectorXd& grad, Eigen::MatrixXd& hess,
                               bool profile) {
  const Point p = transform(x);
  const int64_t n = size();
  std::vector<double> partial(shards_.size());
  std::vector<Eigen::VectorXd> grads(shards_.size(), Eigen::VectorXd::Zero(n));
  std::vector<Eigen::MatrixXd> hessians(shards_.size());
  for_each_shard([&](size_t i) {
    hessians[i].setZero(n, n);
    partial[i] = shards_[i]->value_grad_hess(p.xi, grads[i], hessians[i], profile);
  });
  double f = 0.0;
  Eigen::VectorXd gxi = Eigen::VectorXd::Zero(n);
  Eigen::MatrixXd hxi = std::move(hessians[0]);
  f += partial[0];
  gxi += grads[0];
  for (size_t i = 1; i < shards_.size(); ++i) {
    f += partial[i];
    gxi += grads[i];
    hxi += hessians[i];
  }
  hessians.clear();
  f += model_->global_terms->xi_terms(p.xi, &gxi, nullptr, nullptr, &hxi);
  // H_x = diag(T') H_ξ diag(T') + diag(T'' ∘ ∇_ξ L)
  hess = p.d1.asDiagonal() * hxi * p.d1.asDiagonal();
  hess.diagonal() += p.d2.cwiseProduct(gxi);
  grad = p.d1.cwiseProduct(gxi);
  f += model_->global_terms->x_terms(x, &grad, nullptr, nullptr, &hess);
  return f;
}

Eigen::VectorXd Fitter::profiled_beta(const Eigen::VectorXd& x) {
  const Point p = transform(x);
  std::vector<Eigen::VectorXd> parts(shards_.size());
  for_each_shard([&](size_t i) { parts[i] = shards_[i]->profiled_beta(p.xi); });
  int64_t total = 0;
  for (const auto& b : parts) total += b.size();
  Eigen::VectorXd beta(total);
  int64_t offset = 0;
  for (const auto& b : parts) {
    beta.segment(offset, b.size()) = b;
    offset += b.size();
  }
  return beta;
}

}  // namespace rabbit
