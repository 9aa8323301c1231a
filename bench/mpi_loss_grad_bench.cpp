// Loss+gradient time per call of a fit's tensor on N MPI ranks (docs/mpi.md "Measurements"), the
// evaluation a minimizer repeats: started plainly it times one process (one CPU shard over every
// bin); under `mpiexec -n N` rank 0 times a RankFitter over the N ranks' shards, as rabbit_fit builds
// it (rank 0 reads its bins' logk, the others their ranges), and at the end logs its time in its own
// shard and in the exchange and every rank's peak memory. bench/mpi_scaling.sh runs it.
//
//   [mpiexec -n N] mpi_loss_grad_bench FILE [--iters K]
#include <fmt/format.h>
#include <sched.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>

#include "rabbit/core/error.hpp"
#include "rabbit/core/logging.hpp"
#include "rabbit/fit/make_fitter.hpp"
#include "rabbit/model/model.hpp"
#if RABBIT_MPI_BUILT
#include "rabbit/mpi/ranks.hpp"
#endif

namespace {

using namespace rabbit;

// Seconds per loss+grad over `iters` calls, a new point each (the CPU shard caches its evaluation per
// point), after one warm-up call.
double seconds_per_call(Fitter& fitter, const Eigen::VectorXd& x, int iters) {
  Eigen::VectorXd g, xi = x;
  fitter.value_grad(x, g);
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) {
    xi[xi.size() - 1] = x[x.size() - 1] + 1e-6 * (i + 1);
    fitter.value_grad(xi, g);
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / iters;
}

// The fit's starting point with the systematics moved off zero (every logk column contributes).
Eigen::VectorXd bench_point(const Model& model) {
  Eigen::VectorXd x = model.parameters.x_default;
  const int64_t S = model.input->nsyst;
  for (int64_t s = 0; s < S; ++s) x[x.size() - S + s] = 0.3 * std::sin(static_cast<double>(s));
  return x;
}

void report(int ranks, const std::string& threads, double seconds) {
  fmt::print("{} rank(s), threads {}: {:.3f} ms per loss+grad\n", ranks, threads, seconds * 1e3);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: [mpiexec -n N] mpi_loss_grad_bench FILE [--iters K]\n");
    return 2;
  }
  const std::string file = argv[1];
  const int iters = argc > 3 && std::string(argv[2]) == "--iters" ? std::atoi(argv[3]) : 20;
  set_verbosity(3);  // info: the ranks' layout, rank 0's exchange time and every rank's peak memory
  try {
#if RABBIT_MPI_BUILT
    mpi::Session session(&argc, &argv);
    if (session.size() > 1) {
      // docs/mpi.md "Threads": the node's cores split among its ranks, within the launcher's binding.
      int threads =
          std::max(1, static_cast<int>(std::thread::hardware_concurrency()) / session.ranks_on_node());
      cpu_set_t bound;
      if (sched_getaffinity(0, sizeof(bound), &bound) == 0)
        threads = std::min(threads, std::max(1, CPU_COUNT(&bound)));
      if (session.rank() > 0) {
        log().set_level(spdlog::level::off);
        const mpi::Assignment a = mpi::await_assignment();
        if (a.released) return a.exit_code;
        return mpi::serve_shard_range(a, [&](const mpi::Assignment& assigned) {
          // CPU shards, one per rank; the thread count comes with the assignment
          return mpi::read_shard_range(file, ModelOptions{}, assigned, mpi::LocalDeviceOptions{});
        });
      }
      int code = 0;
      try {
        auto input = std::make_shared<FitInputData>(mpi::read_coordinator_input(file, session.size(), false));
        auto model = build_model(input, ModelOptions{});
        mpi::LocalDeviceOptions devices;
        devices.threads = threads;
        auto fitter = mpi::make_rank_fitter(model, devices);
        report(session.size(), fmt::format("{} per rank", threads),
               seconds_per_call(*fitter, bench_point(*model), iters));
      } catch (const Error& e) {
        print_error_line("mpi_loss_grad_bench", e.what());
        code = static_cast<int>(e.code());
      }
      mpi::release_ranks(code);
      return code;
    }
#endif
    auto model = build_model(std::make_shared<FitInputData>(read_fit_input(file)), ModelOptions{});
    FitterOptions fo;
    fo.backend = Backend::cpu;
    auto fitter = make_fitter(model, fo);
    report(1, "of the CPU budget (rabbit/core/cpu_budget.hpp)",
           seconds_per_call(*fitter, bench_point(*model), iters));
    return 0;
  } catch (const Error& e) {
    print_error_line("mpi_loss_grad_bench", e.what());
    return static_cast<int>(e.code());
  }
}
