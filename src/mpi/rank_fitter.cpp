// The coordinator's side (docs/mpi.md "One evaluation"): RankFitter and make_rank_fitter.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <exception>

#include "protocol.hpp"
#include "rabbit/core/error.hpp"
#include "rabbit/core/logging.hpp"
#include "rabbit/fit/make_fitter.hpp"
#include "rabbit/fit/shard_registry.hpp"
#include "rabbit/model/param_model.hpp"
#include "rabbit/mpi/ranks.hpp"
#include "rank_link.hpp"
#include "rank_yield_model.hpp"
#include "remote_shard.hpp"
#include "tensor_bytes.hpp"

namespace rabbit::mpi {

namespace {

using detail::RankLink;

// One of rank 0's local shards as a shard of the RankFitter; the shards themselves belong to the
// LocalShards, which run them concurrently (docs/mpi.md "Local shards of a rank").
class LocalShardRef : public ShardEvaluator {
 public:
  LocalShardRef(std::shared_ptr<LocalShards> local, size_t index)
      : local_(std::move(local)), inner_(*local_->shards.at(index)) {}
  int64_t bin_begin() const override { return inner_.bin_begin(); }
  int64_t bin_end() const override { return inner_.bin_end(); }
  std::string device() const override { return "rank0:" + inner_.device(); }
  void set_observed(const Eigen::VectorXd& nobs, const Eigen::VectorXd& varnobs) override {
    inner_.set_observed(nobs, varnobs);
  }
  double value(const Eigen::VectorXd& xi) override { return inner_.value(xi); }
  double value_grad(const Eigen::VectorXd& xi, Eigen::VectorXd& grad) override {
    return inner_.value_grad(xi, grad);
  }
  double value_grad_hvp(const Eigen::VectorXd& xi, const Eigen::MatrixXd& V, Eigen::VectorXd& grad,
                        Eigen::MatrixXd& HV) override {
    return inner_.value_grad_hvp(xi, V, grad, HV);
  }
  double value_grad_hess(const Eigen::VectorXd& xi, Eigen::VectorXd& grad, Eigen::MatrixXd& hess,
                         bool profile) override {
    return inner_.value_grad_hess(xi, grad, hess, profile);
  }
  Eigen::VectorXd profiled_beta(const Eigen::VectorXd& xi) override { return inner_.profiled_beta(xi); }
  bool accepts_beta_centres() const override { return inner_.accepts_beta_centres(); }
  void set_beta_centres(const Eigen::VectorXd& beta0) override { inner_.set_beta_centres(beta0); }

 protected:
  std::shared_ptr<LocalShards> local_;
  ShardEvaluator& inner_;
};

// The ranks' yield model plus the masked channels' BB constants of --fullNll, which a single process
// counts with its last shard and which no rank's shard holds here: rank 0 computes them with an empty
// CPU shard [nbins, nbins), whose constants are exactly the masked entries' (docs/mpi.md "Postfit
// yields from the owning ranks").
class RankYieldsWithMaskedConstants : public detail::RankYieldModel {
 public:
  RankYieldsWithMaskedConstants(YieldModel& own, std::vector<std::pair<int64_t, int64_t>> ranges,
                                const FitInputData& input, YieldModel& masked)
      : RankYieldModel(own, std::move(ranges), input.nbins, input.nbinsfull, input.nproc), masked_(masked) {}
  double full_nll_constant() const override {
    return RankYieldModel::full_nll_constant() + masked_.full_nll_constant();
  }
  void set_beta_centres(const Eigen::VectorXd& beta0) override {
    RankYieldModel::set_beta_centres(beta0);
    masked_.set_beta_centres(beta0);
  }

 private:
  YieldModel& masked_;
};

// Rank 0's first local shard, whose yield model is the ranks' (docs/mpi.md "Postfit yields from the
// owning ranks"): rank 0's yield shard covers rank 0's bins and the masked channels, the servers the
// rest. A yield shard of its own (several local shards, or a GPU shard) and the shard of the masked
// BB constants follow the data and centres.
class CoordinatorShard : public LocalShardRef {
 public:
  CoordinatorShard(std::shared_ptr<LocalShards> local, std::shared_ptr<const Model> model,
                   std::vector<std::pair<int64_t, int64_t>> ranges)
      : LocalShardRef(std::move(local), 0) {
    const FitInputData& input = *model->input;
    YieldModel* own = local_->yields_shard().yield_model();
    if (!own) throw Error("rank 0's CPU shard offers no yield model");
    if (input.nbinsmasked > 0 && own->has_bb()) {
      ShardSpec spec;
      spec.model = model;
      spec.bin_begin = spec.bin_end = input.nbins;
      spec.threads = 1;
      masked_ = shard_kind("cpu").create(spec);
      if (!masked_->yield_model())
        throw Error("the CPU shard of the masked BB constants offers no yield model");
      yields_ = std::make_unique<RankYieldsWithMaskedConstants>(*own, std::move(ranges), input,
                                                                *masked_->yield_model());
    } else {
      yields_ = std::make_unique<detail::RankYieldModel>(*own, std::move(ranges), input.nbins,
                                                         input.nbinsfull, input.nproc);
    }
  }
  YieldModel* yield_model() override { return yields_.get(); }
  void set_observed(const Eigen::VectorXd& nobs, const Eigen::VectorXd& varnobs) override {
    inner_.set_observed(nobs, varnobs);
    if (local_->yield_shard) local_->yield_shard->set_observed(nobs, varnobs);
  }
  void set_beta_centres(const Eigen::VectorXd& beta0) override {
    inner_.set_beta_centres(beta0);
    if (local_->yield_shard) local_->yield_shard->set_beta_centres(beta0);
    if (masked_) masked_->set_beta_centres(beta0);
  }

 private:
  std::unique_ptr<ShardEvaluator> masked_;  // an empty shard [nbins, nbins): the masked BB constants
  std::unique_ptr<detail::RankYieldModel> yields_;
};

// Shards 0 … N−1 are rank 0's local shards; shard r·N + j the proxy of local shard j of rank r. One
// dispatch: record the request on the proxies, broadcast it, evaluate rank 0's shards (concurrently)
// while the other ranks evaluate theirs, gather the replies in rank order, deliver them. Fitter sums
// the partials in shard order (docs/sharding-and-gpu.md "MultiDeviceFitter"), so the result is that of
// --nDevices R·N with the same partition.
class RankFitter : public Fitter {
 public:
  RankFitter(std::shared_ptr<Model> model, std::vector<std::unique_ptr<ShardEvaluator>> shards,
             std::shared_ptr<RankLink> link, std::shared_ptr<LocalShards> local)
      : Fitter(std::move(model), std::move(shards)), link_(std::move(link)), local_(std::move(local)) {
    link_->phase = RankLink::Phase::idle;
  }
  // Where rank 0's time went (docs/mpi.md "Measurements"): its own shard, and the broadcast plus the
  // gather, which waits for the slowest rank (the exchange and the imbalance together).
  ~RankFitter() override {
    log().info(
        "MPI: {} evaluations over {} ranks; rank 0: {:.3f} s in its shard, {:.3f} s sending requests and "
        "waiting for replies",
        dispatches_, link_->ranks, local_seconds_, exchange_seconds_);
  }

 protected:
  void for_each_shard(const std::function<void(size_t)>& fn) override {
    const size_t n = shards().size(), own = local_->shards.size();
    if (detail::released()) throw Error("the MPI ranks were already released; no evaluation can follow");
    link_->request.reset();
    link_->phase = RankLink::Phase::recording;
    try {
      for (size_t i = own; i < n; ++i) fn(i);
    } catch (...) {
      link_->phase = RankLink::Phase::idle;
      throw;
    }
    link_->phase = RankLink::Phase::idle;
    if (!link_->request) throw Error("a RankFitter dispatch recorded no request");
    const auto t0 = Clock::now();
    detail::broadcast(*link_->request);
    const auto t1 = Clock::now();
    // Every rank now evaluates and replies: the gather must happen even when shard 0 fails.
    std::exception_ptr local_error;
    try {
      local_->pool->run(fn);  // shards 0 … own−1: the pool's indices are theirs
    } catch (...) {
      local_error = std::current_exception();
    }
    const auto t2 = Clock::now();
    link_->replies = detail::gather({});
    ++dispatches_;
    local_seconds_ += std::chrono::duration<double>(t2 - t1).count();
    exchange_seconds_ += std::chrono::duration<double>((t1 - t0) + (Clock::now() - t2)).count();
    if (local_error) std::rethrow_exception(local_error);
    link_->phase = RankLink::Phase::delivering;
    try {
      for (size_t i = own; i < n; ++i) fn(i);
    } catch (...) {
      link_->phase = RankLink::Phase::idle;
      throw;
    }
    link_->phase = RankLink::Phase::idle;
  }

 private:
  using Clock = std::chrono::steady_clock;
  std::shared_ptr<RankLink> link_;
  std::shared_ptr<LocalShards> local_;
  int64_t dispatches_ = 0;
  double local_seconds_ = 0.0, exchange_seconds_ = 0.0;
};

double mib(double bytes) {
  return bytes / (1024.0 * 1024.0);
}

// The bytes of rank 0's tensor, for the memory report of release_ranks (the input is gone by then).
int64_t& coordinator_tensor_bytes() {
  static int64_t bytes = 0;
  return bytes;
}

// What cannot run with the bins of one likelihood on several ranks: the same model features as
// --nDevices (docs/sharding-and-gpu.md "Refused in multi-device mode"), and bin-dependent param
// models, whose rates a shard server (holding no channels) cannot build.
void refuse_unsupported(const Model& model, int ranks) {
  std::vector<std::string> offending;
  if (model.options.likelihood == DataLikelihood::covariance)
    offending.push_back("--covarianceFit (the dense data covariance couples all bins)");
  if (!model.options.regularization.empty())
    offending.push_back("-r/--regularization (the regularizers read the predicted yields of all bins)");
  if (model.param_model && !model.param_model->bin_independent())
    offending.push_back("a bin-dependent --paramModel (its rates need the channels of all bins)");
  if (offending.empty()) return;
  throw OptionError(
      fmt::format("mpirun with {} ranks is incompatible with: {}; run without mpirun (docs/mpi.md)", ranks,
                  fmt::join(offending, "; ")));
}

}  // namespace

std::unique_ptr<Fitter> make_rank_fitter(std::shared_ptr<Model> model, const LocalDeviceOptions& devices,
                                         int shards_per_rank) {
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  refuse_unsupported(*model, size);
  const int threads = devices.threads;
  const int per_rank = std::max(1, shards_per_rank);
  const FitInputData& input = *model->input;
  // The partition of --nDevices size·per_rank; rank r holds its pieces r·per_rank … (r+1)·per_rank − 1
  // (docs/mpi.md "Local shards of a rank").
  const auto pieces = partition_bins(input, size * per_rank);
  std::vector<std::pair<int64_t, int64_t>> ranges;
  for (int r = 0; r < size; ++r)
    ranges.emplace_back(pieces[r * per_rank].first, pieces[(r + 1) * per_rank - 1].second);
  // read_coordinator_input cut the same partition (its sparse costs read the complete rowptr).
  // (Beyond its range where hbetavariations source bins lie there: read_coordinator_input.)
  if (input.logk_end >= 0 && input.logk_end < ranges[0].second)
    throw Error(fmt::format("{}: rank 0 holds the logk of bins [0, {}), its range is [0, {})", input.filename,
                            input.logk_end, ranges[0].second));

  detail::Request assign{
      detail::Op::assign, 0, 0, 0, {static_cast<double>(threads), static_cast<double>(per_rank)}};
  for (const auto& [a, b] : pieces) {
    assign.payload.push_back(static_cast<double>(a));
    assign.payload.push_back(static_cast<double>(b));
  }
  detail::broadcast(assign);

  // Rank 0's shard is built while the others read their ranges; the acknowledgements are gathered
  // even when it fails, since every rank sends one.
  std::shared_ptr<LocalShards> own;
  std::exception_ptr local_error;
  try {
    own = std::make_shared<LocalShards>(make_local_shards(
        model, std::vector<std::pair<int64_t, int64_t>>(pieces.begin(), pieces.begin() + per_rank), devices));
  } catch (...) {
    local_error = std::current_exception();
  }
  const auto acks = detail::gather({});
  if (local_error) std::rethrow_exception(local_error);
  for (int r = 1; r < size; ++r) detail::check_reply(r, acks[r], 2);

  std::vector<std::string> layout;
  for (int r = 0; r < size; ++r) {
    std::vector<std::string> own_pieces;
    for (int j = 0; j < per_rank; ++j)
      own_pieces.push_back(
          fmt::format("[{},{})", pieces[r * per_rank + j].first, pieces[r * per_rank + j].second));
    layout.push_back(fmt::format("rank{}:{}", r, fmt::join(own_pieces, "+")));
  }
  if (per_rank == 1)
    log().info("Sharding {} bins over {} MPI ranks ({} thread(s) each): [{}]", input.nbins, size, threads,
               fmt::join(layout, ", "));
  else
    log().info(
        "Sharding {} bins over {} MPI ranks, {} local shards each ({} on rank 0; {} thread(s) per rank): "
        "[{}]",
        input.nbins, size, per_rank, own->shards.front()->device(), threads, fmt::join(layout, ", "));
  coordinator_tensor_bytes() = detail::tensor_bytes(input);
  if (input.logk_end >= 0) {
    // The file's logk values: dense rows of every bin, or the end of the complete sparse rowptr.
    const int64_t held = static_cast<int64_t>(input.sparse ? input.logk_sparse.values.size() +
                                                                 input.logk_sparse.values_f32.size()
                                                           : input.logk.size() + input.logk_f32.size());
    const int64_t in_file =
        input.sparse ? input.logk_sparse.rowptr.back() : input.nbinsfull * input.nproc * input.logk_width();
    const std::string sources =
        input.logk_end > ranges[0].second
            ? fmt::format(", the hbetavariations source bins [{}, {})", ranges[0].second, input.logk_end)
            : "";
    const std::string masked =
        input.nbinsmasked > 0 ? fmt::format(" and the {} masked bins'", input.nbinsmasked) : "";
    log().info(
        "rank 0: bins [0, {}), logk {} of the file's {} values (its bins'{}{}; data, norm and MC statistics "
        "of all bins), tensor {:.1f} MiB, peak memory {:.1f} MiB",
        ranges[0].second, held, in_file, sources, masked,
        mib(static_cast<double>(detail::tensor_bytes(input))),
        mib(static_cast<double>(detail::peak_rss_bytes())));
  } else {
    log().info("rank 0: the whole input, tensor {:.1f} MiB, peak memory {:.1f} MiB",
               mib(static_cast<double>(detail::tensor_bytes(input))),
               mib(static_cast<double>(detail::peak_rss_bytes())));
  }
  for (int r = 1; r < size; ++r)
    log().info("rank {}: bins [{}, {}), tensor {:.1f} MiB, peak memory {:.1f} MiB", r, ranges[r].first,
               ranges[r].second, mib(acks[r][1]), mib(acks[r][2]));

  auto link = std::make_shared<RankLink>();
  link->nbinsfull = input.nbinsfull;
  link->ranks = size;
  link->shards_per_rank = per_rank;
  std::vector<std::unique_ptr<ShardEvaluator>> shards;
  shards.push_back(std::make_unique<CoordinatorShard>(own, model, ranges));
  for (int j = 1; j < per_rank; ++j) shards.push_back(std::make_unique<LocalShardRef>(own, j));
  for (int r = 1; r < size; ++r)
    for (int j = 0; j < per_rank; ++j) {
      const auto& [a, b] = pieces[r * per_rank + j];
      shards.push_back(std::make_unique<detail::RemoteShard>(link, r, j, a, b));
    }
  auto linalg = own->dense_linalg;
  auto fitter = std::make_unique<RankFitter>(std::move(model), std::move(shards), link, std::move(own));
  fitter->set_postfit_threads(threads);
  // GPU shards: the minimizers' Cholesky factorisations on rank 0's first GPU, as make_fitter does.
  if (linalg) fitter->set_dense_linalg(std::move(linalg));
  return fitter;
}

void release_ranks(int exit_code) {
  if (detail::released()) return;
  detail::Request release{detail::Op::release, exit_code, 0, 0, {}};
  detail::broadcast(release);
  detail::released() = true;
  // Every rank answers with its peak resident memory over the whole run (VmHWM), its tensor's bytes
  // (docs/mpi.md "Memory per rank") and its seconds answering requests ("Measurements"); logged after
  // a successful run.
  auto answers = detail::gather({});
  answers[0] = {static_cast<double>(detail::peak_rss_bytes()),
                static_cast<double>(coordinator_tensor_bytes())};
  if (exit_code != 0) return;
  for (size_t r = 0; r < answers.size(); ++r) {
    if (answers[r].size() < 2) continue;
    const std::string busy =
        answers[r].size() > 2 ? fmt::format(", {:.3f} s answering requests", answers[r][2]) : "";
    log().info("rank {}: peak memory {:.1f} MiB over the run, tensor {:.1f} MiB{}", r, mib(answers[r][0]),
               mib(answers[r][1]), busy);
  }
}

}  // namespace rabbit::mpi
