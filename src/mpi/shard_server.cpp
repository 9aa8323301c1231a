// The shard servers' side (docs/mpi.md "Shard servers"): ranks > 0 read their bin range, build the
// model and a CPU shard over it, and answer the coordinator's requests until released.
#include <fmt/format.h>

#include <new>

#include "protocol.hpp"
#include "rabbit/core/error.hpp"
#include "rabbit/core/memory_limit.hpp"
#include "rabbit/fit/shard_registry.hpp"
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

// One request on this rank's shard; the reply's layout is what RemoteShard reads.
std::vector<double> answer(ShardEvaluator& shard, const Request& r, const Assignment& a) {
  std::vector<double> reply = detail::ok_reply();
  const double* p = r.payload.data();
  auto append = [&](const double* v, int64_t len) { reply.insert(reply.end(), v, v + len); };
  if (r.op == Op::set_observed) {
    // The coordinator sends all observed bins; this rank keeps its own.
    const int64_t nlocal = a.bin_end - a.bin_begin;
    if (a.bin_end > r.n || static_cast<int64_t>(r.payload.size()) != r.n * (r.flag ? 2 : 1))
      throw Error(fmt::format("set_observed: {} values for {} bins", r.payload.size(), r.n));
    const Eigen::VectorXd nobs = Eigen::Map<const Eigen::VectorXd>(p + a.bin_begin, nlocal);
    Eigen::VectorXd var;
    if (r.flag) var = Eigen::Map<const Eigen::VectorXd>(p + r.n + a.bin_begin, nlocal);
    shard.set_observed(nobs, var);
    return reply;
  }
  if (r.op == Op::set_beta_centres) {
    // The centres of all BB entries, bin-major over all bins (masked included): keep this range's.
    if (r.k <= 0 || r.n % r.k != 0 || static_cast<int64_t>(r.payload.size()) != r.n)
      throw Error(fmt::format("set_beta_centres: {} values for {} bins", r.payload.size(), r.k));
    const int64_t width = r.n / r.k;
    shard.set_beta_centres(
        Eigen::Map<const Eigen::VectorXd>(p + a.bin_begin * width, (a.bin_end - a.bin_begin) * width));
    return reply;
  }
  if (detail::is_yield_request(r.op)) {
    YieldModel* yields = shard.yield_model();
    if (!yields) throw Error("this rank's shard has no yield model");
    return detail::answer_yields(*yields, r, a);
  }
  const int64_t n = r.n;
  if (static_cast<int64_t>(r.payload.size()) < n) throw Error("request shorter than its parameter vector");
  const Eigen::VectorXd xi = Eigen::Map<const Eigen::VectorXd>(p, n);
  Eigen::VectorXd grad;
  switch (r.op) {
    case Op::value:
      reply.push_back(shard.value(xi));
      return reply;
    case Op::value_grad:
      reply.push_back(shard.value_grad(xi, grad));
      append(grad.data(), n);
      return reply;
    case Op::value_grad_hvp: {
      const Eigen::MatrixXd V = Eigen::Map<const Eigen::MatrixXd>(p + n, n, r.k);
      Eigen::MatrixXd HV;
      reply.push_back(shard.value_grad_hvp(xi, V, grad, HV));
      append(grad.data(), n);
      append(HV.data(), HV.size());
      return reply;
    }
    case Op::value_grad_hess: {
      Eigen::MatrixXd hess = Eigen::MatrixXd::Zero(n, n);
      reply.push_back(shard.value_grad_hess(xi, grad, hess, r.flag != 0));
      append(grad.data(), n);
      append(hess.data(), hess.size());
      return reply;
    }
    case Op::profiled_beta: {
      const Eigen::VectorXd beta = shard.profiled_beta(xi);
      append(beta.data(), beta.size());
      return reply;
    }
    default:
      throw Error(fmt::format("unexpected request {}", static_cast<int64_t>(r.op)));
  }
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

// Every rank's answer to the release: its peak memory over the whole run and the bytes of its tensor,
// which rank 0 logs (docs/mpi.md "Memory per rank").
void answer_release(int64_t tensor_bytes) {
  detail::gather({static_cast<double>(detail::peak_rss_bytes()), static_cast<double>(tensor_bytes)});
}

}  // namespace

Assignment await_assignment() {
  Request r;
  detail::broadcast(r);
  Assignment a;
  if (r.op == Op::release) {
    answer_release(0);
    a.released = true;
    a.exit_code = static_cast<int>(r.n);
    return a;
  }
  const size_t rank = static_cast<size_t>(this_rank());
  if (r.op != Op::assign || r.payload.size() < 3 + 2 * rank)
    throw Error(fmt::format("rank {}: expected its bin range from rank 0", rank));
  a.threads = static_cast<int>(r.payload[0]);
  a.bin_begin = static_cast<int64_t>(r.payload[1 + 2 * rank]);
  a.bin_end = static_cast<int64_t>(r.payload[2 + 2 * rank]);
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
  for (;;) {
    Request r;
    detail::broadcast(r);
    if (r.op == Op::release) {
      answer_release(local.model ? detail::tensor_bytes(*local.model->input) : 0);
      return static_cast<int>(r.n);
    }
    detail::gather(guarded([&] {
      if (!local.shard) throw Error("this rank holds no shard");
      return answer(*local.shard, r, assignment);
    }));
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

LocalShard read_shard_range(const std::string& filename, const ModelOptions& options, const Assignment& a) {
  LocalShard local;
  FitInputReadOptions read;
  read.bins = BinRange{a.bin_begin, a.bin_end};
  auto input = std::make_shared<FitInputData>(standalone_range(read_fit_input(filename, read)));
  local.model = build_model(input, options);
  ShardSpec spec;
  spec.model = local.model;
  spec.bin_begin = 0;
  spec.bin_end = input->nbins;
  spec.threads = a.threads;
  local.shard = shard_kind("cpu").create(spec);
  return local;
}

}  // namespace rabbit::mpi
