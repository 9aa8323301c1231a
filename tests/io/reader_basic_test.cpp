// read_fit_input on small files written with the HDF5 C API: every field, dense and sparse,
// symmetric and asymmetric, float32 and gzip storage, empty datasets, legacy fallbacks.
#include <gtest/gtest.h>

#include <cmath>

#include "io/reader_test_support.hpp"
#include "rabbit/core/error.hpp"
#include "rabbit/io/fit_input_data.hpp"
#include "support/test_paths.hpp"

namespace rabbit {
namespace {

using test::TensorSpec;

std::filesystem::path write(const std::string& test, const TensorSpec& spec) {
  auto path = test::scratch_dir("reader_basic_" + test) / "tensor.hdf5";
  test::write_tensor(path, spec);
  return path;
}

TEST(ReaderBasic, DenseAsymmetricWithMeta) {
  TensorSpec spec;
  const FitInputData d = read_fit_input(write("dense_asym", spec));
  EXPECT_FALSE(d.sparse);
  EXPECT_FALSE(d.symmetric_tensor);
  EXPECT_TRUE(d.has_meta);
  EXPECT_EQ(d.systematic_type, SystematicType::log_normal);
  EXPECT_EQ(d.procs, spec.procs);
  EXPECT_EQ(d.signals, spec.signals);
  EXPECT_EQ(d.systs, spec.systs);
  EXPECT_EQ(d.systsnoconstraint, spec.systsnoconstraint);
  EXPECT_EQ(d.systgroups, spec.systgroups);
  ASSERT_EQ(d.systgroupidxs.size(), 3u);
  EXPECT_EQ(d.systgroupidxs[0], (std::vector<int64_t>{1}));
  EXPECT_EQ(d.noiidxs, (std::vector<int64_t>{0}));
  EXPECT_EQ(d.nbins, 3);
  EXPECT_EQ(d.nbinsfull, 4);
  EXPECT_EQ(d.nbinsmasked, 1);
  EXPECT_EQ(d.nproc, 2);
  EXPECT_EQ(d.nsyst, 3);
  EXPECT_EQ(d.nsignals, 1);
  EXPECT_EQ(d.nsystnoconstraint, 1);
  EXPECT_EQ(d.constraintweights[0], 0.0);
  EXPECT_EQ(d.constraintweights[2], 1.0);
  EXPECT_EQ(d.data_obs[1], 21.0);
  EXPECT_FALSE(d.data_var.has_value());
  ASSERT_EQ(d.pseudodata.rows(), 3);
  ASSERT_EQ(d.pseudodata.cols(), 1);
  EXPECT_EQ(d.pseudodata(2, 0), 33.0);
  EXPECT_EQ(d.norm, spec.norm);
  EXPECT_EQ(d.logk, spec.logk);
  EXPECT_EQ(d.sumw, spec.sumw);
  EXPECT_EQ(d.sumw2, spec.sumw2);
  EXPECT_FALSE(d.sumw_per_bin);
  ASSERT_EQ(d.channels.size(), 2u);
  EXPECT_EQ(d.channels[0].name, "ch0");
  EXPECT_EQ(d.channels[0].start, 0);
  EXPECT_EQ(d.channels[0].stop, 3);
  EXPECT_FALSE(d.channels[0].masked);
  EXPECT_TRUE(d.channels[1].masked);
  EXPECT_EQ(d.channels[1].start, 3);
  EXPECT_EQ(d.channels[1].stop, 4);
  ASSERT_EQ(d.channels[0].axes.size(), 1u);
  const AxisInfo& x = d.channels[0].axes[0];
  EXPECT_EQ(x.kind, "regular");
  EXPECT_EQ(x.name, "x");
  EXPECT_EQ(x.label, "x");
  EXPECT_EQ(x.edges, (std::vector<double>{0.0, 1.0, 2.0, 3.0}));
  EXPECT_TRUE(x.underflow);
  EXPECT_TRUE(x.overflow);
  EXPECT_FALSE(d.meta_pickle.empty());
  EXPECT_EQ(d.pseudodata_index("toy"), 0);
}

TEST(ReaderBasic, PseudodataIndexUnknownNameListsValidOnes) {
  const FitInputData d = read_fit_input(write("pseudo_unknown", TensorSpec{}));
  try {
    d.pseudodata_index("nope");
    FAIL() << "expected OptionError";
  } catch (const OptionError& e) {
    EXPECT_NE(std::string(e.what()).find("'nope'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("valid: toy"), std::string::npos) << e.what();
  }
}

TEST(ReaderBasic, DenseSymmetric) {
  TensorSpec spec;
  spec.make_symmetric();
  spec.meta = test::make_meta_pickle({{"ch0", {{3, 0.0, 3.0, "x"}}}, {"ch1", {{1, 0.0, 1.0, "y"}}, true}},
                                     true, "normal");
  const FitInputData d = read_fit_input(write("dense_sym", spec));
  EXPECT_TRUE(d.symmetric_tensor);
  EXPECT_EQ(d.systematic_type, SystematicType::normal);
  EXPECT_EQ(d.logk_width(), 3);
  EXPECT_EQ(d.logk, spec.logk);
}

// Sparse files hold the same tensors: dense norm/logk reconstructed from (index, CSR) match.
void expect_sparse_matches_dense(const FitInputData& d, const TensorSpec& spec) {
  const int64_t width = d.logk_width();
  std::vector<double> norm(static_cast<size_t>(d.nbinsfull * d.nproc), 0.0);
  std::vector<double> logk(static_cast<size_t>(d.nbinsfull * d.nproc * width), 0.0);
  ASSERT_EQ(d.logk_sparse.rowptr.size(), d.norm.size() + 1);
  for (size_t k = 0; k < d.norm.size(); ++k) {
    if (k > 0) {
      EXPECT_LT(d.norm_index[k - 1], d.norm_index[k]);
    }
    norm[static_cast<size_t>(d.norm_index[k])] = d.norm[k];
    for (int64_t j = d.logk_sparse.rowptr[k]; j < d.logk_sparse.rowptr[k + 1]; ++j) {
      logk[static_cast<size_t>(d.norm_index[k] * width + d.logk_sparse.cols[static_cast<size_t>(j)])] =
          d.logk_sparse.values[static_cast<size_t>(j)];
    }
  }
  EXPECT_EQ(norm, spec.norm);
  EXPECT_EQ(logk, spec.logk);
}

TEST(ReaderBasic, SparseAsymmetric) {
  TensorSpec spec;
  spec.sparse = true;
  const FitInputData d = read_fit_input(write("sparse_asym", spec));
  EXPECT_TRUE(d.sparse);
  EXPECT_EQ(d.nbinsfull, 4);
  EXPECT_EQ(d.norm.size(), 7u);  // one zero in the dense norm
  EXPECT_TRUE(d.logk.empty());
  expect_sparse_matches_dense(d, spec);
}

TEST(ReaderBasic, SparseSymmetricGzipChunked) {
  TensorSpec spec;
  spec.make_symmetric();
  spec.meta =
      test::make_meta_pickle({{"ch0", {{3, 0.0, 3.0, "x"}}}, {"ch1", {{1, 0.0, 1.0, "y"}}, true}}, true);
  spec.sparse = true;
  spec.numeric.chunk = 2;
  spec.numeric.gzip = 4;
  const FitInputData d = read_fit_input(write("sparse_sym", spec));
  EXPECT_EQ(d.logk_width(), 3);
  expect_sparse_matches_dense(d, spec);
}

TEST(ReaderBasic, Float32StorageIsPromoted) {
  TensorSpec spec;
  spec.numeric.float32 = true;
  spec.numeric.chunk = 3;
  spec.numeric.gzip = 1;
  const FitInputData d = read_fit_input(write("float32", spec));
  ASSERT_EQ(d.logk.size(), spec.logk.size());
  for (size_t i = 0; i < d.logk.size(); ++i) {
    EXPECT_EQ(d.logk[i], static_cast<double>(static_cast<float>(spec.logk[i]))) << i;
  }
  EXPECT_EQ(d.norm, spec.norm);  // small integers and halves are exact in float32
}

// docs/input-reader.md "Precision": with keep_float32 a float32 logk stays float32 (same values as the
// promoted read), a float64 one is read as double as before.
TEST(ReaderBasic, Float32LogkKeptWhenAsked) {
  for (bool sparse : {false, true}) {
    SCOPED_TRACE(sparse ? "sparse" : "dense");
    TensorSpec spec;
    spec.sparse = sparse;
    spec.numeric.float32 = true;
    spec.numeric.chunk = 3;
    const auto path = write(sparse ? "float32_kept_sparse" : "float32_kept", spec);
    const FitInputData promoted = read_fit_input(path);
    const FitInputData kept = read_fit_input(path, {.keep_float32 = true});
    EXPECT_FALSE(promoted.logk_float32);
    ASSERT_TRUE(kept.logk_float32);
    EXPECT_TRUE(kept.logk.empty());
    EXPECT_TRUE(kept.logk_sparse.values.empty());
    const std::vector<double>& want = sparse ? promoted.logk_sparse.values : promoted.logk;
    const std::vector<float>& got = sparse ? kept.logk_sparse.values_f32 : kept.logk_f32;
    ASSERT_EQ(got.size(), want.size());
    ASSERT_FALSE(got.empty());
    for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(static_cast<double>(got[i]), want[i]) << i;
    EXPECT_EQ(kept.norm, promoted.norm);  // only logk keeps the file's precision
    const FitInputData back = with_double_logk(kept);
    EXPECT_FALSE(back.logk_float32);
    EXPECT_EQ(back.logk, promoted.logk);
    EXPECT_EQ(back.logk_sparse.values, promoted.logk_sparse.values);
  }
  TensorSpec f64;
  const FitInputData d = read_fit_input(write("float64_not_kept", f64), {.keep_float32 = true});
  EXPECT_FALSE(d.logk_float32);
  EXPECT_EQ(d.logk, f64.logk);
}

TEST(ReaderBasic, UnflattenedNdDatasetsUseTheirDataspace) {
  TensorSpec spec;
  spec.numeric.flat = false;
  const FitInputData d = read_fit_input(write("nd", spec));
  EXPECT_EQ(d.logk, spec.logk);
  EXPECT_EQ(d.pseudodata(1, 0), 22.0);
}

TEST(ReaderBasic, NoMetaUsesDefaultsWithMaskedChannel) {
  TensorSpec spec;
  spec.meta.reset();
  const FitInputData d = read_fit_input(write("nometa", spec));
  EXPECT_FALSE(d.has_meta);
  EXPECT_FALSE(d.symmetric_tensor);
  ASSERT_EQ(d.channels.size(), 2u);
  EXPECT_EQ(d.channels[0].name, "ch0");
  EXPECT_EQ(d.channels[0].axes[0].name, "obs");
  EXPECT_EQ(d.channels[0].axes[0].kind, "integer");
  EXPECT_EQ(d.channels[0].nbins(), 3);
  EXPECT_EQ(d.channels[1].name, "ch1_masked");
  EXPECT_TRUE(d.channels[1].masked);
  EXPECT_EQ(d.channels[1].nbins(), 1);
}

TEST(ReaderBasic, EmptyDatasetsWithoutSystematics) {
  TensorSpec spec;
  spec.systs = {};
  spec.systsnoconstraint = {};
  spec.systgroups = {};
  spec.systgroupidxs = {};
  spec.noiidxs = {};
  spec.constraintweights = {};
  spec.logk = {};
  spec.pseudodatanames = {};
  spec.pseudodata = {};
  const FitInputData d = read_fit_input(write("empty", spec));
  EXPECT_EQ(d.nsyst, 0);
  EXPECT_TRUE(d.logk.empty());
  EXPECT_EQ(d.constraintweights.size(), 0);
  EXPECT_EQ(d.pseudodata.rows(), 3);
  EXPECT_EQ(d.pseudodata.cols(), 0);
}

TEST(ReaderBasic, OptionalObservationArrays) {
  TensorSpec spec;
  spec.extra = [](test::H5Builder& b) {
    b.doubles("hdata_var", {1, 2, 3}, {3});
    // Deliberately not symmetric, to check the row-major orientation.
    b.doubles("hdata_cov_inv", {1, 2, 3, 4, 5, 6, 7, 8, 9}, {3, 3});
    b.doubles("hpseudodatavar", {0.5, 0.6, 0.7}, {3, 1});
    std::vector<double> beta(4 * 3 * 2);
    for (size_t i = 0; i < beta.size(); ++i) beta[i] = static_cast<double>(i);
    b.doubles("hbetavariations", beta, {4, 3, 2});
  };
  const FitInputData d = read_fit_input(write("optional", spec));
  ASSERT_TRUE(d.data_var);
  EXPECT_EQ((*d.data_var)[2], 3.0);
  ASSERT_TRUE(d.data_cov_inv);
  EXPECT_EQ((*d.data_cov_inv)(0, 1), 2.0);
  EXPECT_EQ((*d.data_cov_inv)(1, 0), 4.0);
  EXPECT_EQ((*d.data_cov_inv)(2, 1), 8.0);
  ASSERT_TRUE(d.pseudodatavar);
  EXPECT_EQ((*d.pseudodatavar)(1, 0), 0.6);
  ASSERT_TRUE(d.betavariations);
  EXPECT_EQ((*d.betavariations)[7], 7.0);
}

TEST(ReaderBasic, LegacyOneDimensionalSumw) {
  TensorSpec spec;
  spec.sumw = {6, 3, 9, 4.5};
  spec.sumw2 = {1, 1, 2, 0.5};
  spec.original_shape["hsumw"] = {4};
  spec.original_shape["hsumw2"] = {4};
  const FitInputData d = read_fit_input(write("sumw1d", spec));
  EXPECT_TRUE(d.sumw_per_bin);
  EXPECT_EQ(d.sumw, spec.sumw);
  EXPECT_EQ(d.sumw2, spec.sumw2);
}

TEST(ReaderBasic, LegacyKstatFallback) {
  TensorSpec spec;
  spec.skip = {"hsumw", "hsumw2"};
  spec.extra = [](test::H5Builder& b) { b.doubles("hkstat", {2.0, 1.0, 0.0, 4.0}, {4}); };
  const FitInputData d = read_fit_input(write("kstat", spec));
  EXPECT_TRUE(d.sumw_per_bin);
  // sumw[b] = sum_p norm[b,p]; sumw2 = sumw^2 / kstat (sumw where kstat == 0).
  EXPECT_EQ(d.sumw, (std::vector<double>{6, 3, 9, 4.5}));
  EXPECT_EQ(d.sumw2, (std::vector<double>{18, 9, 9, 4.5 * 4.5 / 4.0}));
}

TEST(ReaderBasic, LegacyNoiGroupIdxsAreDeduplicated) {
  TensorSpec spec;
  spec.skip = {"hnoiidxs"};
  spec.extra = [](test::H5Builder& b) { b.int32s("hnoigroupidxs", {2, 0, 2}); };
  const FitInputData d = read_fit_input(write("noigroup", spec));
  EXPECT_EQ(d.noiidxs, (std::vector<int64_t>{2, 0}));
}

TEST(ReaderBasic, FixedLengthStringsAreStripped) {
  TensorSpec spec;
  spec.skip = {"hprocs", "hsignals"};
  spec.extra = [](test::H5Builder& b) {
    b.fixed_strings("hprocs", {"sig", "bkg"}, 8, H5T_STR_NULLPAD);
    b.fixed_strings("hsignals", {"sig"}, 6, H5T_STR_SPACEPAD);
  };
  const FitInputData d = read_fit_input(write("fixedstr", spec));
  EXPECT_EQ(d.procs, (std::vector<std::string>{"sig", "bkg"}));
  EXPECT_EQ(d.signals, (std::vector<std::string>{"sig"}));
}

TEST(ReaderBasic, ExternalTermsDenseAndUnsortedSparse) {
  TensorSpec spec;
  spec.extra = [](test::H5Builder& b) {
    b.group("external_terms");
    b.group("external_terms/b_sparse");
    b.strings("external_terms/b_sparse/params", {"a", "b"});
    b.group("external_terms/b_sparse/hess_sparse");
    b.attr_int64("external_terms/b_sparse/hess_sparse", "dense_shape", {2, 2});
    b.int64s("external_terms/b_sparse/hess_sparse/indices", {1, 1, 0, 0, 0, 1}, {3, 2});  // unsorted
    b.doubles("external_terms/b_sparse/hess_sparse/values", {4.0, 2.0, 0.5}, {3});
    b.doubles("external_terms/b_sparse/lognorm", {-0.25}, {});  // scalar: empty original_shape (PR #147)
    b.group("external_terms/a_dense");
    b.strings("external_terms/a_dense/params", {"free", "a"});
    b.doubles("external_terms/a_dense/grad_values", {0.1, -0.2}, {2});
    b.doubles("external_terms/a_dense/hess_dense", {1, 2, 3, 4}, {2, 2});
  };
  const FitInputData d = read_fit_input(write("external", spec));
  ASSERT_EQ(d.external_terms.size(), 2u);
  const ExternalTerm& a = d.external_terms[0];
  EXPECT_EQ(a.name, "a_dense");
  EXPECT_EQ(a.params, (std::vector<std::string>{"free", "a"}));
  ASSERT_TRUE(a.grad_values);
  EXPECT_EQ((*a.grad_values)[1], -0.2);
  ASSERT_TRUE(a.hess);
  EXPECT_EQ((*a.hess)(0, 1), 2.0);
  EXPECT_EQ((*a.hess)(1, 0), 3.0);
  EXPECT_FALSE(a.hess_was_sparse);
  EXPECT_FALSE(a.const_value);  // absent stays absent: the model derives it
  EXPECT_FALSE(a.lognorm);
  const ExternalTerm& s = d.external_terms[1];
  EXPECT_TRUE(s.hess_was_sparse);
  EXPECT_FALSE(s.const_value);
  EXPECT_EQ(s.lognorm, std::optional<double>(-0.25));
  EXPECT_EQ(s.name, "b_sparse");
  EXPECT_FALSE(s.grad_values);
  ASSERT_TRUE(s.hess);
  EXPECT_EQ((*s.hess)(0, 0), 2.0);
  EXPECT_EQ((*s.hess)(0, 1), 0.5);
  EXPECT_EQ((*s.hess)(1, 0), 0.0);
  EXPECT_EQ((*s.hess)(1, 1), 4.0);
}

TEST(ReaderBasic, LegacyAndUnknownObjectsAreIgnored) {
  TensorSpec spec;
  spec.extra = [](test::H5Builder& b) {
    b.strings("hsystsnoprofile", {"old"});
    b.strings("hnoigroups", {});
    b.strings("something_new", {"x"});
    b.group("auxiliary");
  };
  EXPECT_NO_THROW(read_fit_input(write("legacy_objects", spec)));
}

}  // namespace
}  // namespace rabbit
