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

 private:
  int rank_ = 0, size_ = 1, ranks_on_node_ = 1;
};

/// Ends every rank of the job (MPI_Abort) with `exit_code`: for a rank that cannot report to rank 0
/// any more; the caller prints its one line first.
[[noreturn]] void abort_ranks(int exit_code);

/// Rank 0: the fitter of the run. Cuts the observed bins into one contiguous range per rank
/// (partition_bins, the cost-balanced cut of --nDevices N), sends every rank its range and thread
/// count, builds its own CPU shard over range 0 and waits until every rank has read its range and
/// built its shard (logging each rank's bins and memory). A rank that failed ends the call with an
/// Error "rank K: ..." carrying that rank's exit code. `threads`: OpenMP threads per rank.
std::unique_ptr<Fitter> make_rank_fitter(std::shared_ptr<Model> model, int threads);

/// Rank 0: the run's input (docs/mpi.md "Memory per rank"). Everything but the logk of the observed
/// bins the other ranks hold: the names, data, norm and MC statistics of all bins (the output and the
/// toys need them), the logk of rank 0's range [0, b1) of the partition make_rank_fitter will cut.
/// The whole input (logged with the reason) when the input has masked channels or hbetavariations
/// (their yields are computed on rank 0 from every bin's tensor) or `whole_input` (the saturated
/// projection tests fit a model built from the whole tensor).
FitInputData read_coordinator_input(const std::string& filename, int ranks, bool whole_input);

/// Rank 0: releases the shard servers (they return `exit_code` from serve_shard_ranges). Called once,
/// at the end of the run, also after an error; a no-op when no rank is waiting any more. Every rank
/// answers with its peak memory over the run, logged per rank when `exit_code` is 0.
void release_ranks(int exit_code);

/// What a shard server was told to hold.
struct Assignment {
  bool released = false;  // the coordinator ended the run before building its fitter
  int exit_code = 0;      // with released: the code to exit with
  int64_t bin_begin = 0, bin_end = 0;
  int threads = 1;
};

/// Ranks > 0: waits for this rank's bin range (or the coordinator's release).
Assignment await_assignment();

/// Ranks > 0: what a shard server holds: its model over its bins only and the CPU shard over them.
struct LocalShard {
  std::shared_ptr<Model> model;
  std::unique_ptr<ShardEvaluator> shard;
};

/// Ranks > 0: tells the coordinator whether this rank could build its shard (after await_assignment;
/// `error` empty: ready), then answers its requests until released; returns the exit code the
/// coordinator sends. `build` reads the range and builds the shard; its exceptions are reported to
/// rank 0 (rank 0 prints the one error line), not printed here.
int serve_shard_range(const Assignment& assignment,
                      const std::function<LocalShard(const Assignment&)>& build);

/// Ranks > 0: reads the assigned bins of `filename` (a ranged read, docs/input-reader.md "Ranged reads"),
/// builds the model with `options` over them and a CPU shard with the assigned threads.
LocalShard read_shard_range(const std::string& filename, const ModelOptions& options,
                            const Assignment& assignment);

/// A ranged read (read_fit_input with FitInputReadOptions::bins) as an input of its own: observed
/// bins [0, bin_end − bin_begin), no masked bins, no channels (the model of a shard server needs
/// none: bin-dependent param models are refused across ranks), no beta variations (they move only
/// masked-channel yields, which the NLL of observed bins never reads) and no data covariance
/// (covariance fits are refused across ranks). Every per-bin number is the file's, so a CPU shard
/// over it computes what the shard [bin_begin, bin_end) of the whole input computes.
FitInputData standalone_range(FitInputData ranged);

}  // namespace rabbit::mpi
