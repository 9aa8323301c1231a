#include "mpi_run.hpp"

#include <fmt/format.h>
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
int rabbit_fit_ranks_main(int argc, const char* const* argv) {
  const int size = launcher_size();
  if (size <= 1) return rabbit_fit_process_main(argc, argv);
  const char* rank = std::getenv("OMPI_COMM_WORLD_RANK");
  if (!rank) rank = std::getenv("PMI_RANK");
  if (!rank || std::string(rank) == "0")
    print_error_line("rabbit_fit", "started by an MPI launcher with " + std::to_string(size) +
                                       " ranks, but this build has no MPI (configure with "
                                       "-DRABBIT_MPI=ON; docs/mpi.md)");
  return static_cast<int>(ExitCode::option);
}

#else

namespace {

// What the ranks cannot share, refused in one line before any rank reads its bins.
void refuse_options(const FitOptions& o, const FitInputData& input, int ranks) {
  const std::string under = fmt::format("under mpirun with {} ranks", ranks);
  if (o.n_devices > 1 || !o.devices.empty())
    throw OptionError(fmt::format(
        "--nDevices/--devices {}: every rank holds one CPU shard; drop them (docs/mpi.md)", under));
  if (o.backend == "cuda")
    throw OptionError(
        fmt::format("--backend cuda {}: the ranks run CPU shards; use --backend cpu (docs/mpi.md)", under));
  if (o.diagnostics && o.model.bin_by_bin_stat)
    throw OptionError(fmt::format(
        "--diagnostics with bin-by-bin statistics {}: the β-space EDM needs the full-length β Hessian; add "
        "--noBinByBinStat or run without mpirun (docs/mpi.md)",
        under));
  // The masked channels' BB constants belong to the last shard, a rank that holds no masked bins
  // (docs/mpi.md "Postfit yields from the owning ranks").
  if (o.full_nll && o.model.bin_by_bin_stat && input.nbinsmasked > 0)
    throw OptionError(fmt::format(
        "--fullNll with bin-by-bin statistics and masked channels {}: their BB constants are on no rank; "
        "drop --fullNll or run without mpirun (docs/mpi.md)",
        under));
}

}  // namespace

int rabbit_fit_ranks_main(int argc, const char* const* argv) {
  int mpi_argc = argc;
  char** mpi_argv = const_cast<char**>(argv);
  std::unique_ptr<mpi::Session> started;
  try {
    started = std::make_unique<mpi::Session>(&mpi_argc, &mpi_argv);
  } catch (const Error& e) {
    print_error_line("rabbit_fit", e.what());
    return static_cast<int>(e.code());
  }
  const mpi::Session& session = *started;
  if (session.size() == 1) return rabbit_fit_process_main(argc, argv);
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
      return mpi::read_coordinator_input(o.filename, session.size(), o.compute_saturated_projection_tests);
    };
    run_fitter_factory() = [&](FitContext& ctx) -> std::unique_ptr<Fitter> {
      if (run_input && run_input != ctx.input.get()) return nullptr;
      if (run_input) throw Error("the MPI ranks' fitter can be built once per run");
      refuse_options(ctx.options, *ctx.input, session.size());
      run_input = ctx.input.get();
      return mpi::make_rank_fitter(ctx.model, threads);
    };
    const int code = rabbit_fit_process_main(argc, argv);
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
      const FitOptions o = parse_fit_options(argc, argv);
      return mpi::read_shard_range(o.filename, run_model_options(o), a);
    });
  } catch (const std::exception& e) {
    // Only what breaks the exchange itself lands here: rank 0 cannot be told, so this rank says it.
    print_error_line("rabbit_fit", "rank " + std::to_string(session.rank()) + ": " + e.what());
    mpi::abort_ranks(static_cast<int>(ExitCode::failure));
  }
}

#endif

}  // namespace rabbit::cli
