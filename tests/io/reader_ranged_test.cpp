// Ranged reads (docs/input-reader.md "Ranged reads"): read_fit_input with a range of observed bins
// equals the corresponding slice of the full read, for the committed reference tensors, tensors
// written by the TensorWriter and hand-made files (N-D storage, legacy hkstat); bad ranges are one
// line naming the range and the file.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "rabbit/core/error.hpp"
#include "rabbit/io/fit_input_data.hpp"
#include "rabbit/io/tensor_writer.hpp"
#include "reader_test_support.hpp"
#include "support/test_paths.hpp"

namespace rabbit {
namespace {

template <typename T>
std::vector<T> slice(const std::vector<T>& v, int64_t begin, int64_t end) {
  return std::vector<T>(v.begin() + begin, v.begin() + end);
}

// What a ranged read of [b0, b1) must hold, taken from the full read `f`.
void expect_slice_of(const FitInputData& f, const FitInputData& r, int64_t b0, int64_t b1) {
  const int64_t n = b1 - b0, P = f.nproc;
  SCOPED_TRACE(f.filename + " [" + std::to_string(b0) + ", " + std::to_string(b1) + ")");
  EXPECT_FALSE(f.ranged);
  EXPECT_EQ(f.bin_begin, 0);
  EXPECT_EQ(f.bin_end, f.nbins);
  EXPECT_TRUE(r.ranged);
  EXPECT_EQ(r.bin_begin, b0);
  EXPECT_EQ(r.bin_end, b1);
  // Global information is complete.
  EXPECT_EQ(r.procs, f.procs);
  EXPECT_EQ(r.signals, f.signals);
  EXPECT_EQ(r.systs, f.systs);
  EXPECT_EQ(r.systsnoconstraint, f.systsnoconstraint);
  EXPECT_EQ(r.systgroups, f.systgroups);
  EXPECT_EQ(r.systgroupidxs, f.systgroupidxs);
  EXPECT_EQ(r.noiidxs, f.noiidxs);
  EXPECT_EQ(r.constraintweights, f.constraintweights);
  EXPECT_EQ(r.pseudodatanames, f.pseudodatanames);
  EXPECT_EQ(r.sparse, f.sparse);
  EXPECT_EQ(r.symmetric_tensor, f.symmetric_tensor);
  EXPECT_EQ(r.systematic_type, f.systematic_type);
  EXPECT_EQ(r.has_meta, f.has_meta);
  EXPECT_EQ(r.meta_pickle, f.meta_pickle);
  EXPECT_EQ(r.sumw_per_bin, f.sumw_per_bin);
  EXPECT_EQ(r.nbins, f.nbins);
  EXPECT_EQ(r.nbinsfull, f.nbinsfull);
  EXPECT_EQ(r.nbinsmasked, f.nbinsmasked);
  EXPECT_EQ(r.nsyst, f.nsyst);
  ASSERT_EQ(r.channels.size(), f.channels.size());
  for (size_t c = 0; c < f.channels.size(); ++c) {
    EXPECT_EQ(r.channels[c].name, f.channels[c].name);
    EXPECT_EQ(r.channels[c].masked, f.channels[c].masked);
    EXPECT_EQ(r.channels[c].start, f.channels[c].start);
    EXPECT_EQ(r.channels[c].stop, f.channels[c].stop);
  }
  ASSERT_EQ(r.external_terms.size(), f.external_terms.size());
  for (size_t t = 0; t < f.external_terms.size(); ++t) {
    EXPECT_EQ(r.external_terms[t].params, f.external_terms[t].params);
    EXPECT_EQ(r.external_terms[t].hess.has_value(), f.external_terms[t].hess.has_value());
  }

  // Observations: the rows of the range.
  EXPECT_EQ(r.data_obs, f.data_obs.segment(b0, n));
  ASSERT_EQ(r.data_var.has_value(), f.data_var.has_value());
  if (f.data_var) EXPECT_EQ(*r.data_var, f.data_var->segment(b0, n));
  EXPECT_EQ(r.pseudodata, f.pseudodata.middleRows(b0, n));
  ASSERT_EQ(r.pseudodatavar.has_value(), f.pseudodatavar.has_value());
  if (f.pseudodatavar) EXPECT_EQ(*r.pseudodatavar, f.pseudodatavar->middleRows(b0, n));
  ASSERT_EQ(r.data_cov_inv.has_value(), f.data_cov_inv.has_value());
  if (f.data_cov_inv) EXPECT_EQ(*r.data_cov_inv, f.data_cov_inv->middleRows(b0, n));

  // MC statistics: per bin or per (bin, process).
  const int64_t stat_width = f.sumw_per_bin ? 1 : P;
  EXPECT_EQ(r.sumw, slice(f.sumw, b0 * stat_width, b1 * stat_width));
  EXPECT_EQ(r.sumw2, slice(f.sumw2, b0 * stat_width, b1 * stat_width));

  if (!f.sparse) {
    const int64_t W = f.logk_width();
    EXPECT_EQ(r.norm, slice(f.norm, b0 * P, b1 * P));
    EXPECT_EQ(r.logk, slice(f.logk, b0 * P * W, b1 * P * W));
  } else {
    // The norm entries of the range, indices relative to bin b0, and their logk rows.
    std::vector<double> norm, logk_values;
    std::vector<int64_t> norm_index, rowptr{0};
    std::vector<int32_t> cols;
    for (size_t k = 0; k < f.norm_index.size(); ++k) {
      const int64_t b = f.norm_index[k] / P;
      if (b < b0 || b >= b1) continue;
      norm.push_back(f.norm[k]);
      norm_index.push_back(f.norm_index[k] - b0 * P);
      for (int64_t j = f.logk_sparse.rowptr[k]; j < f.logk_sparse.rowptr[k + 1]; ++j) {
        cols.push_back(f.logk_sparse.cols[static_cast<size_t>(j)]);
        logk_values.push_back(f.logk_sparse.values[static_cast<size_t>(j)]);
      }
      rowptr.push_back(static_cast<int64_t>(cols.size()));
    }
    EXPECT_EQ(r.norm, norm);
    EXPECT_EQ(r.norm_index, norm_index);
    EXPECT_EQ(r.logk_sparse.rowptr, rowptr);
    EXPECT_EQ(r.logk_sparse.cols, cols);
    EXPECT_EQ(r.logk_sparse.values, logk_values);
  }

  // Beta variations: every destination row, the source bins of the range.
  ASSERT_EQ(r.betavariations.has_value(), f.betavariations.has_value());
  if (f.betavariations) {
    std::vector<double> want;
    for (int64_t d = 0; d < f.nbinsfull; ++d)
      for (int64_t j = b0; j < b1; ++j)
        for (int64_t p = 0; p < P; ++p)
          want.push_back((*f.betavariations)[static_cast<size_t>((d * f.nbins + j) * P + p)]);
    EXPECT_EQ(*r.betavariations, want);
  }
}

// Full read, then ranges: empty at both ends, the first and the last bin, a middle third, all.
void expect_ranges_are_slices(const std::filesystem::path& path) {
  const FitInputData full = read_fit_input(path.string());
  const int64_t N = full.nbins;
  ASSERT_GE(N, 3) << path;
  const std::vector<BinRange> ranges = {{0, 0},     {N, N}, {0, 1}, {N - 1, N}, {N / 3, 2 * N / 3},
                                        {1, N - 1}, {0, N}};
  for (const BinRange& range : ranges) {
    const FitInputData part = read_fit_input(path.string(), FitInputReadOptions{range});
    expect_slice_of(full, part, range.begin, range.end);
  }
}

class ReferenceTensor : public testing::TestWithParam<std::string> {};

TEST_P(ReferenceTensor, RangedReadIsTheSliceOfTheFullRead) {
  expect_ranges_are_slices(test::source_dir() / "tests/reference/tensors" / (GetParam() + ".hdf5"));
}

INSTANTIATE_TEST_SUITE_P(ReaderRanged, ReferenceTensor,
                         testing::Values("dense", "sparse_blosc2", "symmetric", "normal",
                                         "normal_symmetric_sparse", "beta_variations",
                                         "covariance_bb_masked"));

// A TensorWriter tensor with two observed channels, a masked channel, pseudodata, data variances,
// a covariance and an external term.
std::filesystem::path written_tensor(const std::string& name, const WriteOptions& options) {
  TensorWriter w;
  w.add_channel("a", {axis::regular(4, 0, 4, "x")});
  w.add_channel("m", {axis::regular(3, 0, 3, "y")}, /*masked=*/true);
  w.add_channel("b", {axis::regular(3, 0, 3, "z")});
  w.add_data("a", {10, 12, 0, 7}, std::vector<double>{11, 12, 1, 7});
  w.add_data("b", {5, 6, 7});
  w.add_pseudodata("toy", "a", {9, 13, 1, 6});
  w.add_pseudodata("toy", "b", {4, 6, 8});
  w.add_process("a", "sig", {3, 0, 2, 1}, true);
  w.add_process("a", "bkg", {8, 9, 0, 6});
  w.add_process("b", "bkg", {5, 5, 6});
  w.add_process("m", "sig", {1, 2, 3}, true);
  w.add_norm_systematic("lumi", {"sig", "bkg"}, "a", {1.02});
  w.add_systematic("shape", "bkg", "a", {9, 9, 0, 5}, {7, 9, 0, 7}, {.symmetrize = Symmetrization::none});
  w.add_systematic("shape", "bkg", "b", {6, 5, 6});
  w.add_data_covariance(Eigen::MatrixXd::Identity(7, 7) * 4.0);
  w.add_external_term("prior", {"lumi"}, Eigen::VectorXd::Ones(1), std::nullopt);
  const auto path = test::scratch_dir("reader_ranged_" + name) / "tensor.hdf5";
  w.write(path.string(), options);
  return path;
}

TEST(ReaderRanged, WrittenDenseTensor) {
  expect_ranges_are_slices(written_tensor("dense", {}));
}

TEST(ReaderRanged, WrittenSparseTensor) {
  expect_ranges_are_slices(written_tensor("sparse", {.sparse = true, .compression = Compression::blosc2}));
}

TEST(ReaderRanged, WrittenFloat32Tensor) {
  expect_ranges_are_slices(written_tensor("f32", {.sparse = true, .float32 = true}));
}

// Datasets stored with their own N-D dataspace (no original_shape) are read as N-D hyperslabs.
TEST(ReaderRanged, UnflattenedNdDatasets) {
  for (bool sparse : {false, true}) {
    test::TensorSpec spec;
    spec.numeric.flat = false;
    spec.sparse = sparse;
    const auto path =
        test::scratch_dir(std::string("reader_ranged_nd") + (sparse ? "_sparse" : "")) / "t.hdf5";
    test::write_tensor(path, spec);
    expect_ranges_are_slices(path);
  }
}

// Legacy hkstat: sumw/sumw2 derived per bin from the held norm rows.
TEST(ReaderRanged, LegacyKstat) {
  for (bool sparse : {false, true}) {
    test::TensorSpec spec;
    spec.sparse = sparse;
    spec.skip = {"hsumw", "hsumw2"};
    spec.extra = [](test::H5Builder& b) { b.doubles("hkstat", {2.0, 1.0, 0.0, 4.0}, {4}); };
    const auto path =
        test::scratch_dir(std::string("reader_ranged_kstat") + (sparse ? "_sparse" : "")) / "t.hdf5";
    test::write_tensor(path, spec);
    expect_ranges_are_slices(path);
  }
}

TEST(ReaderRanged, BadRangesNameTheRangeAndTheFile) {
  const auto path = (test::source_dir() / "tests/reference/tensors/dense.hdf5").string();
  const int64_t N = read_fit_input(path).nbins;
  const std::vector<BinRange> bad = {{-1, 2}, {3, 2}, {0, N + 1}, {N + 1, N + 1}};
  for (const BinRange& range : bad) {
    try {
      read_fit_input(path, FitInputReadOptions{range});
      ADD_FAILURE() << "no error for [" << range.begin << ", " << range.end << ")";
    } catch (const InputError& e) {
      const std::string what = e.what();
      EXPECT_EQ(what, path + ": bin range [" + std::to_string(range.begin) + ", " +
                          std::to_string(range.end) + ") is not a range of the observed bins [0, " +
                          std::to_string(N) + ")");
      EXPECT_EQ(what.find('\n'), std::string::npos);
    }
  }
}

}  // namespace
}  // namespace rabbit
