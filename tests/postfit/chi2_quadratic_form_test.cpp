// The linear chi2's low-rank form (src/postfit/chi2_quadratic_form.cpp; docs/output-format.md "Cost of the
// chi2 with many bins") against the dense V of the same terms, and the thread-parallel products
// (src/postfit/parallel_products.cpp) against Eigen's and across thread counts.
#include "../../src/postfit/chi2_quadratic_form.hpp"

#include <gtest/gtest.h>

#include <Eigen/Cholesky>
#include <Eigen/LU>
#include <optional>
#include <random>
#include <utility>
#include <vector>

#include "../../src/postfit/parallel_products.hpp"
#include "rabbit/core/error.hpp"

namespace rabbit::testing {
namespace {

using Eigen::MatrixXd;
using Eigen::VectorXd;
using postfit::DiagonalPlusLowRank;
using postfit::LinearChi2Terms;
using postfit::ParallelProducts;

struct Inputs {
  MatrixXd J, C, JC, B;
  VectorXd beta_var, vn, w, cw, s, r;
  Eigen::SparseMatrix<double> D;
};

// nobs bins, npar parameters, entries_per_bin BB entries per bin (1: lite, P: full).
Inputs make_inputs(int64_t nobs, int64_t npar, int64_t entries_per_bin, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0), pos(0.5, 2.0);
  auto random = [&](int64_t r, int64_t c) {
    return MatrixXd(MatrixXd::NullaryExpr(r, c, [&] { return u(gen); }));
  };
  auto positive = [&](int64_t n) { return VectorXd(VectorXd::NullaryExpr(n, [&] { return pos(gen); })); };
  Inputs in;
  in.J = 10.0 * random(nobs, npar);
  const MatrixXd L = random(npar, npar);
  in.C = 0.01 * (L * L.transpose() + MatrixXd::Identity(npar, npar));
  in.JC = in.J * in.C;
  const int64_t ne = nobs * entries_per_bin;
  in.B = 0.1 * random(ne, npar);
  in.beta_var = positive(nobs);
  in.vn = 100.0 * positive(nobs);
  in.w = in.vn.cwiseInverse().cwiseProduct(positive(nobs));
  in.cw = positive(npar);
  in.cw(0) = 0.0;  // an unconstrained parameter
  in.s = positive(ne);
  std::vector<Eigen::Triplet<double>> d;
  for (int64_t b = 0; b < nobs; ++b)
    for (int64_t p = 0; p < entries_per_bin; ++p) d.emplace_back(b, b * entries_per_bin + p, u(gen));
  in.D.resize(nobs, ne);
  in.D.setFromTriplets(d.begin(), d.end());
  in.r = 10.0 * random(nobs, 1);
  return in;
}

// V from its definition (chi2_quadratic_form.hpp LinearChi2Terms), as the dense chi2 builds it.
MatrixXd dense_v(const Inputs& in, bool postfit) {
  const int64_t nobs = in.J.rows();
  MatrixXd covpred = in.JC * in.J.transpose();
  covpred.diagonal() += in.beta_var;
  if (!postfit) return MatrixXd(covpred + MatrixXd(in.vn.asDiagonal()));
  const MatrixXd Rn = covpred * in.w.asDiagonal() - MatrixXd::Identity(nobs, nobs);
  const MatrixXd Rb = in.JC * in.B.transpose() + MatrixXd(in.D);
  return in.JC * in.cw.asDiagonal() * in.JC.transpose() + Rn * in.vn.asDiagonal() * Rn.transpose() +
         Rb * in.s.asDiagonal() * Rb.transpose();
}

LinearChi2Terms postfit_terms(const Inputs& in, bool with_b) {
  LinearChi2Terms t;
  t.postfit = true;
  t.J = &in.J;
  t.C = &in.C;
  t.JC = &in.JC;
  t.beta_var = in.beta_var;
  t.data_var = in.vn;
  t.w = in.w;
  t.cw = in.cw;
  if (with_b) {
    t.B = &in.B;
    t.s = in.s;
    t.D = in.D;
  }
  return t;
}

DiagonalPlusLowRank low_rank_v(const Inputs& in, bool postfit, ParallelProducts& prod) {
  LinearChi2Terms t = postfit_terms(in, true);
  t.postfit = postfit;
  return postfit::linear_chi2_low_rank(t, prod);
}

double dense_chi2_of(const Inputs& in) {
  const MatrixXd V = dense_v(in, true);
  return in.r.dot(Eigen::LDLT<MatrixXd>(V).solve(in.r));
}

TEST(LinearChi2LowRank, EqualsTheDenseCovariance) {
  for (int64_t entries_per_bin : {1, 3}) {
    SCOPED_TRACE(::testing::Message() << "entries per bin " << entries_per_bin);
    const Inputs in = make_inputs(60, 4, entries_per_bin, 7);
    ParallelProducts prod(2);
    const DiagonalPlusLowRank lr = low_rank_v(in, true, prod);
    const MatrixXd V = dense_v(in, true);
    const MatrixXd Vlr = MatrixXd(lr.delta.asDiagonal()) + lr.U * postfit::middle(lr) * lr.U.transpose();
    EXPECT_LT((Vlr - V).cwiseAbs().maxCoeff(), 1e-10 * V.cwiseAbs().maxCoeff());
    EXPECT_LT((postfit::diagonal(lr) - V.diagonal()).cwiseAbs().maxCoeff(), 1e-10 * V.diagonal().maxCoeff());
    const double dense = in.r.dot(Eigen::LDLT<MatrixXd>(V).solve(in.r));
    EXPECT_NEAR(postfit::quadratic_form(lr, in.r, prod), dense, 1e-10 * dense);
    // the prefit form: not through linear_chi2_low_rank
    EXPECT_THROW(low_rank_v(in, false, prod), Error);
  }
}

TEST(LinearChi2LowRank, PrefitEqualsTheDenseChi2) {
  Inputs in = make_inputs(60, 4, 1, 7);
  const MatrixXd dense_cov = in.C, diagonal_cov = MatrixXd(in.C.diagonal().asDiagonal());
  for (const MatrixXd* C : {&dense_cov, &diagonal_cov}) {
    in.C = *C;
    in.JC = in.J * in.C;
    const MatrixXd V = dense_v(in, false);
    const double dense = in.r.dot(Eigen::LDLT<MatrixXd>(V).solve(in.r));
    ParallelProducts prod(2);
    LinearChi2Terms t = postfit_terms(in, false);
    t.postfit = false;
    const std::optional<double> c = postfit::prefit_chi2(t, in.r, prod);
    ASSERT_TRUE(c.has_value());
    EXPECT_NEAR(*c, dense, 1e-10 * dense);
    t.data_var(3) = -t.beta_var(3);  // a zero diagonal entry: not this form
    EXPECT_FALSE(postfit::prefit_chi2(t, in.r, prod).has_value());
  }
}

TEST(LinearChi2LowRank, ProportionalRowsGiveTheDenseChi2) {
  // Lite bin-by-bin statistics whose β̂ follows the bin's yield: B = diag(h) J, D diagonal; a bin with
  // J's row 0 (and so B's).
  Inputs in = make_inputs(60, 4, 1, 11);
  in.J.row(9).setZero();
  in.JC = in.J * in.C;
  const VectorXd h = 0.05 * VectorXd::LinSpaced(in.J.rows(), -1.0, 2.0);
  in.B = h.asDiagonal() * in.J;
  ParallelProducts prod(2);
  const std::optional<double> lite = postfit::proportional_rows_chi2(postfit_terms(in, true), in.r, prod);
  ASSERT_TRUE(lite.has_value());
  EXPECT_NEAR(*lite, dense_chi2_of(in), 1e-10 * dense_chi2_of(in));
  // The gains given (B not read, not even present) give the same value.
  LinearChi2Terms given = postfit_terms(in, true);
  given.B = nullptr;
  given.h = h;
  given.JC = nullptr;  // not read by this form (histograms.cpp builds J C only for the general one)
  const std::optional<double> from_gains = postfit::proportional_rows_chi2(given, in.r, prod);
  ASSERT_TRUE(from_gains.has_value());
  EXPECT_NEAR(*from_gains, *lite, 1e-12 * *lite);
  // The general postfit form of the same terms gives the same value.
  EXPECT_NEAR(*lite, postfit::quadratic_form(low_rank_v(in, true, prod), in.r, prod), 1e-10 * *lite);
  // A parameter of zero variance (zero row and column of C), and a C not exactly symmetric (an external
  // covariance): the dense chi2 of the same J C.
  for (bool symmetric : {true, false}) {
    Inputs odd = in;
    odd.C.row(1).setZero();
    odd.C.col(1).setZero();
    if (!symmetric) odd.C(3, 0) *= 1.5;
    odd.JC = odd.J * odd.C;
    LinearChi2Terms ot = postfit_terms(odd, true);
    ot.JC = nullptr;  // not read by this form (histograms.cpp builds J C only for the general one)
    const std::optional<double> c = postfit::proportional_rows_chi2(ot, odd.r, prod);
    ASSERT_TRUE(c.has_value());
    EXPECT_NEAR(*c, dense_chi2_of(odd), 1e-10 * dense_chi2_of(odd)) << "symmetric " << symmetric;
  }
  // Without bin-by-bin statistics: no B, D, d_β.
  Inputs nobb = in;
  nobb.B.setZero();
  nobb.D.setZero();
  nobb.beta_var.setZero();
  LinearChi2Terms t = postfit_terms(nobb, false);
  t.beta_var.resize(0);
  const std::optional<double> plain = postfit::proportional_rows_chi2(t, nobb.r, prod);
  ASSERT_TRUE(plain.has_value());
  EXPECT_NEAR(*plain, dense_chi2_of(nobb), 1e-10 * dense_chi2_of(nobb));
  // One row of B off its multiple of J by 1e-6: not this form.
  Inputs off = in;
  off.B(17, 2) *= 1.0 + 1e-6;
  EXPECT_FALSE(postfit::proportional_rows_chi2(postfit_terms(off, true), off.r, prod).has_value());
}

TEST(LinearChi2LowRank, ProportionalRowsOnlyWhereTheyAre) {
  ParallelProducts prod(2);
  // Random B (lite layout), full mode (three entries per bin), the prefit form: empty.
  const Inputs lite = make_inputs(60, 4, 1, 7), full = make_inputs(60, 4, 3, 7);
  EXPECT_FALSE(postfit::proportional_rows_chi2(postfit_terms(lite, true), lite.r, prod).has_value());
  EXPECT_FALSE(postfit::proportional_rows_chi2(postfit_terms(full, true), full.r, prod).has_value());
  LinearChi2Terms prefit = postfit_terms(lite, false);
  prefit.postfit = false;
  EXPECT_FALSE(postfit::proportional_rows_chi2(prefit, lite.r, prod).has_value());
}

TEST(LinearChi2LowRank, PaysForManyBinsOnly) {
  EXPECT_TRUE(postfit::linear_chi2_low_rank_pays(10000, 500, true));
  EXPECT_TRUE(postfit::linear_chi2_low_rank_pays(4000, 200, false));
  EXPECT_FALSE(postfit::linear_chi2_low_rank_pays(3000, 3011, true));
  EXPECT_FALSE(postfit::linear_chi2_low_rank_pays(10, 50, false));
}

TEST(ParallelProducts, SameBitsForEveryThreadCountAndEigensValues) {
  const Inputs in = make_inputs(1000, 70, 1, 3);
  const MatrixXd A = in.J, Bm = in.C;
  const VectorXd d = in.vn;
  std::vector<MatrixXd> prods, tprods, grams;
  for (int threads : {1, 2, 3}) {
    ParallelProducts prod(threads);
    prods.push_back(prod.product(A, Bm));
    tprods.push_back(prod.product_transpose(A, A));
    grams.push_back(prod.weighted_gram(A, d));
  }
  for (size_t i = 1; i < prods.size(); ++i) {
    EXPECT_EQ(prods[i], prods[0]);
    EXPECT_EQ(tprods[i], tprods[0]);
    EXPECT_EQ(grams[i], grams[0]);
  }
  auto close = [](const MatrixXd& x, const MatrixXd& y) {
    return (x - y).cwiseAbs().maxCoeff() <= 1e-12 * y.cwiseAbs().maxCoeff();
  };
  EXPECT_TRUE(close(prods[0], A * Bm));
  EXPECT_TRUE(close(tprods[0], A * A.transpose()));
  EXPECT_TRUE(close(grams[0], A.transpose() * d.asDiagonal() * A));
  EXPECT_EQ(grams[0], grams[0].transpose());
  ParallelProducts prod(2);
  EXPECT_TRUE(close(prod.weighted_gram(A, VectorXd()), A.transpose() * A));
  const MatrixXd AD = A * d.head(A.cols()).asDiagonal();
  const MatrixXd sym = prod.symmetric_product_transpose(AD, A);
  EXPECT_TRUE(close(sym, AD * A.transpose()));
  EXPECT_EQ(sym, sym.transpose());
}

TEST(ParallelProducts, LuSolveIsEigensSolveAndTheSameForEveryThreadCount) {
  // Sizes around the 64-column panels and 192-column blocks; a general matrix and the postfit chi2's
  // symmetric indefinite [[G, 1], [1, −X]] (a zero diagonal block: rows must be swapped).
  std::mt19937 gen(5);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  for (int64_t n : {1, 63, 130, 451}) {
    SCOPED_TRACE(::testing::Message() << "n " << n);
    MatrixXd general = MatrixXd::NullaryExpr(n, n, [&] { return u(gen); });
    const int64_t h = (n + 1) / 2;
    MatrixXd G = MatrixXd::NullaryExpr(h, h, [&] { return u(gen); });
    MatrixXd K = MatrixXd::Zero(2 * h, 2 * h);
    K.topLeftCorner(h, h) = G * G.transpose();
    K.topRightCorner(h, h).setIdentity();
    K.bottomLeftCorner(h, h).setIdentity();
    const VectorXd b = VectorXd::NullaryExpr(n, [&] { return u(gen); });
    const VectorXd bk = VectorXd::NullaryExpr(2 * h, [&] { return u(gen); });
    for (const auto& [A, rhs] : {std::pair<const MatrixXd*, const VectorXd*>{&general, &b}, {&K, &bk}}) {
      const VectorXd eigen = Eigen::PartialPivLU<MatrixXd>(*A).solve(*rhs);
      std::vector<VectorXd> ys;
      for (int threads : {1, 2, 3}) {
        ParallelProducts prod(threads);
        ys.push_back(prod.lu_solve(*A, *rhs));
      }
      EXPECT_EQ(ys[1], ys[0]);
      EXPECT_EQ(ys[2], ys[0]);
      EXPECT_LE((ys[0] - eigen).cwiseAbs().maxCoeff(), 1e-9 * eigen.cwiseAbs().maxCoeff());
      EXPECT_LE((*A * ys[0] - *rhs).cwiseAbs().maxCoeff(), 1e-9 * rhs->cwiseAbs().maxCoeff());
    }
  }
}

TEST(ParallelProducts, DiagonalCovarianceGivesTheProductsValues) {
  const Inputs in = make_inputs(500, 40, 1, 5);
  MatrixXd C = MatrixXd(in.cw.asDiagonal());
  ParallelProducts prod(2);
  // Diagonal: the column scaling equals the full product bit for bit.
  EXPECT_EQ(prod.times_covariance(in.J, C), prod.product(in.J, C));
  // One off-diagonal entry: the full product.
  C(3, 1) = C(1, 3) = 0.25;
  EXPECT_EQ(prod.times_covariance(in.J, C), prod.product(in.J, C));
}

TEST(ParallelProducts, RowQuadraticFormsAreTheDiagonalOfXCXt) {
  // 1001 rows: six row blocks and a remainder. Through the Cholesky factor: a dense C, and the same with two
  // parameters of zero variance (zero rows and columns: the factor of the rest). (X C) ∘ X summed by rows,
  // bit for bit: a diagonal C (column scaling), an indefinite one, one not exactly symmetric, one with a
  // zero diagonal whose row is not zero, and any C with fewer than 2·npar rows.
  const Inputs in = make_inputs(1001, 60, 1, 7);
  // exactly symmetric, as the fit's covariance is (L Lᵀ by a GEMM need not be)
  const MatrixXd dense = 0.5 * (in.C + in.C.transpose()), diagonal = MatrixXd(in.cw.asDiagonal());
  MatrixXd zero_rows = dense;
  for (int64_t j : {4, 33}) zero_rows.row(j).setZero(), zero_rows.col(j).setZero();
  MatrixXd indefinite = dense, asymmetric = dense, zero_diagonal = dense;
  indefinite(5, 5) = -1.0;
  asymmetric(7, 2) += 1e-9;
  zero_diagonal(8, 8) = 0.0;
  const MatrixXd few_rows = in.J.topRows(119);  // < 2·60
  struct Case {
    const MatrixXd* X;
    const MatrixXd* C;
    bool factored;
  };
  for (const Case& c : std::vector<Case>{{&in.J, &dense, true},
                                         {&in.J, &zero_rows, true},
                                         {&in.J, &diagonal, false},
                                         {&in.J, &indefinite, false},
                                         {&in.J, &asymmetric, false},
                                         {&in.J, &zero_diagonal, false},
                                         {&few_rows, &dense, false}}) {
    const MatrixXd& X = *c.X;
    const MatrixXd& C = *c.C;
    std::vector<VectorXd> forms;
    for (int threads : {1, 2, 3}) {
      ParallelProducts prod(threads);
      forms.push_back(prod.row_quadratic_forms(X, C));
      const VectorXd whole = (prod.times_covariance(X, C).array() * X.array()).rowwise().sum();
      if (c.factored) {
        EXPECT_NE(forms.back(), whole) << "the factor's sums round differently: it did not run";
      } else {
        EXPECT_EQ(forms.back(), whole) << threads << " threads";
      }
    }
    EXPECT_EQ(forms[1], forms[0]);
    EXPECT_EQ(forms[2], forms[0]);
    const VectorXd exact = (X * C * X.transpose()).diagonal();
    EXPECT_LE((forms[0] - exact).cwiseAbs().maxCoeff(), 1e-12 * exact.cwiseAbs().maxCoeff());
  }
}

}  // namespace
}  // namespace rabbit::testing
