// The shard servers' side of RankYieldModel (docs/mpi.md "Postfit yields from the owning ranks").
#include "yield_answers.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "rabbit/core/error.hpp"

namespace rabbit::mpi::detail {

namespace {

void append(std::vector<double>& reply, const double* v, int64_t len) {
  reply.insert(reply.end(), v, v + len);
}

// The BB entries of all bins in a request (bin-major, `width` per bin): this rank keeps its own.
Eigen::VectorXd own_entries(const Request& r, const Assignment& a) {
  if (r.k <= 0 || r.n % r.k != 0 || static_cast<int64_t>(r.payload.size()) != r.n)
    throw Error(fmt::format("BB entries: {} values for {} bins", r.payload.size(), r.k));
  const int64_t width = r.n / r.k;
  return Eigen::Map<const Eigen::VectorXd>(r.payload.data() + a.bin_begin * width,
                                           (a.bin_end - a.bin_begin) * width);
}

}  // namespace

bool is_yield_request(Op op) {
  switch (op) {
    case Op::set_stored_beta:
    case Op::expected_yields:
    case Op::yield_jacobian:
    case Op::process_yield_jacobian:
    case Op::beta_yield_partials:
    case Op::profiled_beta_jacobian:
    case Op::profiled_beta_gains:
    case Op::full_nll_constant:
      return true;
    default:
      return false;
  }
}

std::vector<double> answer_yields(YieldModel& yields, const Request& r, const Assignment& a) {
  std::vector<double> reply = ok_reply();
  if (r.op == Op::set_stored_beta) {
    yields.set_stored_beta(own_entries(r, a));
    return reply;
  }
  if (r.op == Op::full_nll_constant) {
    reply.push_back(yields.full_nll_constant());
    return reply;
  }
  if (static_cast<int64_t>(r.payload.size()) != 3 + r.n)
    throw Error(fmt::format("a yield request of {} values for {} parameters", r.payload.size(), r.n));
  const int64_t first = static_cast<int64_t>(r.payload[0]), last = static_cast<int64_t>(r.payload[1]);
  const auto mode = static_cast<YieldModel::BetaMode>(static_cast<int>(r.payload[2]));
  const Eigen::VectorXd xi = Eigen::Map<const Eigen::VectorXd>(r.payload.data() + 3, r.n);
  // This rank's part of [first, last), in its own numbering (its bin 0 is bin_begin).
  const int64_t b = std::max(first, a.bin_begin), e = std::min(last, a.bin_end);
  if (e <= b) return reply;
  const int64_t lb = b - a.bin_begin, le = e - a.bin_begin;
  Eigen::MatrixXd m;
  switch (r.op) {
    case Op::expected_yields: {
      Eigen::VectorXd v;
      yields.expected_yields(xi, lb, le, mode, &v, r.flag ? &m : nullptr);
      append(reply, v.data(), v.size());
      if (r.flag) append(reply, m.data(), m.size());
      return reply;
    }
    case Op::yield_jacobian:
      m = yields.yield_jacobian(xi, lb, le, mode);
      break;
    case Op::process_yield_jacobian:
      m = yields.process_yield_jacobian(xi, lb, le, mode);
      break;
    case Op::beta_yield_partials:
      m = yields.beta_yield_partials(xi, lb, le, mode);
      break;
    case Op::profiled_beta_jacobian:
      m = yields.profiled_beta_jacobian(xi, lb, le);
      break;
    case Op::profiled_beta_gains: {
      const Eigen::VectorXd h = yields.profiled_beta_gains(xi, lb, le);
      const bool given = h.size() == le - lb;
      reply.push_back(given ? 1.0 : 0.0);
      if (given)
        append(reply, h.data(), h.size());
      else
        reply.resize(reply.size() + static_cast<size_t>(le - lb), 0.0);
      return reply;
    }
    default:
      throw Error(fmt::format("unexpected yield request {}", static_cast<int64_t>(r.op)));
  }
  append(reply, m.data(), m.size());
  return reply;
}

}  // namespace rabbit::mpi::detail
