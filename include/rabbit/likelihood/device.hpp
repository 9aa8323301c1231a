#pragma once
// The per-bin likelihood (this folder) is compiled for the host and, through the CUDA backend's
// kernels, for the device: RABBIT_HD marks what both may call (docs/architecture.md "The per-bin
// likelihood"). Only math.h functions (found globally, not std::) and these comparisons are used, so
// nvcc's device code has everything the formulas need.
#include <math.h>

#if defined(__CUDACC__)
#define RABBIT_HD __host__ __device__
#else
#define RABBIT_HD
#endif

namespace rabbit::likelihood {

// The math.h overloads take part in unqualified calls next to the hyper-dual ones of this namespace
// (a name declared here would otherwise hide the global sqrt(double) etc.).
using ::exp;
using ::log;
using ::log1p;
using ::sqrt;

/// std::max and std::min, with their exact semantics ((a < b) ? b : a; a NaN first argument is
/// returned by max), callable on the device; the CPU code uses std::max/std::min and the shared
/// formulas must round and propagate NaN as it does.
template <class T>
RABBIT_HD const T& max_of(const T& a, const T& b) {
  return (a < b) ? b : a;
}
template <class T>
RABBIT_HD const T& min_of(const T& a, const T& b) {
  return (b < a) ? b : a;
}

}  // namespace rabbit::likelihood
