// docs/input-reader.md "Validation checklist": each validation class triggered on a small broken file; the
// InputError is one line naming the file and the object.
#include <gtest/gtest.h>

#include <fstream>
#include <limits>

#include "io/reader_test_support.hpp"
#include "rabbit/core/error.hpp"
#include "rabbit/io/fit_input_data.hpp"
#include "support/test_paths.hpp"

namespace rabbit {
namespace {

using test::TensorSpec;

int g_counter = 0;

std::string path_for(const TensorSpec& spec) {
  auto path = test::scratch_dir("reader_validation_" + std::to_string(++g_counter)) / "broken.hdf5";
  test::write_tensor(path, spec);
  return path.string();
}

// The message of the InputError thrown by read_fit_input (fails the test if none).
std::string error_for(const TensorSpec& spec) {
  const std::string path = path_for(spec);
  try {
    read_fit_input(path);
  } catch (const InputError& e) {
    const std::string m = e.what();
    EXPECT_EQ(m.rfind(path + ": ", 0), 0u) << "message must start with the file name: " << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << "message must be one line: " << m;
    return m;
  }
  ADD_FAILURE() << "expected an InputError";
  return "";
}

#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE((haystack).find(needle), std::string::npos) << "message: " << (haystack)

TEST(ReaderValidation, NotAnHdf5File) {
  const auto path = test::scratch_dir("reader_validation_text") / "text.hdf5";
  std::ofstream(path) << "hello";
  try {
    read_fit_input(path.string());
    FAIL();
  } catch (const InputError& e) {
    EXPECT_CONTAINS(std::string(e.what()), "not an HDF5 file (or unreadable)");
  }
  EXPECT_THROW(read_fit_input((path.parent_path() / "absent.hdf5").string()), InputError);
}

TEST(ReaderValidation, MissingObjects) {
  {
    TensorSpec s;
    s.skip = {"hsysts"};
    EXPECT_CONTAINS(error_for(s), "missing dataset 'hsysts'");
  }
  {
    TensorSpec s;
    s.skip = {"hnorm", "hlogk"};
    EXPECT_CONTAINS(error_for(s), "neither 'hnorm' nor 'hnorm_sparse' present");
  }
  {
    TensorSpec s;
    s.skip = {"hsumw"};
    EXPECT_CONTAINS(error_for(s), "'hsumw2' present but 'hsumw' missing");
  }
  {
    TensorSpec s;
    s.skip = {"hsumw", "hsumw2"};
    EXPECT_CONTAINS(error_for(s), "missing dataset 'hsumw2' (and no legacy 'hkstat')");
  }
  {
    TensorSpec s;
    s.skip = {"hnoiidxs"};
    EXPECT_CONTAINS(error_for(s), "missing dataset 'hnoiidxs'");
  }
  {
    TensorSpec s;
    s.skip = {"hlogk"};
    EXPECT_CONTAINS(error_for(s), "missing dataset 'hlogk'");
  }
}

TEST(ReaderValidation, ObjectKind) {
  TensorSpec s;
  s.skip = {"hnorm", "hlogk"};
  s.extra = [](test::H5Builder& b) {
    b.doubles("hnorm_sparse", {1.0}, {1});
    b.group("hlogk_sparse");
  };
  EXPECT_CONTAINS(error_for(s), "'hnorm_sparse' must be a group with 'indices' and 'values'");
  TensorSpec g;
  g.skip = {"hdata_obs"};
  g.extra = [](test::H5Builder& b) { b.group("hdata_obs"); };
  EXPECT_CONTAINS(error_for(g), "'hdata_obs' must be a dataset");
}

TEST(ReaderValidation, DtypeClass) {
  {
    TensorSpec s;
    s.skip = {"hnorm"};
    s.extra = [](test::H5Builder& b) {
      std::vector<int64_t> v(8, 1);
      test::ArrayOptions o;
      o.int_type = H5T_STD_I32LE;
      b.int64s("hnorm", v, {4, 2}, o);
    };
    EXPECT_CONTAINS(error_for(s),
                    "dataset 'hnorm': must be floating point (float32/float64), found integer 4 bytes");
  }
  {
    TensorSpec s;
    s.skip = {"hprocs"};
    s.extra = [](test::H5Builder& b) { b.int32s("hprocs", {1, 2}); };
    EXPECT_CONTAINS(error_for(s), "dataset 'hprocs': must be a string dataset");
  }
  {
    TensorSpec s;
    s.sparse = true;
    s.skip = {"hnorm_sparse"};
    s.numeric.float32 = false;
    // Replace hlogk_sparse/indices by a float dataset after writing a valid file.
    const std::string path = path_for(s);
    {
      h5::Handle f(H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT));
      H5Ldelete(f, "hlogk_sparse/indices", H5P_DEFAULT);
    }
    {
      h5::Handle f(H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT));
      const hsize_t n = 2;
      h5::Handle space(H5Screate_simple(1, &n, nullptr));
      h5::Handle d(H5Dcreate2(f, "hlogk_sparse/indices", H5T_IEEE_F64LE, space, H5P_DEFAULT, H5P_DEFAULT,
                              H5P_DEFAULT));
    }
    try {
      read_fit_input(path);
      FAIL();
    } catch (const InputError& e) {
      EXPECT_CONTAINS(std::string(e.what()), "dataset 'hlogk_sparse/indices': must be integer");
    }
  }
}

TEST(ReaderValidation, OriginalShapeMustMatch) {
  TensorSpec s;
  s.original_shape["hnorm"] = {26, 3};
  EXPECT_CONTAINS(error_for(s), "dataset 'hnorm': original_shape [26,3] has 78 elements, dataset has 8");
  TensorSpec n;
  n.original_shape["hdata_obs"] = {-3};
  EXPECT_CONTAINS(error_for(n), "negative extent");
}

TEST(ReaderValidation, Shapes) {
  {
    TensorSpec s;  // symmetric flag but asymmetric tensor
    s.meta =
        test::make_meta_pickle({{"ch0", {{3, 0.0, 3.0, "x"}}}, {"ch1", {{1, 0.0, 1.0, "y"}}, true}}, true);
    EXPECT_CONTAINS(error_for(s),
                    "dataset 'hlogk': has shape [4,2,2,3] (48 elements), expected 24 for a symmetric "
                    "tensor [4,2,3] (meta symmetric_tensor=true; is the flag wrong?)");
  }
  {
    TensorSpec s;
    s.procs = {"sig", "bkg", "other"};
    s.original_shape["hnorm"] = {4, 2};
    EXPECT_CONTAINS(error_for(s), "dataset 'hnorm': has shape [4,2], expected [nbinsfull, nproc=3]");
  }
  {
    TensorSpec s;
    s.constraintweights = {0, 1};
    s.original_shape["hconstraintweights"] = {2};
    EXPECT_CONTAINS(error_for(s), "dataset 'hconstraintweights': has shape [2], expected [3] ([nsyst])");
  }
  {
    TensorSpec s;
    s.nbins = 5;
    s.data_obs = {1, 2, 3, 4, 5};
    s.pseudodata = {1, 2, 3, 4, 5};
    EXPECT_CONTAINS(error_for(s), "dataset 'hnorm': covers 4 bins, fewer than nbins=5");
  }
  {
    TensorSpec s;
    s.sumw = {1, 2, 3, 4};
    s.original_shape["hsumw"] = {4};
    EXPECT_CONTAINS(error_for(s), "dataset 'hsumw': has shape [4], 'hsumw2' has [4,2]");
  }
  {
    TensorSpec s;
    s.extra = [](test::H5Builder& b) { b.doubles("hdata_var", {1, 2}, {2}); };
    EXPECT_CONTAINS(error_for(s), "dataset 'hdata_var': has shape [2], expected [3]");
  }
  {
    TensorSpec s;
    s.extra = [](test::H5Builder& b) { b.doubles("hdata_cov_inv", {1, 2, 3, 4}, {2, 2}); };
    EXPECT_CONTAINS(error_for(s), "dataset 'hdata_cov_inv': has shape [2,2], expected [3,3]");
  }
  {
    TensorSpec s;
    s.pseudodatanames = {"a", "b"};
    s.original_shape["hpseudodata"] = {3, 1};
    EXPECT_CONTAINS(error_for(s), "dataset 'hpseudodata': has shape [3,1], expected [3,2]");
  }
  {
    TensorSpec s;
    s.extra = [](test::H5Builder& b) {
      b.doubles("hbetavariations", std::vector<double>(12, 0.0), {4, 3, 1});
    };
    EXPECT_CONTAINS(error_for(s), "dataset 'hbetavariations': has shape [4,3,1], expected [4,3,2]");
  }
  {
    TensorSpec s;  // 2025-03-11..17 files: hkstat over nbins only, with masked channels
    s.skip = {"hsumw", "hsumw2"};
    s.extra = [](test::H5Builder& b) { b.doubles("hkstat", {1, 1, 1}, {3}); };
    EXPECT_CONTAINS(error_for(s), "dataset 'hkstat': has 3 entries = nbins but the file has 1 masked bins");
  }
  {
    TensorSpec s;
    s.original_shape["hdata_obs"] = {3, 1};
    EXPECT_CONTAINS(error_for(s), "dataset 'hdata_obs': must be 1-D [nbins]");
  }
}

TEST(ReaderValidation, SparseIndices) {
  {
    TensorSpec s;
    s.sparse = true;
    s.original_shape["hnorm_sparse"] = {4, 3};
    EXPECT_CONTAINS(error_for(s), "dataset 'hnorm_sparse': dense_shape [4,3] must be [nbinsfull, nproc=2]");
  }
  {
    TensorSpec s;
    s.sparse = true;
    s.original_shape["hlogk_sparse"] = {7, 3};
    EXPECT_CONTAINS(error_for(s), "dataset 'hlogk_sparse': dense_shape [7,3] must be [7,6]");
  }
  auto rewrite_indices = [](const std::string& path, const std::string& name, std::vector<int64_t> idx) {
    h5::Handle f(H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT));
    h5::Handle d(H5Dopen2(f, name.c_str(), H5P_DEFAULT));
    H5Dwrite(d, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, idx.data());
  };
  auto message = [](const std::string& path) {
    try {
      read_fit_input(path);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  TensorSpec s;
  s.sparse = true;
  {
    const std::string path = path_for(s);
    // 7 norm entries; put entry 6 out of bounds (bin 4 of 4).
    rewrite_indices(path, "hnorm_sparse/indices", {0, 0, 0, 1, 1, 1, 2, 0, 2, 1, 3, 0, 4, 1});
    EXPECT_CONTAINS(message(path),
                    "dataset 'hnorm_sparse/indices': row 6 (4,1) out of bounds for dense_shape [4,2]");
  }
  {
    const std::string path = path_for(s);
    rewrite_indices(path, "hnorm_sparse/indices", {0, 0, 0, 1, 1, 1, 0, 1, 2, 1, 3, 0, 3, 1});
    EXPECT_CONTAINS(message(path),
                    "dataset 'hnorm_sparse/indices': not in canonical row-major order at row 3");
  }
  {
    const std::string path = path_for(s);
    rewrite_indices(path, "hnorm_sparse/indices", {0, 0, 0, 1, 1, 1, 1, 1, 2, 1, 3, 0, 3, 1});
    EXPECT_CONTAINS(message(path), "not in canonical row-major order at row 3 (duplicate entry)");
  }
}

TEST(ReaderValidation, NameLists) {
  {
    TensorSpec s;
    s.signals = {"bkg"};
    EXPECT_CONTAINS(error_for(s), "'hsignals'[0]='bkg' does not match 'hprocs'[0]='sig'");
  }
  {
    TensorSpec s;
    s.procs = {"sig", "sig"};
    EXPECT_CONTAINS(error_for(s), "dataset 'hprocs': name 'sig' appears twice");
  }
  {
    TensorSpec s;
    s.systgroups = {"a", "a", "free"};
    EXPECT_CONTAINS(error_for(s), "dataset 'hsystgroups': name 'a' appears twice");
  }
  {
    TensorSpec s;
    s.systsnoconstraint = {"zzz"};
    EXPECT_CONTAINS(error_for(s), "dataset 'hsystsnoconstraint': name 'zzz' is not in 'hsysts'");
  }
}

TEST(ReaderValidation, IndexLists) {
  {
    TensorSpec s;
    s.systgroupidxs = {{1}, {2, 12}, {0}};
    EXPECT_CONTAINS(error_for(s), "dataset 'hsystgroupidxs': [1] contains index 12 >= nsyst=3");
  }
  {
    TensorSpec s;
    s.noiidxs = {0, 0};
    EXPECT_CONTAINS(error_for(s), "dataset 'hnoiidxs': index 0 appears twice");
  }
  {
    TensorSpec s;
    s.noiidxs = {-1};
    EXPECT_CONTAINS(error_for(s), "dataset 'hnoiidxs': [0] = -1 outside [0, nsyst=3)");
  }
  {
    TensorSpec s;
    s.systgroupidxs = {{1}, {2}};
    EXPECT_CONTAINS(error_for(s), "dataset 'hsystgroupidxs': has 2 entries, 'hsystgroups' has 3");
  }
}

TEST(ReaderValidation, NonFiniteValues) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  {
    TensorSpec s;
    s.logk[1 * 6 + 4] = nan;  // [0,1,0,4]? element 10 of [4,2,2,3] = [0,1,1,1]
    s.logk[20] = std::numeric_limits<double>::infinity();
    EXPECT_CONTAINS(error_for(s), "dataset 'hlogk': contains 2 NaN/Inf values (first at [0,1,1,1])");
  }
  {
    TensorSpec s;
    s.data_obs[2] = nan;
    EXPECT_CONTAINS(error_for(s), "dataset 'hdata_obs': contains 1 NaN/Inf values (first at [2])");
  }
  {
    TensorSpec s;
    s.sparse = true;
    s.norm[7] = nan;
    EXPECT_CONTAINS(error_for(s), "dataset 'hnorm_sparse/values': contains 1 NaN/Inf values");
  }
  {
    TensorSpec s;
    s.sumw2[3] = nan;
    EXPECT_CONTAINS(error_for(s), "dataset 'hsumw2': contains 1 NaN/Inf values (first at [1,1])");
  }
}

TEST(ReaderValidation, Signs) {
  {
    TensorSpec s;
    s.sumw2[5] = -0.5;
    EXPECT_CONTAINS(error_for(s), "dataset 'hsumw2': has a negative entry -0.5 at [2,1]");
  }
  {
    TensorSpec s;
    s.constraintweights[1] = -1;
    EXPECT_CONTAINS(error_for(s), "dataset 'hconstraintweights': has a negative entry -1 at [1]");
  }
  {
    TensorSpec s;  // negative norm: a warning only
    s.norm[3] = -0.3;
    EXPECT_NO_THROW(read_fit_input(path_for(s)));
  }
}

TEST(ReaderValidation, MetaProblems) {
  {
    TensorSpec s;  // undecodable meta: warning and defaults (docs/input-reader.md "The meta pickle")
    std::vector<uint8_t> broken = *s.meta;
    broken.resize(broken.size() / 2);
    s.meta = broken;
    const FitInputData d = read_fit_input(path_for(s));
    EXPECT_FALSE(d.has_meta);
    EXPECT_EQ(d.channels.size(), 2u);
    EXPECT_EQ(d.channels[1].name, "ch1_masked");
  }
  {
    TensorSpec s;  // wrong protocol version: also not decodable
    s.skip = {"meta"};
    const auto bytes = *s.meta;
    s.extra = [bytes](test::H5Builder& b) {
      b.group("meta");
      b.attr_int64("meta", "narf_h5py_pickle_protocol_version", {2}, true);
      b.bytes("meta/pickle_data", bytes);
    };
    EXPECT_FALSE(read_fit_input(path_for(s)).has_meta);
  }
  {
    TensorSpec s;  // meta that is a dataset: legacy narf layout, ignored
    s.skip = {"meta"};
    s.extra = [](test::H5Builder& b) { b.bytes("meta", {1, 2, 3}); };
    EXPECT_FALSE(read_fit_input(path_for(s)).has_meta);
  }
  {
    TensorSpec s;
    test::PickleBytes p;
    p.proto(4)
        .empty_dict()
        .mark()
        .str("channel_info")
        .empty_dict()
        .str("exponential_transform")
        .boolean(true)
        .setitems()
        .stop();
    s.meta = p.bytes;
    EXPECT_CONTAINS(error_for(s), "meta: exponential_transform=True");
  }
}

TEST(ReaderValidation, ChannelsMustCoverTheBins) {
  {
    TensorSpec s;
    s.meta =
        test::make_meta_pickle({{"ch0", {{3, 0.0, 3.0, "x"}}}, {"ch1", {{2, 0.0, 1.0, "y"}}, true}}, false);
    EXPECT_CONTAINS(error_for(s), "meta: channels cover 5 bins, tensors have nbinsfull=4");
  }
  {
    TensorSpec s;
    s.meta =
        test::make_meta_pickle({{"ch1", {{1, 0.0, 1.0, "y"}}, true}, {"ch0", {{3, 0.0, 3.0, "x"}}}}, false);
    EXPECT_CONTAINS(error_for(s), "meta: non-masked channel 'ch0' after a masked channel");
  }
  {
    TensorSpec s;
    s.meta =
        test::make_meta_pickle({{"ch0", {{2, 0.0, 3.0, "x"}}}, {"ch1", {{2, 0.0, 1.0, "y"}}, true}}, false);
    EXPECT_CONTAINS(error_for(s), "meta: non-masked channels cover 2 bins, 'hdata_obs' has nbins=3");
  }
  {
    TensorSpec s;  // a masked channel with flow: extent counts (1 regular bin + 2 flow bins = 3)
    s.meta = test::make_meta_pickle(
        {{"ch0", {{3, 0.0, 3.0, "x"}}}, {"ch1", {{1, 0.0, 1.0, "y"}}, true, true}}, false);
    EXPECT_CONTAINS(error_for(s), "meta: channels cover 6 bins, tensors have nbinsfull=4");
  }
}

TEST(ReaderValidation, ExternalTerms) {
  {
    TensorSpec s;
    s.extra = [](test::H5Builder& b) {
      b.group("external_terms");
      b.group("external_terms/extA");
      b.strings("external_terms/extA/params", {"a", "b"});
      b.doubles("external_terms/extA/hess_dense", std::vector<double>(9, 0.0), {3, 3});
    };
    EXPECT_CONTAINS(error_for(s),
                    "dataset 'external_terms/extA/hess_dense': is [3,3] but 'params' has 2 names");
  }
  {
    TensorSpec s;
    s.extra = [](test::H5Builder& b) {
      b.group("external_terms");
      b.group("external_terms/extA");
      b.strings("external_terms/extA/params", {"a", "a"});
      b.doubles("external_terms/extA/grad_values", {1, 2}, {2});
    };
    EXPECT_CONTAINS(error_for(s), "dataset 'external_terms/extA/params': parameter names are not unique");
  }
  {
    TensorSpec s;
    s.extra = [](test::H5Builder& b) {
      b.group("external_terms");
      b.group("external_terms/extA");
      b.strings("external_terms/extA/params", {"a"});
    };
    EXPECT_CONTAINS(error_for(s), "has neither 'grad_values' nor a Hessian");
  }
  {
    TensorSpec s;  // rabbit PR #147's const/lognorm are scalars
    s.extra = [](test::H5Builder& b) {
      b.group("external_terms");
      b.group("external_terms/extA");
      b.strings("external_terms/extA/params", {"a"});
      b.doubles("external_terms/extA/grad_values", {1}, {1});
      b.doubles("external_terms/extA/const", {1, 2}, {2});
    };
    EXPECT_CONTAINS(error_for(s),
                    "dataset 'external_terms/extA/const': has 2 elements, expected one (a scalar)");
  }
}

}  // namespace
}  // namespace rabbit
