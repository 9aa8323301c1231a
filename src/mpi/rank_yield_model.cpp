// RankYieldModel (docs/mpi.md "Postfit yields from the owning ranks"): every all-bin quantity the
// postfit reads is assembled on rank 0 from the parts of the ranks that own the bins, in rank order.
#include "rank_yield_model.hpp"

#include <fmt/format.h>

#include <exception>

#include "rabbit/core/error.hpp"

namespace rabbit::mpi::detail {

namespace {

std::vector<double> as_doubles(const Eigen::VectorXd& v) {
  return std::vector<double>(v.data(), v.data() + v.size());
}

// The values after a reply's status word.
const double* values(const std::vector<double>& reply) {
  return reply.data() + 1;
}

}  // namespace

std::vector<RankYieldModel::Part> RankYieldModel::parts(int64_t first, int64_t last) const {
  if (first < 0 || last < first || last > nbinsfull_)
    throw Error(
        fmt::format("yields across ranks: bin range [{}, {}) outside the {} bins", first, last, nbinsfull_));
  std::vector<Part> out;
  for (size_t r = 0; r < ranges_.size(); ++r) {
    const int64_t b = std::max(first, ranges_[r].first), e = std::min(last, ranges_[r].second);
    out.push_back({static_cast<int>(r), b, std::max(b, e)});
  }
  // The masked channels follow the observed bins; rank 0 holds them.
  const int64_t mb = std::max(first, nbins_), me = std::max(mb, last);
  out.push_back({0, mb, me});
  return out;
}

Request RankYieldModel::ranged(Op op, const Eigen::VectorXd& xi, int64_t first, int64_t last, BetaMode mode,
                               int64_t flag) {
  Request r{
      op,
      xi.size(),
      0,
      flag,
      {static_cast<double>(first), static_cast<double>(last), static_cast<double>(static_cast<int>(mode))}};
  r.payload.insert(r.payload.end(), xi.data(), xi.data() + xi.size());
  return r;
}

std::vector<std::vector<double>> RankYieldModel::exchange(Request request, const std::function<void()>& local,
                                                          const std::function<size_t(int)>& expected) const {
  if (released()) throw Error("the MPI ranks were already released; no postfit yield can follow");
  broadcast(request);
  // Every rank replies: the gather must happen even when rank 0's own part fails.
  std::exception_ptr local_error;
  try {
    local();
  } catch (...) {
    local_error = std::current_exception();
  }
  auto replies = gather({});
  if (local_error) std::rethrow_exception(local_error);
  for (size_t r = 1; r < replies.size(); ++r) {
    const size_t want = expected(static_cast<int>(r));
    check_reply(static_cast<int>(r), replies[r], want);
    if (replies[r].size() != want + 1)
      throw Error(fmt::format("rank {}: a reply of {} values where {} were expected", r,
                              replies[r].size() - 1, want));
  }
  return replies;
}

void RankYieldModel::set_beta_centres(const Eigen::VectorXd& beta0) {
  exchange(
      {Op::set_beta_centres, beta0.size(), nbinsfull_, 0, as_doubles(beta0)},
      [&] { own_.set_beta_centres(beta0); }, [](int) { return size_t{0}; });
}

void RankYieldModel::set_stored_beta(const Eigen::VectorXd& beta) {
  exchange(
      {Op::set_stored_beta, beta.size(), nbinsfull_, 0, as_doubles(beta)},
      [&] { own_.set_stored_beta(beta); }, [](int) { return size_t{0}; });
}

void RankYieldModel::set_observed(const Eigen::VectorXd& nobs, const Eigen::VectorXd& varnobs) {
  std::vector<double> payload = as_doubles(nobs);
  payload.insert(payload.end(), varnobs.data(), varnobs.data() + varnobs.size());
  exchange(
      {Op::set_observed, nobs.size(), 0, varnobs.size() > 0 ? 1 : 0, std::move(payload)},
      [&] { own_.set_observed(nobs, varnobs); }, [](int) { return size_t{0}; });
}

void RankYieldModel::expected_yields(const Eigen::VectorXd& xi, int64_t first, int64_t last, BetaMode mode,
                                     Eigen::VectorXd* per_bin, Eigen::MatrixXd* per_process) {
  const auto ps = parts(first, last);
  const int64_t nb = last - first;
  const int64_t P = nproc_;
  if (per_bin) per_bin->setZero(nb);
  if (per_process) per_process->setZero(nb, P);
  auto fill = [&](const Part& p, const Eigen::VectorXd& v, const Eigen::MatrixXd* m) {
    const int64_t len = p.end - p.begin;
    if (per_bin) per_bin->segment(p.begin - first, len) = v;
    if (per_process) per_process->middleRows(p.begin - first, len) = *m;
  };
  auto replies = exchange(
      ranged(Op::expected_yields, xi, first, last, mode, per_process ? 1 : 0),
      [&] {
        for (const Part& p : ps) {
          if (p.rank != 0 || p.end == p.begin) continue;
          Eigen::VectorXd v;
          Eigen::MatrixXd m;
          own_.expected_yields(xi, p.begin, p.end, mode, &v, per_process ? &m : nullptr);
          fill(p, v, &m);
        }
      },
      [&](int r) {
        const int64_t len = ps[r].end - ps[r].begin;
        return static_cast<size_t>(len * (per_process ? 1 + P : 1));
      });
  for (const Part& p : ps) {
    if (p.rank == 0 || p.end == p.begin) continue;
    const int64_t len = p.end - p.begin;
    const double* v = values(replies[p.rank]);
    const Eigen::MatrixXd m = Eigen::Map<const Eigen::MatrixXd>(v + len, len, per_process ? P : 0);
    fill(p, Eigen::Map<const Eigen::VectorXd>(v, len), &m);
  }
}

Eigen::MatrixXd RankYieldModel::stacked(Op op, const Eigen::VectorXd& xi, int64_t first, int64_t last,
                                        BetaMode mode, int64_t rows_per_bin, int64_t cols, bool entry_columns,
                                        const std::function<Eigen::MatrixXd(int64_t, int64_t)>& own_part) {
  const auto ps = parts(first, last);
  const int64_t w = entry_width();
  Eigen::MatrixXd out = Eigen::MatrixXd::Zero((last - first) * rows_per_bin, cols);
  auto reply_cols = [&](const Part& p) {
    return entry_columns ? (ranges_[p.rank].second - ranges_[p.rank].first) * w : cols;
  };
  auto replies = exchange(
      ranged(op, xi, first, last, mode),
      [&] {
        for (const Part& p : ps) {
          if (p.rank != 0 || p.end == p.begin) continue;
          out.middleRows((p.begin - first) * rows_per_bin, (p.end - p.begin) * rows_per_bin) =
              own_part(p.begin, p.end);
        }
      },
      [&](int r) {
        const Part& p = ps[r];
        return static_cast<size_t>((p.end - p.begin) * rows_per_bin * reply_cols(p));
      });
  for (const Part& p : ps) {
    if (p.rank == 0 || p.end == p.begin) continue;
    const int64_t nrows = (p.end - p.begin) * rows_per_bin, ncols = reply_cols(p);
    const auto m = Eigen::Map<const Eigen::MatrixXd>(values(replies[p.rank]), nrows, ncols);
    const int64_t col0 = entry_columns ? ranges_[p.rank].first * w : 0;
    out.block((p.begin - first) * rows_per_bin, col0, nrows, ncols) = m;
  }
  return out;
}

Eigen::MatrixXd RankYieldModel::yield_jacobian(const Eigen::VectorXd& xi, int64_t first, int64_t last,
                                               BetaMode mode) {
  return stacked(Op::yield_jacobian, xi, first, last, mode, 1, xi.size(), false,
                 [&](int64_t b, int64_t e) { return own_.yield_jacobian(xi, b, e, mode); });
}

Eigen::MatrixXd RankYieldModel::process_yield_jacobian(const Eigen::VectorXd& xi, int64_t first, int64_t last,
                                                       BetaMode mode) {
  return stacked(Op::process_yield_jacobian, xi, first, last, mode, nproc_, xi.size(), false,
                 [&](int64_t b, int64_t e) { return own_.process_yield_jacobian(xi, b, e, mode); });
}

Eigen::MatrixXd RankYieldModel::beta_yield_partials(const Eigen::VectorXd& xi, int64_t first, int64_t last,
                                                    BetaMode mode) {
  // Rank 0's part has every entry's column (its own model spans all bins); a server's only its own.
  return stacked(Op::beta_yield_partials, xi, first, last, mode, 1, own_.bb_entries(), true,
                 [&](int64_t b, int64_t e) { return own_.beta_yield_partials(xi, b, e, mode); });
}

Eigen::MatrixXd RankYieldModel::profiled_beta_jacobian(const Eigen::VectorXd& xi, int64_t first,
                                                       int64_t last) {
  if (last > nbins_)
    throw Error(fmt::format("profiled_beta_jacobian: bin range [{}, {}) outside the {} observed bins", first,
                            last, nbins_));
  if (!has_bb()) return Eigen::MatrixXd::Zero(0, xi.size());
  return stacked(Op::profiled_beta_jacobian, xi, first, last, BetaMode::profiled, entry_width(), xi.size(),
                 false, [&](int64_t b, int64_t e) { return own_.profiled_beta_jacobian(xi, b, e); });
}

// Every owning rank's gains, or none where one rank's part has none.
Eigen::VectorXd RankYieldModel::profiled_beta_gains(const Eigen::VectorXd& xi, int64_t first, int64_t last) {
  if (first < 0 || last < first || last > nbins_)
    throw Error(fmt::format("profiled_beta_gains: bin range [{}, {}) outside the {} observed bins", first,
                            last, nbins_));
  if (!has_bb()) return {};
  const auto ps = parts(first, last);
  Eigen::VectorXd out(last - first);
  bool all = true;
  auto replies = exchange(
      ranged(Op::profiled_beta_gains, xi, first, last, BetaMode::profiled),
      [&] {
        for (const Part& p : ps) {
          if (p.rank != 0 || p.end == p.begin) continue;
          const Eigen::VectorXd h = own_.profiled_beta_gains(xi, p.begin, p.end);
          if (h.size() != p.end - p.begin)
            all = false;
          else
            out.segment(p.begin - first, p.end - p.begin) = h;
        }
      },
      [&](int r) {
        const Part& p = ps[static_cast<size_t>(r)];
        return static_cast<size_t>(p.end > p.begin ? 1 + (p.end - p.begin) : 0);
      });
  for (const Part& p : ps) {
    if (p.rank == 0 || p.end == p.begin) continue;
    const double* v = values(replies[static_cast<size_t>(p.rank)]);
    if (v[0] != 1.0) all = false;
    out.segment(p.begin - first, p.end - p.begin) = Eigen::Map<const Eigen::VectorXd>(v + 1, p.end - p.begin);
  }
  return all ? out : Eigen::VectorXd();
}

Eigen::VectorXd RankYieldModel::profiled_beta(const Eigen::VectorXd& xi) {
  if (!has_bb()) return {};
  const int64_t w = entry_width();
  Eigen::VectorXd out(nbins_ * w), own;
  Request r{Op::profiled_beta, xi.size(), 0, 0, as_doubles(xi)};
  auto replies = exchange(
      std::move(r), [&] { own = own_.profiled_beta(xi); },
      [&](int rank) { return static_cast<size_t>((ranges_[rank].second - ranges_[rank].first) * w); });
  out.head(own.size()) = own;
  for (size_t rank = 1; rank < replies.size(); ++rank)
    out.segment(ranges_[rank].first * w, (ranges_[rank].second - ranges_[rank].first) * w) =
        Eigen::Map<const Eigen::VectorXd>(values(replies[rank]),
                                          (ranges_[rank].second - ranges_[rank].first) * w);
  return out;
}

// Summed in rank order, as Fitter sums its shards' partials.
double RankYieldModel::value(const Eigen::VectorXd& xi) {
  double own = 0.0;
  auto replies = exchange(
      {Op::value, xi.size(), 0, 1, as_doubles(xi)}, [&] { own = own_.value(xi); },
      [](int) { return size_t{1}; });
  double sum = own;
  for (size_t rank = 1; rank < replies.size(); ++rank) sum += values(replies[rank])[0];
  return sum;
}

// Each rank's data and BB constants over its bins. The masked channels' BB constants, which a single
// process counts with its last shard, are added by rank 0's fitter (src/mpi/rank_fitter.cpp).
double RankYieldModel::full_nll_constant() const {
  double own = 0.0;
  auto replies = exchange(
      {Op::full_nll_constant, 0, 0, 0, {}}, [&] { own = own_.full_nll_constant(); },
      [](int) { return size_t{1}; });
  double sum = own;
  for (size_t rank = 1; rank < replies.size(); ++rank) sum += values(replies[rank])[0];
  return sum;
}

}  // namespace rabbit::mpi::detail
