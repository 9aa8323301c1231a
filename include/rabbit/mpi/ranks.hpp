#pragma once
// A fit whose observed bins are sharded over MPI ranks (docs/mpi.md). Rank 0 is the coordinator: it
// runs the whole rabbit_fit sequence (minimizer, postfit, output) on a RankFitter, whose shards are
// its own bin range and one proxy per other rank. Every other rank is a shard server: it reads only
// its contiguous bin range from the file, builds the same model over those bins and answers the
// coordinator's evaluations until it is released. No public header includes mpi.h.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "rabbit/fit/fitter.hpp"
#include "rabbit/fit/make_fitter.hpp"
#include "rabbit/fit/shard_pool.hpp"
#include "rabbit/io/fit_input_data.hpp"
#include "rabbit/model/model.hpp"
#include "rabbit/model/shard_evaluator.hpp"

namespace rabbit::mpi {

/// MPI_Init on construction, MPI_Finalize on destruction (one per process).
class Session {
 public:
  Session(int* argc, char*** argv);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  int rank() const { return rank_; }
  int size() const { return size_; }
  /// Ranks of this job on this node (MPI_COMM_TYPE_SHARED): the node's cores are split among them.
  int ranks_on_node() const { return ranks_on_node_; }
  /// The ranks of this node that see the same GPUs (the same CUDA_VISIBLE_DEVICES, as slurm sets it per
  /// task): their count and this rank's number among them, in rank order (docs/mpi.md "GPUs per rank").
  int gpu_peers() const { return gpu_peers_; }
  int gpu_peer() const { return gpu_peer_; }

 private:
  int rank_ = 0, size_ = 1, ranks_on_node_ = 1, gpu_peers_ = 1, gpu_peer_ = 0;
};

/// How a rank places its local shards (docs/mpi.md "Local shards of a rank", "GPUs per rank"): its own
/// --backend and --devices, its OpenMP threads (split among its CPU shards) and its place among the
/// ranks sharing its node's GPUs (Session).
struct LocalDeviceOptions {
  Backend backend = Backend::automatic;
  std::vector<int> devices;
  int threads = 1;
  int gpu_peer = 0, gpu_peers = 1;
};

/// Ends every rank of the job (MPI_Abort) with `exit_code`: for a rank that cannot report to rank 0
/// any more; the caller prints its one line first.
[[noreturn]] void abort_ranks(int exit_code);

/// Rank 0: the fitter of the run. Cuts the observed bins into `shards_per_rank` contiguous pieces per
/// rank (partition_bins over ranks · shards_per_rank, the cut of --nDevices ranks·shards_per_rank; rank r
/// holds pieces [r·shards_per_rank, (r+1)·shards_per_rank)), sends every rank its pieces and thread
/// count, builds its own local shards over the pieces of rank 0 and waits until every rank has read its
/// range and built its shards (logging each rank's bins and memory). A rank that failed ends the call
/// with an Error "rank K: ..." carrying that rank's exit code. `devices.threads`: OpenMP threads per rank.
std::unique_ptr<Fitter> make_rank_fitter(std::shared_ptr<Model> model, const LocalDeviceOptions& devices,
                                         int shards_per_rank = 1);

/// Rank 0: the run's input (docs/mpi.md "Memory per rank"). Everything but the logk of the observed
/// bins the other ranks hold: the names, data, norm and MC statistics of all bins (the output and the
/// toys need them), the logk of rank 0's range [0, b1) of the partition make_rank_fitter will cut and
/// of the masked bins (their yields are computed on rank 0); with hbetavariations, the logk of the
/// bins [0, max(b1, s)), s one past the last source bin (the masked yields follow their β, logged).
/// The whole input (logged with the reason) with `whole_input` (the saturated projection tests fit a
/// model built from the whole tensor).
/// `shards_per_rank`: rank 0's range is the first `shards_per_rank` pieces of the partition over
/// ranks · shards_per_rank.
FitInputData read_coordinator_input(const std::string& filename, int ranks, bool whole_input,
                                    int shards_per_rank = 1);

/// Rank 0: releases the shard servers (they return `exit_code` from serve_shard_ranges). Called once,
/// at the end of the run, also after an error; a no-op when no rank is waiting any more. Every rank
/// answers with its peak memory over the run, logged per rank when `exit_code` is 0.
void release_ranks(int exit_code);

/// What a shard server was told to hold.
struct Assignment {
  bool released = false;               // the coordinator ended the run before building its fitter
  int exit_code = 0;                   // with released: the code to exit with
  int64_t bin_begin = 0, bin_end = 0;  // the rank's range: the union of its pieces
  std::vector<std::pair<int64_t, int64_t>> pieces;  // its local shards' bins, of the whole input, in order
  int threads = 1;
};

/// Ranks > 0: waits for this rank's bin range (or the coordinator's release).
Assignment await_assignment();

/// What a rank holds of its pieces (docs/mpi.md "Local shards of a rank"): one shard per piece, run
/// concurrently by `pool`, and the yield model that answers for all the rank's bins.
struct LocalShards {
  std::vector<std::unique_ptr<ShardEvaluator>> shards;
  /// A CPU shard over all the rank's bins, for the yields, where shards[0] cannot give them (several
  /// shards, each over part of the rank's bins, or a GPU shard); null where shards[0] serves.
  std::unique_ptr<ShardEvaluator> yield_shard;
  std::unique_ptr<ShardPool> pool;
  /// The dense linear algebra of the shards' kind on shard 0's device (cuSOLVER for GPU shards); null: host.
  std::shared_ptr<const DenseLinalg> dense_linalg;
  ShardEvaluator& yields_shard() const { return yield_shard ? *yield_shard : *shards.front(); }
};

/// Builds a rank's local shards over `pieces` (the model's own bin numbering) with the shard kinds of
/// make_fitter (shard_registry.hpp): CPU shards with threads / pieces threads each, or GPU shards
/// (`--backend cuda` or `--devices`) on the GPUs rank_gpu_positions chooses. In a build without CUDA
/// the same one-line error as make_fitter (refuse_cuda_without_build).
LocalShards make_local_shards(std::shared_ptr<const Model> model,
                              const std::vector<std::pair<int64_t, int64_t>>& pieces,
                              const LocalDeviceOptions& devices);

/// Ranks > 0: what a shard server holds: its model over its bins only and its local shards.
struct LocalShard {
  std::shared_ptr<Model> model;
  LocalShards local;
};

/// Ranks > 0: tells the coordinator whether this rank could build its shard (after await_assignment;
/// `error` empty: ready), then answers its requests until released; returns the exit code the
/// coordinator sends. `build` reads the range and builds the shard; its exceptions are reported to
/// rank 0 (rank 0 prints the one error line), not printed here.
int serve_shard_range(const Assignment& assignment,
                      const std::function<LocalShard(const Assignment&)>& build);

/// Ranks > 0: reads the assigned bins of `filename` (a ranged read, docs/input-reader.md "Ranged reads"),
/// builds the model with `options` over them and its local shards over the assigned pieces.
LocalShard read_shard_range(const std::string& filename, const ModelOptions& options,
                            const Assignment& assignment, const LocalDeviceOptions& devices);

/// A ranged read (read_fit_input with FitInputReadOptions::bins) as an input of its own: observed
/// bins [0, bin_end − bin_begin), no masked bins, no channels (the model of a shard server needs
/// none: bin-dependent param models are refused across ranks), no beta variations (they move only
/// masked-channel yields, which the NLL of observed bins never reads) and no data covariance
/// (covariance fits are refused across ranks). Every per-bin number is the file's, so a CPU shard
/// over it computes what the shard [bin_begin, bin_end) of the whole input computes.
FitInputData standalone_range(FitInputData ranged);

}  // namespace rabbit::mpi
