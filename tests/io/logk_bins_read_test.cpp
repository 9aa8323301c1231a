// FitInputReadOptions::logk_bins (docs/input-reader.md "Ranged reads"), MPI rank 0's read: everything
// of a full read except the logk of the observed bins [b1, nbins); the masked bins' logk follows that
// of bin b1 − 1, and the CSR rowptr stays complete. Checked against the full read of reference
// tensors with masked channels, dense and sparse.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "rabbit/io/fit_input_data.hpp"
#include "support/test_paths.hpp"

namespace {

std::string reference_tensor(const std::string& name) {
  return (rabbit::test::source_dir() / "tests/reference/tensors" / name).string();
}

void check_held_logk(const std::string& name) {
  const rabbit::FitInputData whole = rabbit::read_fit_input(reference_tensor(name));
  ASSERT_GT(whole.nbinsmasked, 0) << name;
  for (int64_t b1 : {int64_t{0}, whole.nbins / 3, whole.nbins}) {
    const rabbit::FitInputData part =
        rabbit::read_fit_input(reference_tensor(name), rabbit::FitInputReadOptions{.logk_bins = b1});
    EXPECT_EQ(part.logk_end, b1);
    EXPECT_EQ(part.norm, whole.norm);
    if (!whole.sparse) {
      // Rows of nproc × width values: bins [0, b1), then the masked bins.
      const size_t row = static_cast<size_t>(whole.nproc * whole.logk_width());
      std::vector<double> expected(whole.logk.begin(), whole.logk.begin() + b1 * row);
      expected.insert(expected.end(), whole.logk.begin() + whole.nbins * row, whole.logk.end());
      EXPECT_EQ(part.logk, expected) << name << " logk_bins " << b1;
    } else {
      const auto& full = whole.logk_sparse;
      EXPECT_EQ(part.logk_sparse.rowptr, full.rowptr);
      // The norm entries of bin b start at the first norm_index ≥ b·nproc.
      auto first_entry = [&](int64_t bin) {
        size_t e = 0;
        while (e < whole.norm_index.size() && whole.norm_index[e] < bin * whole.nproc) ++e;
        return full.rowptr[e];
      };
      const int64_t keep = first_entry(b1), masked = first_entry(whole.nbins);
      std::vector<double> values(full.values.begin(), full.values.begin() + keep);
      values.insert(values.end(), full.values.begin() + masked, full.values.end());
      std::vector<int32_t> cols(full.cols.begin(), full.cols.begin() + keep);
      cols.insert(cols.end(), full.cols.begin() + masked, full.cols.end());
      EXPECT_EQ(part.logk_sparse.values, values) << name << " logk_bins " << b1;
      EXPECT_EQ(part.logk_sparse.cols, cols) << name << " logk_bins " << b1;
    }
  }
}

TEST(LogkBinsRead, DenseHoldsItsBinsAndTheMaskedBins) {
  check_held_logk("dense.hdf5");
}

TEST(LogkBinsRead, SparseHoldsItsBinsAndTheMaskedBins) {
  check_held_logk("sparse_blosc2.hdf5");
}

}  // namespace
