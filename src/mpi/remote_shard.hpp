#pragma once
// RemoteShard: on rank 0, the ShardEvaluator of the bins of one local shard of another rank (docs/mpi.md
// "One evaluation", "Local shards of a rank"). It records requests and returns its part of the rank's
// reply; it never communicates itself (RankFitter does, once per dispatch for all ranks).
#include <memory>

#include "rabbit/model/shard_evaluator.hpp"
#include "rank_link.hpp"

namespace rabbit::mpi::detail {

class RemoteShard : public ShardEvaluator {
 public:
  /// `local`: the number of the shard among its rank's local shards (link->shards_per_rank of them).
  RemoteShard(std::shared_ptr<RankLink> link, int rank, int local, int64_t bin_begin, int64_t bin_end)
      : link_(std::move(link)), rank_(rank), local_(local), begin_(bin_begin), end_(bin_end) {}

  int64_t bin_begin() const override { return begin_; }
  int64_t bin_end() const override { return end_; }
  std::string device() const override;
  void set_observed(const Eigen::VectorXd& nobs, const Eigen::VectorXd& varnobs) override;
  double value(const Eigen::VectorXd& xi) override;
  double value_grad(const Eigen::VectorXd& xi, Eigen::VectorXd& grad) override;
  double value_grad_hvp(const Eigen::VectorXd& xi, const Eigen::MatrixXd& V, Eigen::VectorXd& grad,
                        Eigen::MatrixXd& HV) override;
  double value_grad_hess(const Eigen::VectorXd& xi, Eigen::VectorXd& grad, Eigen::MatrixXd& hess,
                         bool profile = true) override;
  Eigen::VectorXd profiled_beta(const Eigen::VectorXd& xi) override;
  bool accepts_beta_centres() const override { return true; }
  /// Fitter::set_beta_centres calls the shards one by one, outside a dispatch: the first proxy of rank 1
  /// (always the first proxy) sends the centres to every rank and gathers their replies; each proxy
  /// then reports its rank's.
  void set_beta_centres(const Eigen::VectorXd& beta0) override;

 private:
  bool recording(Request request);  // true (request stored) while recording; false while delivering
  const std::vector<double>& reply(size_t expected) const;
  /// This shard's `per_shard` values in its rank's reply of fixed-length parts (after the status).
  const double* part(size_t per_shard) const;
  void check_reply_size(int64_t values_per_rank) const;

  std::shared_ptr<RankLink> link_;
  int rank_, local_;
  int64_t begin_, end_;
};

}  // namespace rabbit::mpi::detail
