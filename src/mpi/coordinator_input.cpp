// Rank 0's input (docs/mpi.md "Memory per rank"): the logk of its own bins and of the masked bins
// (whose yields rank 0 computes) only, or, where rank 0 must compute yields from every bin's tensor,
// the whole input.
#include <fmt/format.h>

#include <string>

#include "rabbit/core/logging.hpp"
#include "rabbit/fit/make_fitter.hpp"
#include "rabbit/mpi/ranks.hpp"

namespace rabbit::mpi {

FitInputData read_coordinator_input(const std::string& filename, int ranks, bool whole_input) {
  int64_t own_end = 0;
  {
    // Everything but the observed bins' logk: enough for the partition (the sparse costs read the CSR
    // rowptr) and for deciding whether rank 0 can do without the other ranks' logk.
    const FitInputData outline = read_fit_input(filename, FitInputReadOptions{.logk_bins = 0});
    std::string why;
    if (whole_input)
      why = "--computeSaturatedProjectionTests fits a model built from every bin's tensor";
    else if (outline.betavariations)
      why = "hbetavariations make the masked bins' yields follow the β of the observed bins";
    if (!why.empty()) {
      log().info("rank 0 reads the whole input: {}", why);
      return read_fit_input(filename);
    }
    own_end = partition_bins(outline, ranks).front().second;
  }
  return read_fit_input(filename, FitInputReadOptions{.logk_bins = own_end});
}

}  // namespace rabbit::mpi
