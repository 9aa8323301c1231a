#include "remote_shard.hpp"

#include <fmt/format.h>

#include <climits>

#include "rabbit/core/error.hpp"

namespace rabbit::mpi::detail {

namespace {

std::vector<double> concat(const Eigen::VectorXd& a, const double* b = nullptr, size_t nb = 0) {
  std::vector<double> out(a.data(), a.data() + a.size());
  if (b) out.insert(out.end(), b, b + nb);
  return out;
}

}  // namespace

std::string RemoteShard::device() const {
  if (link_->shards_per_rank == 1) return fmt::format("rank{}:cpu", rank_);
  return fmt::format("rank{}:shard{}", rank_, local_);
}

bool RemoteShard::recording(Request request) {
  switch (link_->phase) {
    case RankLink::Phase::recording:
      // Every proxy records the same request; the first is sent to all ranks.
      if (!link_->request) link_->request = std::move(request);
      return true;
    case RankLink::Phase::delivering:
      return false;
    default:
      throw Error(fmt::format("the shard of rank {} was called outside a dispatch of its RankFitter", rank_));
  }
}

// Before anything is sent: the replies of all ranks must fit MPI's int counts (MPI_Gatherv).
void RemoteShard::check_reply_size(int64_t values_per_rank) const {
  const int64_t total = (values_per_rank * link_->shards_per_rank + 1) * (link_->ranks - 1);
  if (total > INT_MAX)
    throw ResourceError(
        fmt::format("the {} ranks' replies would hold {} values, more than MPI's count limit ({}): too many "
                    "parameters for a "
                    "dense Hessian across ranks; use fewer ranks or run without mpirun (docs/mpi.md)",
                    link_->ranks, total, INT_MAX));
}

const std::vector<double>& RemoteShard::reply(size_t expected) const {
  const std::vector<double>& r = link_->replies.at(static_cast<size_t>(rank_));
  check_reply(rank_, r, expected);
  return r;
}

const double* RemoteShard::part(size_t per_shard) const {
  const auto& r = reply(per_shard * static_cast<size_t>(link_->shards_per_rank));
  return r.data() + 1 + per_shard * static_cast<size_t>(local_);
}

void RemoteShard::set_observed(const Eigen::VectorXd& nobs, const Eigen::VectorXd& varnobs) {
  // Fitter's constructor sets the file's data before RankFitter exists; every rank already holds
  // that data from its own read of the same file.
  if (link_->phase == RankLink::Phase::constructing) return;
  Request r{Op::set_observed, nobs.size(), 0, varnobs.size() > 0 ? 1 : 0,
            concat(nobs, varnobs.data(), static_cast<size_t>(varnobs.size()))};
  if (recording(std::move(r))) return;
  reply(0);
}

double RemoteShard::value(const Eigen::VectorXd& xi) {
  if (recording({Op::value, xi.size(), 0, 0, concat(xi)})) return 0.0;
  return part(1)[0];
}

double RemoteShard::value_grad(const Eigen::VectorXd& xi, Eigen::VectorXd& grad) {
  const int64_t n = xi.size();
  if (recording({Op::value_grad, n, 0, 0, concat(xi)})) {
    grad.setZero(n);
    return 0.0;
  }
  const double* r = part(1 + static_cast<size_t>(n));
  grad = Eigen::Map<const Eigen::VectorXd>(r + 1, n);
  return r[0];
}

double RemoteShard::value_grad_hvp(const Eigen::VectorXd& xi, const Eigen::MatrixXd& V, Eigen::VectorXd& grad,
                                   Eigen::MatrixXd& HV) {
  const int64_t n = xi.size(), k = V.cols();
  if (link_->phase == RankLink::Phase::recording) check_reply_size(1 + n + n * k);
  if (recording({Op::value_grad_hvp, n, k, 0, concat(xi, V.data(), static_cast<size_t>(V.size()))})) {
    grad.setZero(n);
    HV.setZero(n, k);
    return 0.0;
  }
  const double* r = part(1 + static_cast<size_t>(n + n * k));
  grad = Eigen::Map<const Eigen::VectorXd>(r + 1, n);
  HV = Eigen::Map<const Eigen::MatrixXd>(r + 1 + n, n, k);
  return r[0];
}

double RemoteShard::value_grad_hess(const Eigen::VectorXd& xi, Eigen::VectorXd& grad, Eigen::MatrixXd& hess,
                                    bool profile) {
  const int64_t n = xi.size();
  if (link_->phase == RankLink::Phase::recording) check_reply_size(1 + n + n * n);
  if (recording({Op::value_grad_hess, n, 0, profile ? 1 : 0, concat(xi)})) {
    grad.setZero(n);
    return 0.0;  // hess: the caller's zeros stay until delivery
  }
  const double* r = part(1 + static_cast<size_t>(n + n * n));
  grad = Eigen::Map<const Eigen::VectorXd>(r + 1, n);
  hess = Eigen::Map<const Eigen::MatrixXd>(r + 1 + n, n, n);
  return r[0];
}

Eigen::VectorXd RemoteShard::profiled_beta(const Eigen::VectorXd& xi) {
  if (recording({Op::profiled_beta, xi.size(), 0, 0, concat(xi)})) return {};
  // The reply: every local shard's length, then their β in shard order.
  const size_t shards = static_cast<size_t>(link_->shards_per_rank);
  const auto& r = reply(shards);
  size_t offset = 1 + shards, total = 0;
  for (size_t i = 0; i < shards; ++i) {
    const size_t len = static_cast<size_t>(r[1 + i]);
    if (i < static_cast<size_t>(local_)) offset += len;
    total += len;
  }
  if (r.size() != 1 + shards + total)
    throw Error(fmt::format("rank {}: a profiled β of {} values, its shards announced {}", rank_,
                            r.size() - 1 - shards, total));
  return Eigen::Map<const Eigen::VectorXd>(r.data() + offset, static_cast<int64_t>(r[1 + local_]));
}

void RemoteShard::set_beta_centres(const Eigen::VectorXd& beta0) {
  if (link_->phase != RankLink::Phase::idle)
    throw Error(fmt::format("the BB centres of rank {} were set inside a dispatch", rank_));
  if (rank_ == 1 && local_ == 0) {
    Request r{Op::set_beta_centres, beta0.size(), link_->nbinsfull, 0, concat(beta0)};
    broadcast(r);
    link_->replies = gather({});
  }
  reply(0);
}

}  // namespace rabbit::mpi::detail
