#pragma once
// Replicas of a CPU fitter, for steps that run several independent fits at once (the refit impacts,
// docs/architecture.md "Parallel refits"). A replica has its own copy of the model's state (parameter
// space: constraint centres, frozen mask, blinding) with its own global terms, and its own CPU shards over
// the same bin ranges as the original, with the original's observed data, BB centres and stored β. The
// input tensor, the param model and the regularisers are shared, read only. Value, gradient and HVP do not
// depend on the thread count (docs/architecture.md "Threads"), so a replica evaluates bit for bit as the
// original does.
#include <memory>

#include "rabbit/fit/fitter.hpp"

namespace rabbit {

/// Whether `fitter` can be replicated: every shard is a CPU shard and the dense linear algebra is the
/// host's (not a GPU fit, not the MPI coordinator's fitter).
bool replicable_on_cpu(const Fitter& fitter);

/// A replica of `fitter` whose shards share `threads` threads (at least one per shard). Error when
/// replicable_on_cpu(fitter) is false.
std::unique_ptr<Fitter> replicate_on_cpu(const Fitter& fitter, int threads);

}  // namespace rabbit
