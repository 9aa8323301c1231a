#include "refit_pool.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "rabbit/core/cpu_budget.hpp"
#include "rabbit/core/logging.hpp"
#include "rabbit/core/memory_limit.hpp"
#include "rabbit/fit/fitter_replica.hpp"

namespace rabbit::cli {
namespace {

// What one more replica allocates (an estimate, docs/architecture.md "Parallel refits"): the shard's entry
// layout and point cache (per yield entry two indices and the cached per-entry terms with up to
// min(npar, hvp_batch) HVP directions) and the minimizer's dense npar × npar matrices (Hessian, factor,
// preconditioner, work copy). The input tensor is shared.
double replica_bytes(const FitContext& ctx) {
  const double entries = static_cast<double>(ctx.input->norm.size());
  const double npar = static_cast<double>(ctx.model->parameters.size());
  const double directions = std::min(npar, static_cast<double>(std::max<int64_t>(1, ctx.options.hvp_batch)));
  return entries * (12.0 + 8.0 * (5.0 + directions)) + 4.0 * 8.0 * npar * npar;
}

// A worker's own copy of the run's state: the options without --snapshotFile (the snapshots are the full
// fits', fit_session.hpp), the context with a replica of the fitter, and a session on it.
struct Replica {
  FitOptions options;
  FitContext ctx;
  std::unique_ptr<FitSession> session;

  Replica(const FitContext& run, int threads) : options(run.options), ctx(options) {
    options.snapshot_file.reset();
    ctx.input = run.input;
    ctx.fitter = replicate_on_cpu(*run.fitter, threads);
    ctx.model = ctx.fitter->model_ptr();
    ctx.layout = run.layout;
    ctx.reported_names = run.reported_names;
    ctx.trad_groups = run.trad_groups;
    ctx.glob_groups = run.glob_groups;
    ctx.bb_on = run.bb_on;
    ctx.bb_full = run.bb_full;
    session = std::make_unique<FitSession>(ctx);
  }
};

// "<what>: k/N refits, elapsed, ETA" at info about every tenth of the way and at the end; each refit at
// debug. Called by the workers as they finish a task.
class Progress {
 public:
  Progress(std::string what, size_t n) : what_(std::move(what)), n_(n), start_(Clock::now()) {}

  void done(size_t index, double seconds) {
    std::lock_guard<std::mutex> lock(mutex_);
    ++finished_;
    log().debug("{}: refit {} took {:.3f}s", what_, index + 1, seconds);
    const size_t step = finished_ * 10 / n_;
    if (step == last_step_ && finished_ != n_) return;
    last_step_ = step;
    const double elapsed = seconds_since(start_);
    const double eta = elapsed / static_cast<double>(finished_) * static_cast<double>(n_ - finished_);
    log().info("{}: {}/{} refits, elapsed {:.1f}s, ETA {:.1f}s", what_, finished_, n_, elapsed, eta);
  }

 private:
  std::string what_;
  size_t n_;
  Clock::time_point start_;
  std::mutex mutex_;
  size_t finished_ = 0;
  size_t last_step_ = 0;
};

}  // namespace

RefitPlan plan_refits(const FitContext& ctx, size_t tasks) {
  RefitPlan plan;
  const auto& o = ctx.options;
  if (tasks < 2 && o.refit_workers == 0) {
    plan.why = "one refit";
    return plan;
  }
  if (!replicable_on_cpu(*ctx.fitter)) {
    if (o.refit_workers > 1)
      log().warn("--refitWorkers {}: the fit does not run on CPU shards; the refits run one after another",
                 o.refit_workers);
    plan.why = "the fitter has no CPU replicas (GPU or MPI shards): the refits run on it one after another";
    return plan;
  }
  int threads = static_cast<int>(o.n_threads);
  std::string budget = "--nThreads";
  if (threads <= 0) {
    const cpus::Budget b = cpus::detect();
    threads = b.threads;
    budget = b.source;
  }
  if (o.refit_workers > 0) {
    plan.workers =
        static_cast<int>(std::min<size_t>(static_cast<size_t>(o.refit_workers), std::max<size_t>(tasks, 1)));
    plan.why = "--refitWorkers";
  } else {
    plan.workers =
        static_cast<int>(std::min<size_t>(static_cast<size_t>(threads), std::max<size_t>(tasks, 1)));
    plan.why = fmt::format("{} thread(s) from {}, {} refits", threads, budget, tasks);
    const memory::Headroom avail = memory::available();
    const double need = replica_bytes(ctx);
    if (!avail.source.empty() && need > 0.0) {
      const int fit = static_cast<int>(std::max(1.0, 0.5 * avail.bytes / need));
      if (fit < plan.workers) {
        plan.workers = fit;
        plan.why += fmt::format(", {} replicas of {} each in half of {} ({})", fit, memory::gib(need),
                                memory::gib(avail.bytes), avail.source);
      }
    }
  }
  plan.threads_per_worker = plan.workers > 1 ? std::max(1, threads / plan.workers) : 0;
  return plan;
}

void run_refits(FitContext& ctx, FitSession& session, const std::string& what, size_t n,
                const std::function<void(RefitWorker&, size_t)>& task) {
  if (n == 0) return;
  const RefitPlan plan = plan_refits(ctx, n);
  Progress progress(what, n);
  if (plan.workers <= 1) {
    log().debug("{}: {} refits one after another ({})", what, n, plan.why);
    RefitWorker worker{ctx, session};
    for (size_t i = 0; i < n; ++i) {
      const auto clock = Clock::now();
      task(worker, i);
      progress.done(i, seconds_since(clock));
    }
    return;
  }
  log().info("{}: {} refits, {} at a time with {} thread(s) each ({})", what, n, plan.workers,
             plan.threads_per_worker, plan.why);
  std::atomic<size_t> next{0};
  std::atomic<bool> stop{false};
  std::mutex error_mutex;
  size_t error_index = n;  // the lowest failed index
  std::exception_ptr error;
  auto fail = [&](size_t index) {
    std::lock_guard<std::mutex> lock(error_mutex);
    if (index < error_index) {
      error_index = index;
      error = std::current_exception();
    }
    stop = true;
  };
  auto work = [&]() {
    std::unique_ptr<Replica> replica;
    try {
      replica = std::make_unique<Replica>(ctx, plan.threads_per_worker);
    } catch (...) {
      fail(0);
      return;
    }
    RefitWorker worker{replica->ctx, *replica->session};
    for (size_t i = next++; i < n && !stop; i = next++) {
      const auto clock = Clock::now();
      try {
        task(worker, i);
      } catch (...) {
        fail(i);
        return;
      }
      progress.done(i, seconds_since(clock));
    }
  };
  std::vector<std::thread> threads;
  for (int w = 1; w < plan.workers; ++w) threads.emplace_back(work);
  work();
  for (auto& t : threads) t.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace rabbit::cli
