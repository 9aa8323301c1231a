// The dense bin-block products (src/backend/cpu/row_block_products.hpp), for float32 and double rows,
// against sums in long double, for row counts around the register block and widths around the lane
// count and the prefetch segment, with strided operands and with a next block to prefetch; and a
// row's result does not depend on the rows it shares a register block with (docs/likelihood.md
// "Threads": fixed summation order).
#include "src/backend/cpu/row_block_products.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace rabbit {
namespace {

namespace rb = cpu_detail::row_blocks;

// A rounding error bound relative to the sum of |terms|: at most 2003 / kLanes + 8 additions in one
// chain, each within 2^-53 (the test's rows are summed in long double); a wrong element or index is
// off by O(1).
constexpr double kBound = 3e-14;

template <class T>
struct Operands {
  int64_t ne, W, ncols, ld_pad;
  std::vector<T> K;        // ne × W row-major
  std::vector<double> X;   // W × ncols, column stride W + ld_pad
  std::vector<double> w;   // ne × ncols, column stride ne + ld_pad
  std::vector<double> Y0;  // W × ncols, column stride W + ld_pad
};

template <class T>
Operands<T> make_operands(int64_t ne, int64_t W, int64_t ncols, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> uni(-1.0, 1.0);
  Operands<T> o{ne, W, ncols, 3, {}, {}, {}, {}};
  for (int64_t i = 0; i < ne * W; ++i) o.K.push_back(static_cast<T>(uni(rng)));
  for (int64_t i = 0; i < (W + o.ld_pad) * ncols; ++i) o.X.push_back(uni(rng));
  for (int64_t i = 0; i < (ne + o.ld_pad) * ncols; ++i) o.w.push_back(uni(rng));
  for (int64_t i = 0; i < (W + o.ld_pad) * ncols; ++i) o.Y0.push_back(uni(rng));
  return o;
}

/// `got` against start + Σ_i k[i·kstride]·x[i] summed in long double, within kBound of the sum of
/// |terms| (|start| included).
template <class T>
testing::AssertionResult near_exact_sum(double got, double start, const T* k, int64_t kstride,
                                        const double* x, int64_t n) {
  long double exact = start, magnitude = std::abs(start);
  for (int64_t i = 0; i < n; ++i) {
    const long double t = static_cast<long double>(k[i * kstride]) * x[i];
    exact += t;
    magnitude += std::abs(t);
  }
  const double err = std::abs(got - static_cast<double>(exact));
  if (err <= kBound * static_cast<double>(magnitude)) return testing::AssertionSuccess();
  return testing::AssertionFailure() << got << " against " << static_cast<double>(exact) << " (error " << err
                                     << ")";
}

template <class T>
class RowBlockProducts : public testing::Test {};
using Storages = testing::Types<float, double>;
TYPED_TEST_SUITE(RowBlockProducts, Storages);

TYPED_TEST(RowBlockProducts, RowsTimesMatchesLongDoubleSums) {
  for (int64_t ne : {1, 3, 4, 5, 9}) {
    for (int64_t W : {1, 7, 8, 13, 16, 17, 33, 2003}) {
      for (int64_t ncols : {1, 3}) {
        SCOPED_TRACE(testing::Message() << ne << " rows, width " << W << ", " << ncols << " columns");
        const auto o = make_operands<TypeParam>(ne, W, ncols, static_cast<unsigned>(ne * 1000 + W + ncols));
        const int64_t ldx = W + o.ld_pad, ldo = ne + o.ld_pad;
        std::vector<double> out(ldo * ncols, -7.0);
        rb::rows_times(o.K.data(), ne, W, o.X.data(), ldx, ncols, out.data(), ldo);
        for (int64_t j = 0; j < ncols; ++j) {
          for (int64_t r = 0; r < ne; ++r)
            EXPECT_TRUE(near_exact_sum(out[j * ldo + r], 0.0, o.K.data() + r * W, 1, o.X.data() + j * ldx, W))
                << "row " << r << " column " << j;
          for (int64_t r = ne; r < ldo; ++r) EXPECT_EQ(out[j * ldo + r], -7.0) << "padding written";
        }
      }
    }
  }
}

TYPED_TEST(RowBlockProducts, RowResultDoesNotDependOnItsRegisterBlock) {
  const int64_t W = 203;
  const auto o = make_operands<TypeParam>(9, W, 1, 5);
  std::vector<double> all(9), one(1);
  rb::rows_times(o.K.data(), 9, W, o.X.data(), W, 1, all.data(), 9);
  for (int64_t r = 0; r < 9; ++r) {
    rb::rows_times(o.K.data() + r * W, 1, W, o.X.data(), W, 1, one.data(), 1);
    EXPECT_EQ(one[0], all[r]) << "row " << r;
  }
}

TYPED_TEST(RowBlockProducts, TransposeTimesAddMatchesLongDoubleSums) {
  for (int64_t ne : {1, 3, 4, 5, 9}) {
    for (int64_t W : {1, 7, 8, 13, 16, 17, 33, 2003}) {
      for (int64_t ncols : {1, 3}) {
        SCOPED_TRACE(testing::Message() << ne << " rows, width " << W << ", " << ncols << " columns");
        const auto o = make_operands<TypeParam>(ne, W, ncols, static_cast<unsigned>(ne * 7 + W * 3 + ncols));
        const int64_t ldw = ne + o.ld_pad, ldy = W + o.ld_pad;
        std::vector<double> Y = o.Y0;
        // the "next block" is the operand's own rows: prefetching changes no value
        rb::rows_transpose_times_add(
            o.K.data(), ne, W, o.w.data(), ldw, ncols, Y.data(), ldy,
            rb::NextBlock(o.K.data(), ne * W * static_cast<int64_t>(sizeof(TypeParam))));
        for (int64_t j = 0; j < ncols; ++j) {
          for (int64_t c = 0; c < W; ++c)
            EXPECT_TRUE(near_exact_sum(Y[j * ldy + c], o.Y0[j * ldy + c], o.K.data() + c, W,
                                       o.w.data() + j * ldw, ne))
                << "column " << c << " of " << j;
          for (int64_t c = W; c < ldy; ++c) EXPECT_EQ(Y[j * ldy + c], o.Y0[j * ldy + c]) << "padding written";
        }
      }
    }
  }
}

}  // namespace
}  // namespace rabbit
