// The host mirrors of the whole-GPU reductions (fixed_order_sum.hpp) and of the load-balanced sparse
// products (csr_segments.hpp), which run the kernels' order on the host, against plain loops: sizes
// not divisible by the lane, chunk or segment sizes, empty inputs, rows with no and with very many
// non-zeros.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "rabbit/backend/cuda/csr_segments.hpp"
#include "rabbit/backend/cuda/fixed_order_sum.hpp"

namespace rabbit {
namespace {

using pipeline::CsrSegmentPlan;
using pipeline::CsrSegments;

TEST(FixedOrderSum, EqualsPlainLoopForSizesAcrossLanesAndChunks) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(-1.0, 2.0);
  for (int64_t nbins : {0, 1, 255, 256, 257, 2047, 2048, 2049, 4096, 5001, 20011}) {
    for (int nproc : {1, 3}) {
      const int k = 2;
      const int64_t ld = nbins * nproc + 5;  // a leading dimension larger than the column
      std::vector<double> in(ld * k);
      for (double& v : in) v = u(rng);
      std::vector<double> out(nproc * k, std::numeric_limits<double>::quiet_NaN());
      pipeline::fixed_order_sum_over_bins(in.data(), nbins, nproc, ld, k, out.data());
      for (int j = 0; j < k; ++j)
        for (int p = 0; p < nproc; ++p) {
          double plain = 0, scale = 0;
          for (int64_t b = 0; b < nbins; ++b) {
            plain += in[b * nproc + p + ld * j];
            scale += std::abs(in[b * nproc + p + ld * j]);
          }
          EXPECT_NEAR(out[p + nproc * j], plain, 1e-14 * (1 + scale))
              << nbins << " bins, p " << p << ", j " << j;
        }
    }
  }
}

TEST(FixedOrderSum, ChunksAndLanesFollowTheDocumentedOrder) {
  // Three chunks with partials {3, 2^53, -2^53}: stage 2 holds them in lanes 0, 1, 2 and its tree adds
  // (3 - 2^53) + 2^53 = 3 exactly, where a left-to-right sum rounds 3 + 2^53 to 2^53 + 4 and gives 4.
  const int64_t nbins = 3 * pipeline::kSumChunk;
  std::vector<double> in(nbins, 0.0);
  const double big = 9007199254740992.0;  // 2^53
  in[0] = 3.0;
  in[pipeline::kSumChunk + 1] = big;
  in[2 * pipeline::kSumChunk] = -big;
  double out = 0;
  pipeline::fixed_order_sum_over_bins(in.data(), nbins, 1, nbins, 1, &out);
  EXPECT_EQ(out, 3.0);
}

// A random CSR matrix: row lengths drawn from `lengths` (0 and very long rows included).
struct Csr {
  std::vector<int64_t> rowptr{0};
  std::vector<int32_t> cols;
  std::vector<double> vals;
};
Csr random_csr(const std::vector<int64_t>& lengths, int64_t width, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int32_t> col(0, static_cast<int32_t>(width - 1));
  std::uniform_real_distribution<double> val(-1.0, 1.0);
  Csr m;
  for (int64_t len : lengths) {
    for (int64_t a = 0; a < len; ++a) {
      m.cols.push_back(col(rng));
      m.vals.push_back(val(rng));
    }
    m.rowptr.push_back(static_cast<int64_t>(m.cols.size()));
  }
  return m;
}

CsrSegments view(const CsrSegmentPlan& p) {
  return {p.rows,
          p.segments(),
          p.nslots,
          p.long_rows(),
          p.nz_begin.data(),
          p.row_begin.data(),
          p.row_end.data(),
          p.slot.data(),
          p.long_row.data(),
          p.long_slot.data()};
}

// y = A·x by the two passes of sparse_kernels.cu, y and the partials NaN-filled first.
std::vector<double> segmented_multiply(const Csr& m, const CsrSegmentPlan& plan, int64_t width,
                                       const std::vector<double>& x, int k) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<double> y(plan.rows * k, nan), partial(std::max<int64_t>(1, plan.nslots * k), nan);
  const CsrSegments g = view(plan);
  for (int64_t t = 0; t < g.nseg * k; ++t)
    pipeline::csr_segment(t, g, width, m.rowptr.data(), m.cols.data(), m.vals.data(), x.data(), y.data(),
                          partial.data());
  for (int64_t t = 0; t < g.nlong * k; ++t) pipeline::csr_combine(t, g, partial.data(), y.data());
  return y;
}

TEST(CsrSegments, EqualPlainLoopForUnevenRows) {
  const int64_t width = 37;
  const int k = 3;
  // Empty rows (first, last, runs), rows at and around the target, very long rows.
  const std::vector<std::vector<int64_t>> shapes = {
      {},
      {0, 0, 0},
      {0, 5, 31, 32, 33, 0, 0, 1, 64, 65, 0},
      {20000, 0, 3, 4099, 1, 0},
      std::vector<int64_t>(300, 0),
      std::vector<int64_t>(1000, 7),
  };
  int which = 0;
  for (const auto& lengths : shapes) {
    for (int64_t target : {int64_t(4), int64_t(32), pipeline::segment_target(0)}) {
      const Csr m = random_csr(lengths, width, 11 + which);
      const CsrSegmentPlan plan = pipeline::plan_csr_segments(m.rowptr, target);
      std::vector<double> x(width * k);
      for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.37 * i) + 0.1;
      const std::vector<double> y = segmented_multiply(m, plan, width, x, k);
      ASSERT_EQ(static_cast<int64_t>(y.size()), static_cast<int64_t>(lengths.size()) * k);
      for (int j = 0; j < k; ++j)
        for (size_t r = 0; r < lengths.size(); ++r) {
          double plain = 0, scale = 0;
          for (int64_t a = m.rowptr[r]; a < m.rowptr[r + 1]; ++a) {
            plain += m.vals[a] * x[m.cols[a] + width * j];
            scale += std::abs(m.vals[a] * x[m.cols[a] + width * j]);
          }
          const double got = y[r + lengths.size() * j];
          // A short row is summed whole in CSR order: bitwise the plain loop's sum.
          if (lengths[r] <= target)
            EXPECT_EQ(got, plain) << "shape " << which << ", target " << target << ", row " << r;
          else
            EXPECT_NEAR(got, plain, 1e-13 * (1 + scale)) << "shape " << which << ", row " << r;
        }
      // Every segment holds at most `target` non-zeros, and every row is written exactly once.
      for (int64_t s = 0; s < plan.segments(); ++s)
        EXPECT_LE(plan.nz_begin[s + 1] - plan.nz_begin[s], target);
    }
    ++which;
  }
}

TEST(CsrSegments, LongRowsAreSplitAcrossManySegments) {
  // One systematic touching 200,000 entries, one touching 3: the long row is cut into pieces so
  // that the work of a product is spread over many threads.
  const Csr m = random_csr({200000, 3}, 5, 3);
  const int64_t target = 32;
  const CsrSegmentPlan plan = pipeline::plan_csr_segments(m.rowptr, target);
  EXPECT_EQ(plan.long_rows(), 1);
  EXPECT_EQ(plan.nslots, 200000 / target);
  EXPECT_EQ(plan.segments(), plan.nslots + 1);
  // segment_target keeps the slot count near 2^17 whatever the size.
  EXPECT_EQ(pipeline::segment_target(1000), 32);
  EXPECT_EQ(pipeline::segment_target(int64_t(1) << 30), int64_t(1) << 13);
}

}  // namespace
}  // namespace rabbit
