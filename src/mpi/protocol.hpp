#pragma once
// The messages between the coordinator (rank 0) and the shard servers (docs/mpi.md "One evaluation").
// A request is broadcast from rank 0 (a header of int64s, then its doubles); every rank > 0 answers
// with one reply of doubles, gathered to rank 0 in rank order (MPI_Gatherv), so rank 0 combines the
// ranks' partials itself, in shard order, never through MPI's reductions (whose order is the
// library's choice). Private to src/mpi: the only place that includes mpi.h besides its sources.
#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

namespace rabbit::mpi::detail {

enum class Op : int64_t {
  release = 0,       // n: the exit code; the servers return it
  assign = 1,        // payload: threads, then (begin, end) per rank
  set_observed,      // flag: variances present; payload: nobs [nbins] (+ varnobs [nbins])
  value,             // flag: the yield model's (one value per rank, not per local shard); payload: ξ
  value_grad,        // payload: ξ
  value_grad_hvp,    // k: columns; payload: ξ, V (n × k, column-major)
  value_grad_hess,   // flag: profile; payload: ξ
  profiled_beta,     // payload: ξ
  set_beta_centres,  // k: nbinsfull; payload: β⁰ of all BB entries (bin-major, 1 or nproc per bin)
  // The yield model's requests (docs/mpi.md "Postfit yields from the owning ranks"): every server
  // answers for the part of [first, last) it owns, in its own bin numbering, or with no values.
  set_stored_beta,         // k: nbinsfull; payload: the stored β of all BB entries
  expected_yields,         // flag: per process; payload: first, last, mode, ξ
  yield_jacobian,          // payload: first, last, mode, ξ
  process_yield_jacobian,  // payload: first, last, mode, ξ
  beta_yield_partials,     // payload: first, last, mode, ξ
  profiled_beta_jacobian,  // payload: first, last, 0, ξ
  profiled_beta_gains,     // payload: first, last, 0, ξ; reply: 1 and the gains, or 0 and zeros (none)
  full_nll_constant,       // no payload
};

struct Request {
  Op op = Op::release;
  int64_t n = 0;     // length of ξ (release: the exit code)
  int64_t k = 0;     // HVP columns
  int64_t flag = 0;  // set_observed: variances present; value_grad_hess: profile
  std::vector<double> payload;
};

/// Rank 0 sends `request`; the other ranks receive into it.
void broadcast(Request& request);

/// Every rank's reply gathered to rank 0, in rank order (rank 0 contributes `mine`, normally empty).
/// On ranks > 0 the result is empty.
std::vector<std::vector<double>> gather(const std::vector<double>& mine);

/// reply[0] = 0, then the values.
std::vector<double> ok_reply();
/// reply[0] = exit code (≠ 0), reply[1] = message length, then the message's bytes packed in doubles.
std::vector<double> failure_reply(int exit_code, const std::string& message);
/// Throws rabbit::Error("rank R: message", exit code) when `reply` is a failure or has fewer than
/// `expected` values after its status.
void check_reply(int rank, const std::vector<double>& reply, size_t expected);

/// Whether the servers were released (release_ranks ran or no request may follow).
bool& released();

/// Peak resident memory of this process (VmHWM), bytes; 0 where /proc is not readable.
int64_t peak_rss_bytes();

}  // namespace rabbit::mpi::detail
