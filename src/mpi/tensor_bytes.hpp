#pragma once
// The bytes of an input's per-bin model arrays (norm, logk, sparse indices, MC statistics): what a
// rank's memory grows with (docs/mpi.md "Memory per rank").
#include <cstdint>

#include "rabbit/io/fit_input_data.hpp"

namespace rabbit::mpi::detail {

inline int64_t tensor_bytes(const FitInputData& in) {
  auto bytes = [](const auto& v) { return static_cast<int64_t>(v.size() * sizeof(v[0])); };
  int64_t total = bytes(in.norm) + bytes(in.norm_index) + bytes(in.logk) + bytes(in.logk_sparse.rowptr) +
                  bytes(in.logk_sparse.cols) + bytes(in.logk_sparse.values) + bytes(in.logk_f32) +
                  bytes(in.logk_sparse.values_f32) + bytes(in.sumw) + bytes(in.sumw2);
  if (in.betavariations) total += bytes(*in.betavariations);
  return total;
}

}  // namespace rabbit::mpi::detail
