#pragma once
// A shard server's answers to the yield model's requests (docs/mpi.md "Postfit yields from the owning
// ranks"): the part of the requested bins [first, last) this rank owns, computed by its own shard's
// yield model in its own bin numbering.
#include <vector>

#include "protocol.hpp"
#include "rabbit/model/yield_model.hpp"
#include "rabbit/mpi/ranks.hpp"

namespace rabbit::mpi::detail {

/// Whether `op` is one of the yield model's requests answered by answer_yields.
bool is_yield_request(Op op);

/// The reply (ok_reply() then the values) of this rank to a yield model request.
std::vector<double> answer_yields(YieldModel& yields, const Request& request, const Assignment& assignment);

}  // namespace rabbit::mpi::detail
