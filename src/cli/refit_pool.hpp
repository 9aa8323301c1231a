#pragma once
// Parallel refits (docs/architecture.md "Parallel refits"): the independent constrained fits of the refit
// impacts (--asymImpacts, --nonProfiledImpacts, --globalAsymImpacts) run R at a time, each worker with its
// own replica of the fitter (rabbit/fit/fitter_replica.hpp: its own constraint centres, shards and point
// cache) and its own FitSession, the thread budget divided among the workers. A task writes its result by
// its index, and every refit is a function of its index alone (its start, centres and floating set; value,
// gradient and HVP do not depend on the thread count), so the results equal those of the sequential order.
#include <cstddef>
#include <functional>
#include <string>

#include "fit_context.hpp"
#include "fit_session.hpp"

namespace rabbit::cli {

/// What one task sees: the context and session of its worker. Its model's constraint centres are the
/// worker's own (the run's own model when the refits run one after another); a task that changes them
/// restores them before it returns.
struct RefitWorker {
  FitContext& ctx;
  FitSession& session;
};

/// How many refits run at once and how many CPU threads each worker's fitter gets.
struct RefitPlan {
  int workers = 1;
  int threads_per_worker = 0;  // 0 with one worker: the run's own fitter and its threads
  std::string why;             // for the log: what decided the count
};

/// The plan for `tasks` refits of this run (docs/architecture.md "Parallel refits"): --refitWorkers when
/// set; else one worker per thread of the budget (--nThreads, or the CPUs the process may use), at most one
/// per task and as many as the memory headroom holds replicas; one (the run's own fitter) when the fitter
/// cannot be replicated (GPU shards, the MPI coordinator).
RefitPlan plan_refits(const FitContext& ctx, size_t tasks);

/// Runs task(worker, i) for i = 0 … n−1 as planned, logging "<what>: k/N refits, elapsed, ETA" as they
/// complete (info; each refit at debug). Rethrows the exception of the lowest failed index after every
/// worker stopped. The run's own context and session are the only worker when the plan has one.
void run_refits(FitContext& ctx, FitSession& session, const std::string& what, size_t n,
                const std::function<void(RefitWorker&, size_t)>& task);

}  // namespace rabbit::cli
