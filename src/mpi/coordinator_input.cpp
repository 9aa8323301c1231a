// Rank 0's input (docs/mpi.md "Memory per rank"): the logk of its own bins and of the masked bins
// (whose yields rank 0 computes) only, extended to the observed bins whose β moves masked yields through
// hbetavariations, or, where rank 0 must build a model from every bin's tensor, the whole input.
#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "rabbit/core/logging.hpp"
#include "rabbit/fit/make_fitter.hpp"
#include "rabbit/mpi/ranks.hpp"

namespace rabbit::mpi {
namespace {

// One past the last observed bin with a non-zero hbetavariations column: the masked bins' yields follow
// the profiled β of these source bins (docs/likelihood.md "Beta variations"), which rank 0's CPU shard
// computes from their logk, as shard 0 of --nDevices N does; 0 without hbetavariations.
int64_t beta_variation_source_end(const FitInputData& in) {
  if (!in.betavariations) return 0;
  const std::vector<double>& bv = *in.betavariations;  // [nbinsfull, nbins, nproc]
  int64_t end = 0;
  for (int64_t b = 0; b < in.nbinsfull; ++b)
    for (int64_t j = in.nbins - 1; j >= end; --j)
      for (int64_t p = 0; p < in.nproc; ++p)
        if (bv[(b * in.nbins + j) * in.nproc + p] != 0.0) {
          end = j + 1;
          break;
        }
  return end;
}

}  // namespace

FitInputData read_coordinator_input(const std::string& filename, int ranks, bool whole_input,
                                    int shards_per_rank) {
  int64_t logk_end = 0;
  {
    // Everything but the observed bins' logk: enough for the partition (the sparse costs read the CSR
    // rowptr) and for deciding which observed bins' logk rank 0 needs.
    const FitInputData outline = read_fit_input(filename, FitInputReadOptions{.logk_bins = 0});
    if (whole_input) {
      // The saturated models are built on rank 0 from every bin's tensor (docs/mpi.md "Memory per rank").
      log().info(
          "rank 0 reads the whole input: --computeSaturatedProjectionTests fits a model built from "
          "every bin's tensor");
      return read_fit_input(filename);
    }
    // Rank 0's pieces: the first shards_per_rank of the partition make_rank_fitter cuts.
    const int64_t own_end = partition_bins(outline, ranks * shards_per_rank)[shards_per_rank - 1].second;
    const int64_t source_end = beta_variation_source_end(outline);
    logk_end = std::max(own_end, source_end);
    if (source_end > own_end)
      log().info(
          "rank 0 reads the logk of bins [0, {}) beyond its range [0, {}): the masked bins' yields, "
          "which it computes, follow the β of hbetavariations source bins up to bin {}",
          logk_end, own_end, source_end - 1);
  }
  return read_fit_input(filename, FitInputReadOptions{.logk_bins = logk_end});
}

}  // namespace rabbit::mpi
