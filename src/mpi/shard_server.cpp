// The shard servers' side (docs/mpi.md "Shard servers"): ranks > 0 read their bin range, build the
// model and their local shards over it, and answer the coordinator's requests until released.
#include <fmt/format.h>

#include <chrono>
#include <new>

#include "protocol.hpp"
#include "rabbit/core/error.hpp"
#include "rabbit/core/memory_limit.hpp"
#include "rabbit/mpi/ranks.hpp"
#include "tensor_bytes.hpp"
#include "yield_answers.hpp"

namespace rabbit::mpi {

namespace {

using detail::Op;
using detail::Request;

int this_rank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

// Every local shard, and the yield shard where it is another, in shard order.
template <class Fn>
void for_every_shard(LocalShards& local, Fn&& fn) {
  for (auto& shard : local.shards) fn(*shard);
  if (local.yield_shard) fn(*local.yield_shard);
}

// One evaluation on this rank's local shards, concurrently (as MultiDeviceFitter runs them); the reply
// holds each shard's values in shard order, for the coordinator to sum with the other ranks' in the
// order of --nDevices ranks·shards (docs/mpi.md "Local shards of a rank").
std::vector<double> evaluate(LocalShards& local, const Request& r) {
  const int64_t n = r.n;
  if (static_cast<int64_t>(r.payload.size()) < n) throw Error("request shorter than its parameter vector");
  const double* p = r.payload.data();
  const Eigen::VectorXd xi = Eigen::Map<const Eigen::VectorXd>(p, n);
  Eigen::MatrixXd V;
  if (r.op == Op::value_grad_hvp) V = Eigen::Map<const Eigen::MatrixXd>(p + n, n, r.k);
  std::vector<std::vector<double>> parts(local.shards.size());
  local.pool->run([&](size_t i) {
    ShardEvaluator& shard = *local.shards[i];
    std::vector<double>& part = parts[i];
    auto append = [&](const double* v, int64_t len) { part.insert(part.end(), v, v + len); };
    Eigen::VectorXd grad;
    switch (r.op) {
      case Op::value:
        part.push_back(shard.value(xi));
        return;
      case Op::value_grad:
        part.push_back(shard.value_grad(xi, grad));
        append(grad.data(), n);
        return;
      case Op::value_grad_hvp: {
        Eigen::MatrixXd HV;
        part.push_back(shard.value_grad_hvp(xi, V, grad, HV));
        append(grad.data(), n);
        append(HV.data(), HV.size());
        return;
      }
      case Op::value_grad_hess: {
        Eigen::MatrixXd hess = Eigen::MatrixXd::Zero(n, n);
        part.push_back(shard.value_grad_hess(xi, grad, hess, r.flag != 0));
        append(grad.data(), n);
        append(hess.data(), hess.size());
        return;
      }
      case Op::profiled_beta: {
        const Eigen::VectorXd beta = shard.profiled_beta(xi);
        append(beta.data(), beta.size());
        return;
      }
      default:
        throw Error(fmt::format("unexpected request {}", static_cast<int64_t>(r.op)));
    }
  });
  std::vector<double> reply = detail::ok_reply();
  // The profiled β of the shards differ in length: their lengths come first.
  if (r.op == Op::profiled_beta)
    for (const auto& part : parts) reply.push_back(static_cast<double>(part.size()));
  for (const auto& part : parts) reply.insert(reply.end(), part.begin(), part.end());
  return reply;
}

// One request on this rank's shards; the reply's layout is what RemoteShard reads.
std::vector<double> answer(LocalShards& local, const Request& r, const Assignment& a) {
  std::vector<double> reply = detail::ok_reply();
  const double* p = r.payload.data();
  if (r.op == Op::set_observed) {
    // The coordinator sends all observed bins; this rank keeps its own.
    const int64_t nlocal = a.bin_end - a.bin_begin;
    if (a.bin_end > r.n || static_cast<int64_t>(r.payload.size()) != r.n * (r.flag ? 2 : 1))
      throw Error(fmt::format("set_observed: {} values for {} bins", r.payload.size(), r.n));
    const Eigen::VectorXd nobs = Eigen::Map<const Eigen::VectorXd>(p + a.bin_begin, nlocal);
    Eigen::VectorXd var;
    if (r.flag) var = Eigen::Map<const Eigen::VectorXd>(p + r.n + a.bin_begin, nlocal);
    for_every_shard(local, [&](ShardEvaluator& shard) { shard.set_observed(nobs, var); });
    return reply;
  }
  if (r.op == Op::set_beta_centres) {
    // The centres of all BB entries, bin-major over all bins (masked included): keep this range's.
    if (r.k <= 0 || r.n % r.k != 0 || static_cast<int64_t>(r.payload.size()) != r.n)
      throw Error(fmt::format("set_beta_centres: {} values for {} bins", r.payload.size(), r.k));
    const int64_t width = r.n / r.k;
    const Eigen::VectorXd beta0 =
        Eigen::Map<const Eigen::VectorXd>(p + a.bin_begin * width, (a.bin_end - a.bin_begin) * width);
    for_every_shard(local, [&](ShardEvaluator& shard) { shard.set_beta_centres(beta0); });
    return reply;
  }
  // The yield model's NLL of all the rank's bins (RankYieldModel::value), one value per rank.
  if (r.op == Op::value && r.flag) {
    if (static_cast<int64_t>(r.payload.size()) != r.n) throw Error("a yield NLL request of the wrong length");
    reply.push_back(local.yields_shard().value(Eigen::Map<const Eigen::VectorXd>(p, r.n)));
    return reply;
  }
  if (detail::is_yield_request(r.op)) {
    YieldModel* yields = local.yields_shard().yield_model();
    if (!yields) throw Error("this rank's shard has no yield model");
    return detail::answer_yields(*yields, r, a);
  }
  return evaluate(local, r);
}

// Runs fn and turns what it throws into a failure reply for rank 0 to print (rank 0 alone writes).
template <class Fn>
std::vector<double> guarded(Fn&& fn) {
  try {
    return fn();
  } catch (const Error& e) {
    return detail::failure_reply(static_cast<int>(e.code()), e.what());
  } catch (const std::bad_alloc&) {
    return detail::failure_reply(static_cast<int>(ExitCode::resource), memory::out_of_memory_message());
  } catch (const std::exception& e) {
    return detail::failure_reply(static_cast<int>(ExitCode::failure), e.what());
  }
}

// Every rank's answer to the release: its peak memory over the whole run, the bytes of its tensor and
// the seconds it spent answering requests, which rank 0 logs (docs/mpi.md "Memory per rank",
// "Measurements": rank 0's exchange less the slowest rank's excess over its own shard is the time the
// messages took).
void answer_release(int64_t tensor_bytes, double busy_seconds) {
  detail::gather(
      {static_cast<double>(detail::peak_rss_bytes()), static_cast<double>(tensor_bytes), busy_seconds});
}

}  // namespace

Assignment await_assignment() {
  Request r;
  detail::broadcast(r);
  Assignment a;
  if (r.op == Op::release) {
    answer_release(0, 0.0);
    a.released = true;
    a.exit_code = static_cast<int>(r.n);
    return a;
  }
  // payload: threads, shards per rank N, then (begin, end) of every rank's N pieces in rank order.
  const size_t rank = static_cast<size_t>(this_rank());
  const size_t shards = r.payload.size() >= 2 ? static_cast<size_t>(r.payload[1]) : 0;
  if (r.op != Op::assign || shards < 1 || r.payload.size() < 2 + 2 * shards * (rank + 1))
    throw Error(fmt::format("rank {}: expected its bin range from rank 0", rank));
  a.threads = static_cast<int>(r.payload[0]);
  for (size_t i = 0; i < shards; ++i) {
    const size_t at = 2 + 2 * (rank * shards + i);
    a.pieces.emplace_back(static_cast<int64_t>(r.payload[at]), static_cast<int64_t>(r.payload[at + 1]));
  }
  a.bin_begin = a.pieces.front().first;
  a.bin_end = a.pieces.back().second;
  return a;
}

int serve_shard_range(const Assignment& assignment,
                      const std::function<LocalShard(const Assignment&)>& build) {
  LocalShard local;
  detail::gather(guarded([&] {
    local = build(assignment);
    std::vector<double> ack = detail::ok_reply();
    ack.push_back(static_cast<double>(detail::tensor_bytes(*local.model->input)));
    ack.push_back(static_cast<double>(detail::peak_rss_bytes()));
    return ack;
  }));
  double busy = 0.0;
  for (;;) {
    Request r;
    detail::broadcast(r);
    if (r.op == Op::release) {
      answer_release(local.model ? detail::tensor_bytes(*local.model->input) : 0, busy);
      return static_cast<int>(r.n);
    }
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<double> reply = guarded([&] {
      if (local.local.shards.empty()) throw Error("this rank holds no shard");
      return answer(local.local, r, assignment);
    });
    busy += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    detail::gather(reply);
  }
}

FitInputData standalone_range(FitInputData in) {
  if (!in.ranged) throw Error(fmt::format("{}: standalone_range needs a ranged read", in.filename));
  const int64_t n = in.bin_end - in.bin_begin;
  in.ranged = false;
  in.bin_begin = 0;
  in.bin_end = n;
  in.nbins = n;
  in.nbinsfull = n;
  in.nbinsmasked = 0;
  in.channels.clear();
  in.betavariations.reset();
  in.data_cov_inv.reset();
  return in;
}

LocalShard read_shard_range(const std::string& filename, const ModelOptions& options, const Assignment& a,
                            const LocalDeviceOptions& devices) {
  LocalShard local;
  FitInputReadOptions read;
  read.bins = BinRange{a.bin_begin, a.bin_end};
  auto input = std::make_shared<FitInputData>(standalone_range(read_fit_input(filename, read)));
  local.model = build_model(input, options);
  // The pieces in this rank's own numbering (its bin 0 is bin_begin).
  std::vector<std::pair<int64_t, int64_t>> pieces;
  for (const auto& [b, e] : a.pieces) pieces.emplace_back(b - a.bin_begin, e - a.bin_begin);
  LocalDeviceOptions o = devices;
  o.threads = a.threads;
  local.local = make_local_shards(local.model, pieces, o);
  return local;
}

}  // namespace rabbit::mpi
