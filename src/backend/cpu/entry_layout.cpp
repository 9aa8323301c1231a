#include "entry_layout.hpp"

#include <fmt/format.h>

#include "rabbit/core/error.hpp"

namespace rabbit::cpu_detail {

EntryLayout EntryLayout::build(const FitInputData& in) {
  EntryLayout L;
  L.in = &in;
  L.sparse = in.sparse;
  L.symmetric = in.symmetric_tensor;
  L.lognormal = in.systematic_type == SystematicType::log_normal;
  L.W = in.logk_width();
  L.S = in.nsyst;
  L.float32 = in.logk_float32;
  if (L.float32)
    L.values32 = in.sparse ? in.logk_sparse.values_f32.data() : in.logk_f32.data();
  else
    L.values64 = in.sparse ? in.logk_sparse.values.data() : in.logk.data();
  const int64_t nbinsfull = in.nbinsfull, nproc = in.nproc;
  L.bin_ptr.assign(nbinsfull + 1, 0);
  if (!L.sparse) {
    for (int64_t b = 0; b <= nbinsfull; ++b) L.bin_ptr[b] = b * nproc;
    L.entry_proc.resize(nbinsfull * nproc);
    L.entry_flat.resize(nbinsfull * nproc);
    for (int64_t e = 0; e < nbinsfull * nproc; ++e) {
      L.entry_proc[e] = static_cast<int32_t>(e % nproc);
      L.entry_flat[e] = e;
    }
  } else {
    const int64_t nnz = static_cast<int64_t>(in.norm_index.size());
    L.entry_proc.resize(nnz);
    L.entry_flat = in.norm_index;
    int64_t e = 0;
    for (int64_t b = 0; b < nbinsfull; ++b) {
      L.bin_ptr[b] = e;
      while (e < nnz && in.norm_index[e] / nproc == b) {
        L.entry_proc[e] = static_cast<int32_t>(in.norm_index[e] % nproc);
        ++e;
      }
    }
    L.bin_ptr[nbinsfull] = nnz;
    if (e != nnz)
      throw InputError(fmt::format("{}: hnorm_sparse indices are not sorted by bin", in.filename));
  }
  if (in.logk_end >= 0 && in.logk_end < in.nbins && !in.ranged) {
    L.gap_entry = L.bin_ptr[in.nbins];
    const int64_t first_missing = L.bin_ptr[in.logk_end];
    L.gap = L.sparse ? in.logk_sparse.rowptr[L.gap_entry] - in.logk_sparse.rowptr[first_missing]
                     : (L.gap_entry - first_missing) * L.W;
  }
  return L;
}

}  // namespace rabbit::cpu_detail
