#pragma once
// rabbit_fit and rabbit_limit started by an MPI launcher (mpirun, srun): rank 0 runs the program on a
// RankFitter, the other ranks serve their bin ranges (docs/mpi.md). A build without MPI refuses such
// a start.
#include "rabbit/cli/options.hpp"

namespace rabbit::cli {

/// Whether an MPI launcher started this process (its environment: Open MPI's OMPI_COMM_WORLD_SIZE,
/// PMI's PMI_SIZE/PMI_RANK, PMIx's PMIX_RANK).
bool launched_by_mpi_launcher();

/// A program whose fits span the ranks: its name (the error lines'), its main in one process (parse,
/// run, one error line and the exit code of its kind), and the fit options of its command line, from
/// which a shard server takes the file and the model (docs/mpi.md "Shard servers").
struct RanksProgram {
  const char* name;
  int (*process_main)(int argc, const char* const* argv);
  FitOptions (*fit_options)(int argc, const char* const* argv);
};

/// A program's main under a launcher: one rank runs program.process_main as is; with more, rank 0
/// does on a RankFitter and ranks > 0 serve their bins. The exit code is the run's on every rank.
int ranks_main(const RanksProgram& program, int argc, const char* const* argv);

/// ranks_main for rabbit_fit.
int rabbit_fit_ranks_main(int argc, const char* const* argv);

/// rabbit_fit's main in one process: parse, run, one error line and the exit code of its kind.
int rabbit_fit_process_main(int argc, const char* const* argv);

}  // namespace rabbit::cli
