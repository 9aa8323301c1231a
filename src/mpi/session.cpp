#include <fmt/format.h>

#include <cstdint>
#include <cstdlib>
#include <string>

#include "protocol.hpp"
#include "rabbit/core/error.hpp"
#include "rabbit/mpi/ranks.hpp"

namespace rabbit::mpi {

namespace {

// A colour for MPI_Comm_split from CUDA_VISIBLE_DEVICES (unset and empty differ: unset shows every
// GPU, empty none): FNV-1a of the text, non-negative as MPI requires.
int visible_devices_colour() {
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  uint32_t h = 2166136261u;
  const auto mix = [&](const char* text) {
    for (const char* c = text; *c; ++c) h = (h ^ static_cast<unsigned char>(*c)) * 16777619u;
  };
  mix(visible ? "=" : "unset");
  if (visible) mix(visible);
  return static_cast<int>(h & 0x7fffffffu);
}

}  // namespace

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
  // The node's ranks that see the same GPUs: slurm's --gpus-per-task gives each task its own
  // CUDA_VISIBLE_DEVICES, mpirun leaves it to every rank alike (docs/mpi.md "GPUs per rank").
  MPI_Comm peers;
  MPI_Comm_split(node, visible_devices_colour(), rank_, &peers);
  MPI_Comm_size(peers, &gpu_peers_);
  MPI_Comm_rank(peers, &gpu_peer_);
  MPI_Comm_free(&peers);
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
