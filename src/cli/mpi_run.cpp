#include "mpi_run.hpp"

#include <sched.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <thread>

#include "fit_context.hpp"
#include "rabbit/cli/options.hpp"
#include "rabbit/core/error.hpp"
#include "rabbit/core/logging.hpp"
#include "rabbit/fit/make_fitter.hpp"  // parse_backend
#if RABBIT_MPI_BUILT
#include "rabbit/mpi/ranks.hpp"
#endif

namespace rabbit::cli {

bool launched_by_mpi_launcher() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMI_RANK", "PMIX_RANK"})
    if (std::getenv(name)) return true;
  return false;
}

#if !RABBIT_MPI_BUILT

namespace {

// The job's size as the launcher announces it; 0 when it does not say.
int launcher_size() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"})
    if (const char* v = std::getenv(name)) return std::atoi(v);
  return 0;
}

}  // namespace

// Without MPI every rank would run the whole fit and write the same result file.
int ranks_main(const RanksProgram& program, int argc, const char* const* argv) {
  const int size = launcher_size();
  if (size <= 1) return program.process_main(argc, argv);
  const char* rank = std::getenv("OMPI_COMM_WORLD_RANK");
  if (!rank) rank = std::getenv("PMI_RANK");
  if (!rank || std::string(rank) == "0")
    print_error_line(program.name, "started by an MPI launcher with " + std::to_string(size) +
                                       " ranks, but this build has no MPI (configure with "
                                       "-DRABBIT_MPI=ON; docs/mpi.md)");
  return static_cast<int>(ExitCode::option);
}

#else

namespace {

// A rank's own --backend and --devices, with its place among the ranks sharing its node's GPUs.
mpi::LocalDeviceOptions local_device_options(const FitOptions& o, const mpi::Session& session,
                                             int threads = 1) {
  mpi::LocalDeviceOptions d;
  d.backend = parse_backend(o.backend);
  for (int64_t i : o.devices) d.devices.push_back(static_cast<int>(i));
  d.threads = threads;
  d.gpu_peer = session.gpu_peer();
  d.gpu_peers = session.gpu_peers();
  return d;
}

}  // namespace

int ranks_main(const RanksProgram& program, int argc, const char* const* argv) {
  int mpi_argc = argc;
  char** mpi_argv = const_cast<char**>(argv);
  std::unique_ptr<mpi::Session> started;
  try {
    started = std::make_unique<mpi::Session>(&mpi_argc, &mpi_argv);
  } catch (const Error& e) {
    print_error_line(program.name, e.what());
    return static_cast<int>(e.code());
  }
  const mpi::Session& session = *started;
  if (session.size() == 1) return program.process_main(argc, argv);
  // The node's cores are split among its ranks, as --nDevices splits them among shards; a rank that
  // the launcher bound to fewer cores (Open MPI binds to one core by default) uses those.
  int threads = std::max(1, static_cast<int>(std::thread::hardware_concurrency()) / session.ranks_on_node());
  cpu_set_t bound;
  if (sched_getaffinity(0, sizeof(bound), &bound) == 0)
    threads = std::min(threads, std::max(1, CPU_COUNT(&bound)));

  if (session.rank() == 0) {
    // The run's own fitter spans the ranks; a later fitter over another input (the saturated
    // projection tests' models) is built by make_fitter on rank 0 alone.
    const FitInputData* run_input = nullptr;
    run_input_reader() = [&](const FitOptions& o) {
      return mpi::read_coordinator_input(o.filename, session.size(), o.compute_saturated_projection_tests,
                                         static_cast<int>(std::max<int64_t>(1, o.n_devices)));
    };
    run_fitter_factory() = [&](FitContext& ctx) -> std::unique_ptr<Fitter> {
      if (run_input && run_input != ctx.input.get()) return nullptr;
      if (run_input) throw Error("the MPI ranks' fitter can be built once per run");
      run_input = ctx.input.get();
      auto fitter = mpi::make_rank_fitter(ctx.model, local_device_options(ctx.options, session, threads),
                                          static_cast<int>(ctx.options.n_devices));
      fitter->set_hvp_batch(ctx.options.hvp_batch);  // as make_run_fitter does for make_fitter's
      return fitter;
    };
    const int code = program.process_main(argc, argv);
    run_fitter_factory() = nullptr;  // it refers to this frame
    run_input_reader() = nullptr;
    mpi::release_ranks(code);
    return code;
  }

  // Rank 0 alone logs and writes; a failure here is reported to rank 0, which prints it. The
  // launcher passes SIGTERM/SIGUSR1 on to every rank: rank 0 acts on them (snapshot, removing an
  // unfinished result) and then releases the others, which must outlive it until then.
  log().set_level(spdlog::level::off);
  std::signal(SIGTERM, SIG_IGN);
  std::signal(SIGUSR1, SIG_IGN);
  try {
    const mpi::Assignment assignment = mpi::await_assignment();
    if (assignment.released) return assignment.exit_code;
    return mpi::serve_shard_range(assignment, [&](const mpi::Assignment& a) {
      const FitOptions o = program.fit_options(argc, argv);
      return mpi::read_shard_range(o.filename, run_model_options(o), a, local_device_options(o, session));
    });
  } catch (const std::exception& e) {
    // Only what breaks the exchange itself lands here: rank 0 cannot be told, so this rank says it.
    print_error_line(program.name, "rank " + std::to_string(session.rank()) + ": " + e.what());
    mpi::abort_ranks(static_cast<int>(ExitCode::failure));
  }
}

#endif

int rabbit_fit_ranks_main(int argc, const char* const* argv) {
  return ranks_main({"rabbit_fit", rabbit_fit_process_main, parse_fit_options}, argc, argv);
}

}  // namespace rabbit::cli
