#pragma once
// Shared between trust_region.cpp and minimize.cpp: the loop that keeps `out` current after
// every iteration, so a caller that aborts it through the hook still has the counters and the
// last accepted point.
#include "rabbit/minimize/minimizer.hpp"

namespace rabbit::detail {
void validate_trust_region_options(const MinimizerOptions& options);
void run_trust_region(Objective& objective, const Eigen::VectorXd& x0, MinimizerMethod method,
                      const MinimizerOptions& options, const TrustRegionHook& hook, MinimizerResult& out);
}  // namespace rabbit::detail
