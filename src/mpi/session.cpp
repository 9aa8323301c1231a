#include <fmt/format.h>

#include <cstdlib>

#include "protocol.hpp"
#include "rabbit/core/error.hpp"
#include "rabbit/mpi/ranks.hpp"

namespace rabbit::mpi {

Session::Session(int* argc, char*** argv) {
  // FUNNELED: only the main thread calls MPI; the shards' OpenMP threads never do.
  int provided = 0;
  if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
    throw ResourceError("MPI_Init_thread failed: the launcher's environment is not usable");
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node);
  MPI_Comm_size(node, &ranks_on_node_);
  MPI_Comm_free(&node);
}

Session::~Session() {
  MPI_Finalize();
}

void abort_ranks(int exit_code) {
  MPI_Abort(MPI_COMM_WORLD, exit_code == 0 ? 1 : exit_code);
  std::abort();  // MPI_Abort does not return; should it, no rank may go on
}

}  // namespace rabbit::mpi
