#pragma once
// PointCache: the per-bin phase-A and profile results of the last uncoupled profiled evaluation,
// so that a sequence of HVPs at one ξ (trust-region inner iterations, batched Hessians) reads the
// tensor only for the directions. Keyed on ξ and on a generation counter that changes with the
// observations and the BB centres.
#include <Eigen/Core>
#include <cstdint>
#include <memory>
#include <vector>

#include "bin_chunks.hpp"

namespace rabbit::cpu_detail {

/// The cached rows of one chunk of bins, indexed from the chunk's first entry and first bin: each
/// chunk's rows are written by the thread that computed the chunk, into rows of its own
/// (bin_chunks.hpp BackedUpChunks).
struct ChunkRows {
  std::vector<double> N, a, c, phi, d, U, M;  // per entry (U: × ncol), M per bin (ncol × ncol)
};

/// The rows of all chunks of the evaluation that filled the cache, grouped by its chunks. Shared
/// (and never changed once filled), so that a thread still inside an evaluation at the cached point
/// keeps reading the rows it started with after the next evaluation has replaced them.
struct CacheRows {
  BinChunks chunks;
  std::vector<ChunkRows> chunk;
};

struct PointCache {
  bool valid = false;
  Eigen::VectorXd xi;
  uint64_t generation = 0;
  int ncol = 0;
  std::shared_ptr<const CacheRows> rows;
  double f = 0.0;
  Eigen::VectorXd y, gpi;  // the accumulated gradient parts (see Accum)
};

}  // namespace rabbit::cpu_detail
