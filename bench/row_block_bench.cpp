// The gradient's transposed product of a dense bin block, alone (docs/benchmarks.md "Loss and
// gradient"): each thread walks its bins, computes Λ = K·m and w = exp(Λ) as a loss+grad does, then
// adds Kᵀ·w by Eigen's product, by row_block_products.hpp without the prefetch of the next bin's
// block, and with it. Variants and a STREAM-like triad alternate, one pass each per round; the
// medians are reported as GB/s of the logk block streamed and as a share of the triad.
//
//   row_block_bench [nbins=10000] [nproc=10] [width=2000] [threads=2] [rounds=25]
#include <fmt/format.h>
#include <omp.h>

#include <Eigen/Core>
#include <cmath>
#include <cstdlib>
#include <vector>

#include "../src/backend/cpu/row_block_products.hpp"
#include "bench_support.hpp"

namespace {

using namespace rabbit::bench;
namespace rb = rabbit::cpu_detail::row_blocks;
using RowBlock = Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>;

enum class Variant { kEigen, kSegments, kSegmentsPrefetch };

/// One pass over all bins; returns a checksum so that nothing is optimised away.
double pass(const std::vector<double>& K, int64_t nb, int64_t ne, int64_t W, int threads, Variant v) {
  const Eigen::VectorXd m = Eigen::VectorXd::Constant(W, 1e-2);
  double sum = 0.0;
#pragma omp parallel num_threads(threads) reduction(+ : sum)
  {
    const int t = omp_get_thread_num();
    const int64_t lo = nb * t / threads, hi = nb * (t + 1) / threads;
    Eigen::VectorXd y = Eigen::VectorXd::Zero(W), lambda(ne), w(ne);
    for (int64_t b = lo; b < hi; ++b) {
      const double* block = K.data() + b * ne * W;
      const RowBlock Kb(block, ne, W);
      lambda.noalias() = Kb * m;
      w = lambda.array().exp();
      rb::NextBlock next;
      if (v == Variant::kSegmentsPrefetch && b + 1 < hi)
        next = rb::NextBlock(block + ne * W, ne * W * static_cast<int64_t>(sizeof(double)));
      if (v == Variant::kEigen)
        y.noalias() += Kb.transpose() * w;
      else
        rb::rows_transpose_times_add(block, ne, W, w.data(), ne, 1, y.data(), W, next);
    }
    sum += y.sum();
  }
  return sum;
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t nb = argc > 1 ? std::atoll(argv[1]) : 10000;
  const int64_t ne = argc > 2 ? std::atoll(argv[2]) : 10;
  const int64_t W = argc > 3 ? std::atoll(argv[3]) : 2000;
  const int threads = argc > 4 ? std::atoi(argv[4]) : 2;
  const int rounds = argc > 5 ? std::atoi(argv[5]) : 25;
  if (nb < 1 || ne < 1 || W < 1 || threads < 1 || rounds < 1) {
    fmt::print(stderr, "row_block_bench: arguments must be positive: nbins nproc width threads rounds\n");
    return 2;
  }
  std::vector<double> K(static_cast<size_t>(nb * ne * W));
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t i = 0; i < nb * ne * W; ++i) K[i] = 1e-3 * static_cast<double>((i * 7) % 13);
  Triad triad_run(threads);

  const char* names[] = {"Eigen Kᵀ·w", "segments, no prefetch", "segments + prefetch"};
  const Variant variants[] = {Variant::kEigen, Variant::kSegments, Variant::kSegmentsPrefetch};
  std::vector<std::vector<double>> times(4);
  double check = 0.0;
  for (int r = 0; r < rounds; ++r) {
    for (int v = 0; v < 3; ++v) {
      const auto t0 = Clock::now();
      check += pass(K, nb, ne, W, threads, variants[v]);
      times[v].push_back(seconds_since(t0));
    }
    times[3].push_back(triad_run.pass());
  }
  const double triad = Triad::bandwidth(median(times[3]));
  const double bytes = 8.0 * static_cast<double>(nb * ne * W);
  fmt::print("{} bins × {} rows × {} columns, {} threads, {} rounds (checksum {:.6g})\n", nb, ne, W, threads,
             rounds, check);
  for (int v = 0; v < 3; ++v) {
    const double rate = bytes / median(times[v]);
    fmt::print("{:<24} {:6.1f} GB/s  {:5.1f} % of the triad\n", names[v], rate / 1e9, 100.0 * rate / triad);
  }
  fmt::print("{:<24} {:6.1f} GB/s\n", "triad", triad / 1e9);
  return 0;
}
