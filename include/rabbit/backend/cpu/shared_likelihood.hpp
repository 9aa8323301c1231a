#pragma once
// The CPU backend evaluates the shared per-bin likelihood of include/rabbit/likelihood
// (docs/architecture.md "The per-bin likelihood"); its code names those functions and types cpu::….
#include "rabbit/likelihood/bin_profile.hpp"
#include "rabbit/likelihood/dyn_hyper_dual.hpp"
#include "rabbit/likelihood/gamma_full.hpp"
#include "rabbit/likelihood/interpolation.hpp"

namespace rabbit::cpu {
using namespace rabbit::likelihood;  // NOLINT(google-build-using-namespace): the backend's view of the shared
                                     // code
}  // namespace rabbit::cpu
