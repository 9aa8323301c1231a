// The postfit calls of the host YieldModel on the shard's threads: expected yields, the yield Jacobians and
// dβ̂/dξ. Each bin's row depends on that bin alone (its yields, its own β profile), so a long bin range is
// cut into pieces that the shard's threads take from a queue, each piece computed by the one-thread loop
// (the *_rows members) into its own rows: the numbers do not depend on the thread count or the schedule.
// Without this, the postfit histograms ran these passes over the whole tensor on one thread
// (docs/benchmarks.md "Histogram errors"). A coupled shard (covariance fit: one profile of all bins) and a
// range reaching into the masked bins with beta variations (their shifts come from all source bins) keep
// the one-thread loop, as do a bin-dependent param model (each piece would prepare the rates of all bins)
// and ranges under 512 bins.
#include <fmt/format.h>

#include <algorithm>
#include <atomic>

#include "rabbit/backend/cpu/cpu_shard_evaluator.hpp"
#include "rabbit/core/error.hpp"
#include "rabbit/core/worker_pool.hpp"
#include "shard_state.hpp"

namespace rabbit {

using cpu_detail::ShardState;
using Eigen::MatrixXd;
using Eigen::VectorXd;

namespace {

// Bins per piece: enough work per piece (a piece prepares its own point state) and enough pieces to
// balance two to a few dozen threads.
constexpr int64_t kPieceBins = 256;

bool splits(const ShardState& s, int64_t first, int64_t last, int64_t limit) {
  return s.pool && s.threads_ > 1 && !s.coupled && !s.bin_rates_ && 0 <= first && first <= last &&
         last <= limit && last - first >= 2 * kPieceBins && !(s.betavar_ && last > s.nbins_);
}

// piece(b0, b1) for the pieces of [first, last), on the shard's threads.
template <class Piece>
void for_pieces(ShardState& s, int64_t first, int64_t last, Piece&& piece) {
  const int64_t pieces = (last - first + kPieceBins - 1) / kPieceBins;
  std::atomic<int64_t> next{0};
  s.pool->share(s.threads_, [&](int) {
    for (int64_t i = next.fetch_add(1); i < pieces; i = next.fetch_add(1)) {
      const int64_t b0 = first + i * kPieceBins;
      piece(b0, std::min(last, b0 + kPieceBins));
    }
  });
}

// The bin range check of the calls below, before their matrices are sized.
void check_range(const char* call, int64_t first, int64_t last, int64_t bins, const char* which) {
  if (first < 0 || last < first || last > bins)
    throw Error(fmt::format("{}: bin range [{}, {}) outside the {}{} bins", call, first, last, bins, which));
}

}  // namespace

void CpuShardEvaluator::expected_yields(const VectorXd& xi, int64_t first, int64_t last, BetaMode mode,
                                        VectorXd* per_bin, MatrixXd* per_process) {
  ShardState& s = *state_;
  if (!splits(s, first, last, s.nbinsfull_))
    return expected_yields_rows(xi, first, last, mode, per_bin, per_process);
  if (per_bin) per_bin->resize(last - first);
  if (per_process) per_process->resize(last - first, s.nproc_);
  for_pieces(s, first, last, [&](int64_t b0, int64_t b1) {
    VectorXd nu;
    MatrixXd N;
    expected_yields_rows(xi, b0, b1, mode, per_bin ? &nu : nullptr, per_process ? &N : nullptr);
    if (per_bin) per_bin->segment(b0 - first, b1 - b0) = nu;
    if (per_process) per_process->middleRows(b0 - first, b1 - b0) = N;
  });
}

MatrixXd CpuShardEvaluator::yield_jacobian(const VectorXd& xi, int64_t first, int64_t last, BetaMode mode) {
  ShardState& s = *state_;
  check_range("yield_jacobian", first, last, s.nbinsfull_, "");
  MatrixXd J(last - first, s.nx_);
  if (!splits(s, first, last, s.nbinsfull_)) {
    yield_jacobian_rows(xi, first, last, mode, J);
    return J;
  }
  for_pieces(s, first, last, [&](int64_t b0, int64_t b1) {
    yield_jacobian_rows(xi, b0, b1, mode, J.middleRows(b0 - first, b1 - b0));
  });
  return J;
}

MatrixXd CpuShardEvaluator::process_yield_jacobian(const VectorXd& xi, int64_t first, int64_t last,
                                                   BetaMode mode) {
  ShardState& s = *state_;
  check_range("process_yield_jacobian", first, last, s.nbinsfull_, "");
  const int64_t P = s.nproc_;
  MatrixXd J(P * (last - first), s.nx_);
  if (!splits(s, first, last, s.nbinsfull_)) {
    process_yield_jacobian_rows(xi, first, last, mode, J);
    return J;
  }
  for_pieces(s, first, last, [&](int64_t b0, int64_t b1) {
    process_yield_jacobian_rows(xi, b0, b1, mode, J.middleRows(P * (b0 - first), P * (b1 - b0)));
  });
  return J;
}

MatrixXd CpuShardEvaluator::profiled_beta_jacobian(const VectorXd& xi, int64_t first, int64_t last) {
  ShardState& s = *state_;
  check_range("profiled_beta_jacobian", first, last, s.nbins_, " observed");
  if (!s.has_bb()) return MatrixXd::Zero(0, s.nx_);
  if (s.coupled) return MatrixXd();  // one global profile: not offered (see yield_model.hpp)
  const int64_t bw = s.beta_width();
  MatrixXd D(bw * (last - first), s.nx_);
  if (!splits(s, first, last, s.nbins_)) {
    profiled_beta_jacobian_rows(xi, first, last, D);
    return D;
  }
  for_pieces(s, first, last, [&](int64_t b0, int64_t b1) {
    profiled_beta_jacobian_rows(xi, b0, b1, D.middleRows(bw * (b0 - first), bw * (b1 - b0)));
  });
  return D;
}

VectorXd CpuShardEvaluator::profiled_beta_gains(const VectorXd& xi, int64_t first, int64_t last) {
  ShardState& s = *state_;
  check_range("profiled_beta_gains", first, last, s.nbins_, " observed");
  if (!s.has_bb() || s.coupled || s.bb_full_) return VectorXd();
  VectorXd h(last - first);
  if (!splits(s, first, last, s.nbins_)) return profiled_beta_gains_rows(xi, first, last, h) ? h : VectorXd();
  std::atomic<bool> all{true};
  for_pieces(s, first, last, [&](int64_t b0, int64_t b1) {
    if (all.load(std::memory_order_relaxed) &&
        !profiled_beta_gains_rows(xi, b0, b1, h.segment(b0 - first, b1 - b0)))
      all.store(false, std::memory_order_relaxed);
  });
  return all.load() ? h : VectorXd();
}

}  // namespace rabbit
