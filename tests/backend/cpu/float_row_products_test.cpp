// The dense float32 bin-block products (src/backend/cpu/float_row_products.hpp) against sums in long
// double, for row counts around the register block and widths around the lane count, with strided
// operands; and a row's result does not depend on the rows it shares a register block with
// (docs/likelihood.md "Threads": fixed summation order).
#include "src/backend/cpu/float_row_products.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace rabbit {
namespace {

namespace fr = cpu_detail::float_rows;

// A rounding error bound relative to the sum of |terms|: at most 2003 / kLanes + 8 additions in one
// chain, each within 2^-53 (the test's rows are summed in long double); a wrong element or index is
// off by O(1).
constexpr double kBound = 3e-14;

struct Operands {
  int64_t ne, W, ncols, ld_pad;
  std::vector<float> K;    // ne × W row-major
  std::vector<double> X;   // W × ncols, column stride W + ld_pad
  std::vector<double> w;   // ne × ncols, column stride ne + ld_pad
  std::vector<double> Y0;  // W × ncols, column stride W + ld_pad
};

Operands make_operands(int64_t ne, int64_t W, int64_t ncols, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> uni(-1.0, 1.0);
  Operands o{ne, W, ncols, 3, {}, {}, {}, {}};
  for (int64_t i = 0; i < ne * W; ++i) o.K.push_back(static_cast<float>(uni(rng)));
  for (int64_t i = 0; i < (W + o.ld_pad) * ncols; ++i) o.X.push_back(uni(rng));
  for (int64_t i = 0; i < (ne + o.ld_pad) * ncols; ++i) o.w.push_back(uni(rng));
  for (int64_t i = 0; i < (W + o.ld_pad) * ncols; ++i) o.Y0.push_back(uni(rng));
  return o;
}

TEST(FloatRowProducts, RowsTimesMatchesLongDoubleSums) {
  for (int64_t ne : {1, 3, 4, 5, 9}) {
    for (int64_t W : {1, 7, 8, 13, 2003}) {
      for (int64_t ncols : {1, 3}) {
        SCOPED_TRACE(testing::Message() << ne << " rows, width " << W << ", " << ncols << " columns");
        const Operands o = make_operands(ne, W, ncols, static_cast<unsigned>(ne * 1000 + W + ncols));
        const int64_t ldx = W + o.ld_pad, ldo = ne + o.ld_pad;
        std::vector<double> out(ldo * ncols, -7.0);
        fr::rows_times(o.K.data(), ne, W, o.X.data(), ldx, ncols, out.data(), ldo);
        for (int64_t j = 0; j < ncols; ++j) {
          for (int64_t r = 0; r < ne; ++r) {
            long double exact = 0, magnitude = 0;
            for (int64_t c = 0; c < W; ++c) {
              const long double t = static_cast<long double>(o.K[r * W + c]) * o.X[j * ldx + c];
              exact += t;
              magnitude += std::abs(t);
            }
            EXPECT_LE(std::abs(out[j * ldo + r] - static_cast<double>(exact)),
                      kBound * static_cast<double>(magnitude))
                << "row " << r << " column " << j;
          }
          for (int64_t r = ne; r < ldo; ++r) EXPECT_EQ(out[j * ldo + r], -7.0) << "padding written";
        }
      }
    }
  }
}

TEST(FloatRowProducts, RowResultDoesNotDependOnItsRegisterBlock) {
  const int64_t W = 203;
  const Operands o = make_operands(9, W, 1, 5);
  std::vector<double> all(9), one(1);
  fr::rows_times(o.K.data(), 9, W, o.X.data(), W, 1, all.data(), 9);
  for (int64_t r = 0; r < 9; ++r) {
    fr::rows_times(o.K.data() + r * W, 1, W, o.X.data(), W, 1, one.data(), 1);
    EXPECT_EQ(one[0], all[r]) << "row " << r;
  }
}

TEST(FloatRowProducts, TransposeTimesAddMatchesLongDoubleSums) {
  for (int64_t ne : {1, 3, 4, 5, 9}) {
    for (int64_t W : {1, 7, 8, 13, 2003}) {
      for (int64_t ncols : {1, 3}) {
        SCOPED_TRACE(testing::Message() << ne << " rows, width " << W << ", " << ncols << " columns");
        const Operands o = make_operands(ne, W, ncols, static_cast<unsigned>(ne * 7 + W * 3 + ncols));
        const int64_t ldw = ne + o.ld_pad, ldy = W + o.ld_pad;
        std::vector<double> Y = o.Y0;
        fr::rows_transpose_times_add(o.K.data(), ne, W, o.w.data(), ldw, ncols, Y.data(), ldy);
        for (int64_t j = 0; j < ncols; ++j) {
          for (int64_t c = 0; c < W; ++c) {
            long double exact = o.Y0[j * ldy + c], magnitude = std::abs(o.Y0[j * ldy + c]);
            for (int64_t r = 0; r < ne; ++r) {
              const long double t = static_cast<long double>(o.K[r * W + c]) * o.w[j * ldw + r];
              exact += t;
              magnitude += std::abs(t);
            }
            EXPECT_LE(std::abs(Y[j * ldy + c] - static_cast<double>(exact)),
                      kBound * static_cast<double>(magnitude))
                << "column " << c << " of " << j;
          }
          for (int64_t c = W; c < ldy; ++c) EXPECT_EQ(Y[j * ldy + c], o.Y0[j * ldy + c]) << "padding written";
        }
      }
    }
  }
}

}  // namespace
}  // namespace rabbit
