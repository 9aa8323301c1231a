#pragma once
// RankLink: the state of one dispatch of a RankFitter, shared with its proxy shards
// (docs/mpi.md "One evaluation"). Fitter's methods call for_each_shard(fn) once per evaluation, fn(i)
// calling the same ShardEvaluator method on shard i. RankFitter calls fn twice on the proxies: first
// while `recording` (each proxy stores the request it would send and returns placeholders), then,
// after the request went to every rank and their replies came back, while `delivering` (each proxy
// returns its rank's reply). Fitter then combines the partials in shard order, as for --nDevices.
#include <optional>
#include <vector>

#include "protocol.hpp"

namespace rabbit::mpi::detail {

struct RankLink {
  enum class Phase { constructing, idle, recording, delivering };
  Phase phase = Phase::constructing;
  std::optional<Request> request;            // the request recorded in this dispatch
  std::vector<std::vector<double>> replies;  // per rank, from the last gather
  int64_t nbinsfull = 0;                     // of the whole input: the BB centres' bins
  int ranks = 1;
  int shards_per_rank = 1;  // a reply holds the values of every local shard of its rank, in order
};

}  // namespace rabbit::mpi::detail
