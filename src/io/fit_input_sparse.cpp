// read_fit_input, sparse model tensors (docs/input-reader.md "Sparse model tensors", checklist item 9):
// hnorm_sparse becomes norm/norm_index, the two-level COO of hlogk_sparse becomes CSR over the norm
// entries. Both index lists are sorted row-major, so a range of bins is a contiguous range of norm
// entries, and those entries a contiguous range of logk entries: a ranged read finds both ranges by
// binary search over the stored indices (one index row read per probe) and reads only them
// (docs/input-reader.md "Ranged reads").
#include <algorithm>
#include <array>
#include <limits>

#include "fit_input_reader.hpp"

namespace rabbit::io {

using h5::DatasetInfo;
using h5::shape_to_string;

namespace {

// Rows of sparse index arrays read per block: bounds the temporary to 16 MiB.
constexpr int64_t kIndexBlockRows = int64_t{1} << 20;

// First entry in [0, nnz) whose row (first index) is >= row, assuming the canonical order that
// the entries of the range are then checked for; nnz if there is none.
int64_t first_entry_of_row(const h5::Reader& r, const h5::DatasetInfo& indices, int64_t nnz, int64_t row) {
  int64_t lo = 0, hi = nnz;
  int64_t pair[2];
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    r.read_ints_slab(indices, 0, mid, mid + 1, pair);
    if (pair[0] < row) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

// Streams the (row, col) index pairs of entries [first, last) block by block, checking bounds,
// rows within [row_lo, row_hi) and strict row-major order (docs/input-reader.md "Validation checklist" item
// 9).
template <typename Visit>
void scan_indices(const h5::Reader& r, const std::vector<int64_t>& dense_shape,
                  const h5::DatasetInfo& indices, int64_t first, int64_t last, int64_t row_lo, int64_t row_hi,
                  Visit&& visit) {
  const int64_t rows = dense_shape[0], cols = dense_shape[1];
  std::vector<int64_t> block;
  int64_t previous = -1;
  for (int64_t start = first; start < last; start += kIndexBlockRows) {
    const int64_t n = std::min(kIndexBlockRows, last - start);
    block.resize(static_cast<size_t>(2 * n));
    r.read_ints_slab(indices, 0, start, start + n, block.data());
    const int64_t* p = block.data();
    for (int64_t k = 0; k < n; ++k) {
      const int64_t row = p[2 * k], col = p[2 * k + 1];
      const int64_t m = start + k;
      if (row < 0 || row >= rows || col < 0 || col >= cols) {
        r.fail(indices.path, "row " + std::to_string(m) + " (" + std::to_string(row) + "," +
                                 std::to_string(col) + ") out of bounds for dense_shape " +
                                 shape_to_string(dense_shape));
      }
      const int64_t flat = row * cols + col;
      if (flat <= previous || row < row_lo || row >= row_hi) {
        r.fail(indices.path, "not in canonical row-major order at row " + std::to_string(m) +
                                 (flat == previous ? " (duplicate entry)" : ""));
      }
      previous = flat;
      visit(m, row, col, flat);
    }
  }
}

}  // namespace

FitInputReader::SparseGroup FitInputReader::open_sparse(const std::string& group) const {
  SparseGroup g;
  if (!r_.has_attribute(group, "dense_shape")) fail(group, "attribute 'dense_shape' missing");
  g.dense_shape = r_.read_int_attribute(group, "dense_shape");
  if (g.dense_shape.size() != 2 || g.dense_shape[0] < 0 || g.dense_shape[1] < 0) {
    fail(group,
         "attribute 'dense_shape' " + shape_to_string(g.dense_shape) + " must be two non-negative ints");
  }
  g.indices = int_info(group + "/indices");
  g.values = float_info(group + "/values");
  g.nnz = g.values.size;
  if (g.values.rank() != 1) fail(g.values.path, "must be 1-D [nnz], found shape " + g.values.shape_string());
  expect_shape(g.indices, {g.nnz, 2}, "[nnz, 2] with nnz = len(values)");
  return g;
}

void FitInputReader::read_sparse_tensors() {
  const SparseGroup norm = open_sparse("hnorm_sparse");
  if (norm.dense_shape[1] != d_.nproc) {
    fail("hnorm_sparse", "dense_shape " + shape_to_string(norm.dense_shape) +
                             " must be [nbinsfull, nproc=" + std::to_string(d_.nproc) + "]");
  }
  set_nbinsfull(norm.dense_shape[0], "hnorm_sparse");
  const SparseGroup logk = open_sparse("hlogk_sparse");
  const std::vector<int64_t> logk_dense{norm.nnz, d_.logk_width()};
  if (logk.dense_shape != logk_dense) {
    fail("hlogk_sparse", "dense_shape " + shape_to_string(logk.dense_shape) + " must be " +
                             shape_to_string(logk_dense) + " = [nnz of hnorm_sparse, " +
                             (d_.symmetric_tensor ? "nsyst" : "2*nsyst") + "] (meta symmetric_tensor=" +
                             (d_.symmetric_tensor ? "true" : "false") + "; is the flag wrong?)");
  }
  if (d_.logk_width() > std::numeric_limits<int32_t>::max()) {
    fail("hlogk_sparse", "more than 2^31 logk columns");
  }
  // The norm entries [k0, k1) of the held bins, and the logk entries [m0, m1) of those.
  int64_t k0 = 0, k1 = norm.nnz, m0 = 0, m1 = logk.nnz;
  if (d_.ranged) {
    k0 = first_entry_of_row(r_, norm.indices, norm.nnz, row_begin_);
    k1 = first_entry_of_row(r_, norm.indices, norm.nnz, row_end_);
    m0 = first_entry_of_row(r_, logk.indices, logk.nnz, k0);
    m1 = first_entry_of_row(r_, logk.indices, logk.nnz, k1);
  }
  // FitInputReadOptions::logk_bins: the columns and values of the logk entries [m0, m_keep) and of
  // the masked bins' entries [m_masked, m1) only, stored one after the other.
  auto first_logk_entry_of_bin = [&](int64_t bin) {
    return first_entry_of_row(r_, logk.indices, logk.nnz,
                              first_entry_of_row(r_, norm.indices, norm.nnz, bin));
  };
  const int64_t m_keep = logk_row_end() < row_end_ ? first_logk_entry_of_bin(logk_row_end()) : m1;
  const auto [masked_begin, masked_end] = masked_logk_rows();
  const int64_t m_masked = masked_end > masked_begin ? first_logk_entry_of_bin(masked_begin) : m1;
  const int64_t held_norm = k1 - k0, held_logk = (m_keep - m0) + (m1 - m_masked);
  // Flat indices relative to the first held bin (docs/input-reader.md "Ranged reads").
  const int64_t flat_offset = row_begin_ * d_.nproc;
  d_.norm_index.resize(static_cast<size_t>(held_norm));
  scan_indices(r_, norm.dense_shape, norm.indices, k0, k1, row_begin_, row_end_,
               [&](int64_t m, int64_t, int64_t, int64_t flat) {
                 d_.norm_index[static_cast<size_t>(m - k0)] = flat - flat_offset;
               });
  d_.norm = read_slab_checked(norm.values, 0, k0, k1);
  warn_negative_norm(d_.norm.data(), d_.norm_index.data(), held_norm);

  // COO (norm entry, column) in row-major order -> CSR over the held norm entries.
  SparseLogk& csr = d_.logk_sparse;
  csr.rowptr.assign(static_cast<size_t>(held_norm + 1), 0);
  csr.cols.resize(static_cast<size_t>(held_logk));
  scan_indices(r_, logk.dense_shape, logk.indices, m0, m1, k0, k1,
               [&](int64_t m, int64_t row, int64_t col, int64_t) {
                 csr.rowptr[static_cast<size_t>(row - k0 + 1)]++;
                 if (m < m_keep)
                   csr.cols[static_cast<size_t>(m - m0)] = static_cast<int32_t>(col);
                 else if (m >= m_masked)
                   csr.cols[static_cast<size_t>(m - m0 - (m_masked - m_keep))] = static_cast<int32_t>(col);
               });
  for (int64_t i = 0; i < held_norm; ++i) {
    csr.rowptr[static_cast<size_t>(i + 1)] += csr.rowptr[static_cast<size_t>(i)];
  }
  // Both value ranges straight into the one array (no copy: this is the tensor), held as float32
  // when the file's are and the reader was asked to keep them (docs/input-reader.md "Precision").
  const bool f32 = hold_float32(logk.values);
  d_.logk_float32 = f32;
  if (f32)
    csr.values_f32.resize(static_cast<size_t>(held_logk));
  else
    csr.values.resize(static_cast<size_t>(held_logk));
  const std::array<std::array<int64_t, 3>, 2> slabs{{{m0, m_keep, 0}, {m_masked, m1, m_keep - m0}}};
  for (const auto& [begin, end, at] : slabs) {
    if (end <= begin) continue;
    if (f32) {
      r_.read_floats_slab(logk.values, 0, begin, end, csr.values_f32.data() + at);
      check_finite(logk.values.path, csr.values_f32.data() + at, end - begin, logk.values.shape, 0, begin);
    } else {
      r_.read_doubles_slab(logk.values, 0, begin, end, csr.values.data() + at);
      check_finite(logk.values.path, csr.values.data() + at, end - begin, logk.values.shape, 0, begin);
    }
  }
}

}  // namespace rabbit::io
