// The coordinator's side (docs/mpi.md "One evaluation"): RankFitter and make_rank_fitter.
#include <fmt/format.h>
#include <fmt/ranges.h>

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

// Rank 0's own CPU shard, whose yield model is the ranks' (docs/mpi.md "Postfit yields from the owning
// ranks"): its own model covers rank 0's bins and the masked channels, the servers the rest.
class CoordinatorShard : public ShardEvaluator {
 public:
  CoordinatorShard(std::unique_ptr<ShardEvaluator> inner, const FitInputData& input,
                   std::vector<std::pair<int64_t, int64_t>> ranges)
      : inner_(std::move(inner)) {
    YieldModel* own = inner_->yield_model();
    if (!own) throw Error("rank 0's CPU shard offers no yield model");
    yields_ = std::make_unique<detail::RankYieldModel>(*own, std::move(ranges), input.nbins, input.nbinsfull,
                                                       input.nproc);
  }
  YieldModel* yield_model() override { return yields_.get(); }
  int64_t bin_begin() const override { return inner_->bin_begin(); }
  int64_t bin_end() const override { return inner_->bin_end(); }
  std::string device() const override { return "rank0:" + inner_->device(); }
  void set_observed(const Eigen::VectorXd& nobs, const Eigen::VectorXd& varnobs) override {
    inner_->set_observed(nobs, varnobs);
  }
  double value(const Eigen::VectorXd& xi) override { return inner_->value(xi); }
  double value_grad(const Eigen::VectorXd& xi, Eigen::VectorXd& grad) override {
    return inner_->value_grad(xi, grad);
  }
  double value_grad_hvp(const Eigen::VectorXd& xi, const Eigen::MatrixXd& V, Eigen::VectorXd& grad,
                        Eigen::MatrixXd& HV) override {
    return inner_->value_grad_hvp(xi, V, grad, HV);
  }
  double value_grad_hess(const Eigen::VectorXd& xi, Eigen::VectorXd& grad, Eigen::MatrixXd& hess,
                         bool profile) override {
    return inner_->value_grad_hess(xi, grad, hess, profile);
  }
  Eigen::VectorXd profiled_beta(const Eigen::VectorXd& xi) override { return inner_->profiled_beta(xi); }
  bool accepts_beta_centres() const override { return inner_->accepts_beta_centres(); }
  void set_beta_centres(const Eigen::VectorXd& beta0) override { inner_->set_beta_centres(beta0); }

 private:
  std::unique_ptr<ShardEvaluator> inner_;
  std::unique_ptr<detail::RankYieldModel> yields_;
};

// Shard 0 is rank 0's own; shard r > 0 the proxy of rank r. One dispatch: record the request on the
// proxies, broadcast it, evaluate shard 0 while the other ranks evaluate theirs, gather the replies
// in rank order, deliver them. Fitter sums the partials in shard order (docs/sharding-and-gpu.md
// "MultiDeviceFitter"), so the result is that of --nDevices N with the same partition.
class RankFitter : public Fitter {
 public:
  RankFitter(std::shared_ptr<Model> model, std::vector<std::unique_ptr<ShardEvaluator>> shards,
             std::shared_ptr<RankLink> link)
      : Fitter(std::move(model), std::move(shards)), link_(std::move(link)) {
    link_->phase = RankLink::Phase::idle;
  }
  // Where rank 0's time went (docs/mpi.md "Measurements"): its own shard, and the broadcast plus the
  // gather, which waits for the slowest rank (the exchange and the imbalance together).
  ~RankFitter() override {
    log().info(
        "MPI: {} evaluations over {} ranks; rank 0: {:.3f} s in its shard, {:.3f} s sending requests and "
        "waiting for replies",
        dispatches_, shards().size(), local_seconds_, exchange_seconds_);
  }

 protected:
  void for_each_shard(const std::function<void(size_t)>& fn) override {
    const size_t n = shards().size();
    if (detail::released()) throw Error("the MPI ranks were already released; no evaluation can follow");
    link_->request.reset();
    link_->phase = RankLink::Phase::recording;
    try {
      for (size_t i = 1; i < n; ++i) fn(i);
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
      fn(0);
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
      for (size_t i = 1; i < n; ++i) fn(i);
    } catch (...) {
      link_->phase = RankLink::Phase::idle;
      throw;
    }
    link_->phase = RankLink::Phase::idle;
  }

 private:
  using Clock = std::chrono::steady_clock;
  std::shared_ptr<RankLink> link_;
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

std::unique_ptr<Fitter> make_rank_fitter(std::shared_ptr<Model> model, int threads) {
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  refuse_unsupported(*model, size);
  const FitInputData& input = *model->input;
  const auto ranges = partition_bins(input, size);
  // read_coordinator_input cut the same partition (its sparse costs read the complete rowptr).
  if (input.logk_end >= 0 && input.logk_end != ranges[0].second)
    throw Error(fmt::format("{}: rank 0 holds the logk of bins [0, {}), its range is [0, {})", input.filename,
                            input.logk_end, ranges[0].second));

  detail::Request assign{detail::Op::assign, 0, 0, 0, {static_cast<double>(threads)}};
  for (const auto& [a, b] : ranges) {
    assign.payload.push_back(static_cast<double>(a));
    assign.payload.push_back(static_cast<double>(b));
  }
  detail::broadcast(assign);

  // Rank 0's shard is built while the others read their ranges; the acknowledgements are gathered
  // even when it fails, since every rank sends one.
  std::unique_ptr<ShardEvaluator> own;
  std::exception_ptr local_error;
  try {
    ShardSpec spec;
    spec.model = model;
    spec.bin_begin = ranges[0].first;
    spec.bin_end = ranges[0].second;
    spec.threads = threads;
    own = shard_kind("cpu").create(spec);
  } catch (...) {
    local_error = std::current_exception();
  }
  const auto acks = detail::gather({});
  if (local_error) std::rethrow_exception(local_error);
  for (int r = 1; r < size; ++r) detail::check_reply(r, acks[r], 2);

  std::vector<std::string> layout;
  for (int r = 0; r < size; ++r)
    layout.push_back(fmt::format("rank{}:[{},{})", r, ranges[r].first, ranges[r].second));
  log().info("Sharding {} bins over {} MPI ranks ({} thread(s) each): [{}]", input.nbins, size, threads,
             fmt::join(layout, ", "));
  coordinator_tensor_bytes() = detail::tensor_bytes(input);
  if (input.logk_end >= 0) {
    // The file's logk values: dense rows of every bin, or the end of the complete sparse rowptr.
    const int64_t held =
        static_cast<int64_t>(input.sparse ? input.logk_sparse.values.size() : input.logk.size());
    const int64_t in_file =
        input.sparse ? input.logk_sparse.rowptr.back() : input.nbinsfull * input.nproc * input.logk_width();
    const std::string masked =
        input.nbinsmasked > 0 ? fmt::format(" and the {} masked bins'", input.nbinsmasked) : "";
    log().info(
        "rank 0: bins [0, {}), logk {} of the file's {} values (its bins'{}; data, norm and MC statistics of "
        "all bins), tensor {:.1f} MiB, peak memory {:.1f} MiB",
        input.logk_end, held, in_file, masked, mib(static_cast<double>(detail::tensor_bytes(input))),
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
  std::vector<std::unique_ptr<ShardEvaluator>> shards;
  shards.push_back(std::make_unique<CoordinatorShard>(std::move(own), input, ranges));
  for (int r = 1; r < size; ++r)
    shards.push_back(std::make_unique<detail::RemoteShard>(link, r, ranges[r].first, ranges[r].second));
  auto fitter = std::make_unique<RankFitter>(std::move(model), std::move(shards), link);
  fitter->set_postfit_threads(threads);
  return fitter;
}

void release_ranks(int exit_code) {
  if (detail::released()) return;
  detail::Request release{detail::Op::release, exit_code, 0, 0, {}};
  detail::broadcast(release);
  detail::released() = true;
  // Every rank answers with its peak resident memory over the whole run (VmHWM) and its tensor's
  // bytes (docs/mpi.md "Memory per rank"); logged after a successful run.
  auto answers = detail::gather({});
  answers[0] = {static_cast<double>(detail::peak_rss_bytes()),
                static_cast<double>(coordinator_tensor_bytes())};
  if (exit_code != 0) return;
  for (size_t r = 0; r < answers.size(); ++r)
    if (answers[r].size() == 2)
      log().info("rank {}: peak memory {:.1f} MiB over the run, tensor {:.1f} MiB", r, mib(answers[r][0]),
                 mib(answers[r][1]));
}

}  // namespace rabbit::mpi
