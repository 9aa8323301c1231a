// TensorWriter output checked at the HDF5/pickle level, independently of the reader: the meta
// pickle bytes of docs/tensor-writer.md "The meta pickle bytes", natural sort, dataset attributes and
// filters, errors.
#include <gtest/gtest.h>
#include <hdf5.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "rabbit/core/error.hpp"
#include "rabbit/io/blosc_filters.hpp"
#include "rabbit/io/hdf5_handle.hpp"
#include "rabbit/io/pickle_writer.hpp"
#include "rabbit/io/tensor_writer.hpp"
#include "support/test_paths.hpp"

namespace rabbit {
namespace {

std::vector<uint8_t> bytes(std::initializer_list<int> v) {
  return {v.begin(), v.end()};
}
void append(std::vector<uint8_t>& out, const std::vector<uint8_t>& more) {
  out.insert(out.end(), more.begin(), more.end());
}
void append_str(std::vector<uint8_t>& out, const std::string& s) {
  out.push_back(0x8c);
  out.push_back(static_cast<uint8_t>(s.size()));
  out.insert(out.end(), s.begin(), s.end());
}

// The byte recipe of docs/tensor-writer.md "The meta pickle bytes" (one channel ch0 with hist.axis.Regular(2,
// 0, 1, name="x") without flow bins), with our protocol byte 5 instead of 4.
TEST(WriterPickle, MatchesTheSpecRecipe) {
  std::vector<uint8_t> want = bytes({0x80, 0x05, 0x7d, 0x28});
  append_str(want, "channel_info");
  append(want, bytes({0x7d, 0x28}));
  append_str(want, "ch0");
  append(want, bytes({0x7d, 0x28}));
  append_str(want, "axes");
  append(want, bytes({0x5d, 0x28}));
  append_str(want, "hist.axis");
  append_str(want, "Regular");
  append(want, bytes({0x93, 0x29, 0x81, 0x7d}));
  append_str(want, "_ax");
  append_str(want, "boost_histogram._core.axis");
  append_str(want, "regular_none");
  append(want, bytes({0x93, 0x29, 0x81, 0x28, 0x4b, 0x00, 0x4b, 0x00, 0x4b, 0x02, 0x7d, 0x28}));
  append_str(want, "name");
  append_str(want, "x");
  append_str(want, "label");
  append_str(want, "");
  append(want, bytes({0x75, 0x47, 0, 0, 0, 0, 0, 0, 0, 0, 0x47, 0x3f, 0xf0, 0, 0, 0, 0, 0, 0}));
  append(want, bytes({0x74, 0x62, 0x73, 0x62, 0x65}));
  append_str(want, "masked");
  want.push_back(0x89);
  append_str(want, "flow");
  append(want, bytes({0x89, 0x75, 0x75}));
  append_str(want, "symmetric_tensor");
  want.push_back(0x88);
  append_str(want, "systematic_type");
  append_str(want, "log_normal");
  append_str(want, "meta_info");
  append(want, bytes({0x7d, 0x75, 0x2e}));

  ChannelInfo ch;
  ch.name = "ch0";
  ch.axes.push_back(axis::regular(2, 0.0, 1.0, "x", false, false));
  EXPECT_EQ(pickle::make_meta_pickle({ch}, true, SystematicType::log_normal, {}), want);
}

TEST(WriterPickle, VariableAxisUsesNumpyFrombuffer) {
  pickle::PickleWriter w;
  pickle::write_axis(w, axis::variable({0, 1, 3}, "b"));
  const auto out = w.finish();
  const std::string s(out.begin(), out.end());
  EXPECT_NE(s.find("variable_uoflow"), std::string::npos);
  EXPECT_NE(s.find("numpy.core.numeric"), std::string::npos);
  EXPECT_NE(s.find("_frombuffer"), std::string::npos);
  // BYTEARRAY8 with 24 bytes = 3 little-endian doubles
  const auto pos = s.find('\x96');
  ASSERT_NE(pos, std::string::npos);
  uint64_t len = 0;
  std::memcpy(&len, s.data() + pos + 1, 8);
  EXPECT_EQ(len, 24u);
  double edges[3];
  std::memcpy(edges, s.data() + pos + 9, 24);
  EXPECT_EQ(edges[2], 3.0);
}

TEST(WriterPickle, CoreClassFollowsFlowFlags) {
  EXPECT_EQ(pickle::core_class_for(axis::regular(2, 0, 1, "x")), "regular_uoflow");
  EXPECT_EQ(pickle::core_class_for(axis::regular(2, 0, 1, "x", true, false)), "regular_uflow");
  EXPECT_EQ(pickle::core_class_for(axis::variable({0, 1}, "x", false, true)), "variable_oflow");
  EXPECT_EQ(pickle::core_class_for(axis::integer(0, 3, "i", false, false)), "integer_none");
  EXPECT_EQ(pickle::core_class_for(axis::str_category({"a"}, "c")), "category_str");
  EXPECT_EQ(pickle::core_class_for(axis::int_category({1}, "c", false)), "category_int_none");
  EXPECT_EQ(pickle::core_class_for(axis::boolean("b")), "boolean");
  AxisInfo bad = axis::boolean("b");
  bad.overflow = true;
  EXPECT_THROW(pickle::core_class_for(bad), Error);
}

TEST(WriterNaturalSort, MatchesRabbitNaturalSortKey) {
  // Python: sorted(names, key=natural_sort_key)
  EXPECT_EQ(natural_sorted({"b10", "b9", "B1", "a01b", "a", "Zeta", "alpha"}),
            (std::vector<std::string>{"a", "a01b", "alpha", "B1", "b9", "b10", "Zeta"}));
  EXPECT_FALSE(natural_less("x007", "x7"));
  EXPECT_FALSE(natural_less("x7", "x007"));
}

// ---- HDF5 level ----
struct H5Read {
  h5::Handle file;
  explicit H5Read(const std::string& path) : file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT)) {}
  std::vector<int64_t> attr(const std::string& obj, const char* name) {
    h5::Handle o(H5Oopen(file, obj.c_str(), H5P_DEFAULT));
    h5::Handle a(H5Aopen(o, name, H5P_DEFAULT));
    h5::Handle space(H5Aget_space(a));
    std::vector<int64_t> v(static_cast<size_t>(H5Sget_simple_extent_npoints(space)));
    if (!v.empty()) H5Aread(a, H5T_NATIVE_INT64, v.data());
    return v;
  }
  std::vector<unsigned> filter(const std::string& dset, H5Z_filter_t* id) {
    h5::Handle d(H5Dopen2(file, dset.c_str(), H5P_DEFAULT));
    h5::Handle plist(H5Dget_create_plist(d));
    if (H5Pget_nfilters(plist) == 0) {
      *id = -1;
      return {};
    }
    unsigned flags = 0;
    size_t n = 16;
    std::vector<unsigned> cd(16);
    char name[64];
    *id = H5Pget_filter2(plist, 0, &flags, &n, cd.data(), sizeof(name), name, nullptr);
    cd.resize(n);
    return cd;
  }
  H5D_layout_t layout(const std::string& dset) {
    h5::Handle d(H5Dopen2(file, dset.c_str(), H5P_DEFAULT));
    h5::Handle plist(H5Dget_create_plist(d));
    return H5Pget_layout(plist);
  }
};

TensorWriter small_model() {
  TensorWriter w;
  w.add_channel("ch0", {axis::regular(4, 0, 4, "x")});
  w.add_channel("ch0_masked", {axis::regular(2, 0, 2, "y")}, true);
  w.add_data("ch0", {5, 6, 7, 8});
  w.add_process("ch0", "sig", {1, 2, 0, 4}, true);
  w.add_process("ch0", "bkg", {3, 3, 3, 3});
  w.add_process("ch0_masked", "sig", {2, 2}, true);
  w.add_norm_systematic("lumi", {"sig", "bkg"}, "ch0", {1.02});
  return w;
}

TEST(WriterHdf5, AttributesLayoutsAndFilters) {
  const auto dir = test::scratch_dir("writer_format");
  WriteOptions o;
  o.compression = Compression::blosc2;
  small_model().write((dir / "b.hdf5").string(), o);
  H5Read f((dir / "b.hdf5").string());
  ASSERT_TRUE(f.file.valid());
  EXPECT_EQ(f.attr("hnorm", "original_shape"), (std::vector<int64_t>{6, 2}));
  EXPECT_EQ(f.attr("hlogk", "original_shape"), (std::vector<int64_t>{6, 2, 1}));  // symmetric
  EXPECT_EQ(f.attr("hpseudodata", "original_shape"), (std::vector<int64_t>{4, 0}));
  EXPECT_EQ(f.layout("hpseudodata"), H5D_CONTIGUOUS) << "empty arrays are contiguous";
  EXPECT_EQ(f.attr("meta", "narf_h5py_pickle_protocol_version"), (std::vector<int64_t>{1}));
  H5Z_filter_t id = 0;
  EXPECT_EQ(f.filter("hnorm", &id), (std::vector<unsigned>{1, 0, 8, 96, 5, 1, 1}));
  EXPECT_EQ(id, 32026);
  f.filter("hsysts", &id);
  EXPECT_EQ(id, H5Z_FILTER_DEFLATE);
  // The stored chunk is a Blosc2 contiguous frame (docs/input-reader.md "Compression filters and
  // HDF5_PLUGIN_PATH").
  h5::Handle d(H5Dopen2(f.file, "hnorm", H5P_DEFAULT));
  hsize_t chunk_bytes = 0;
  const hsize_t offset = 0;
  ASSERT_GE(H5Dget_chunk_storage_size(d, &offset, &chunk_bytes), 0);
  std::vector<uint8_t> raw(static_cast<size_t>(chunk_bytes));
  uint32_t filter_mask = 0;
  ASSERT_GE(H5Dread_chunk(d, H5P_DEFAULT, &offset, &filter_mask, raw.data()), 0);
  ASSERT_GE(raw.size(), 10u);
  EXPECT_EQ(std::string(raw.begin() + 2, raw.begin() + 10), std::string("b2frame\0", 8));
  const auto decoded = io::blosc2_decode_frame(raw.data(), raw.size(), 96);
  std::vector<double> norm(12);
  std::memcpy(norm.data(), decoded.data(), 96);
  EXPECT_EQ(norm, (std::vector<double>{1, 3, 2, 3, 0, 3, 4, 3, 2, 0, 2, 0}));  // [bin, proc], sig first

  o.compression = Compression::gzip;
  o.sparse = true;
  small_model().write((dir / "s.hdf5").string(), o);
  H5Read s((dir / "s.hdf5").string());
  EXPECT_EQ(s.attr("hnorm_sparse", "dense_shape"), (std::vector<int64_t>{6, 2}));
  EXPECT_EQ(s.attr("hnorm_sparse/indices", "original_shape"), (std::vector<int64_t>{9, 2}));  // 9 nonzero
  EXPECT_EQ(s.attr("hlogk_sparse", "dense_shape"), (std::vector<int64_t>{9, 1}));
  EXPECT_EQ(s.attr("hlogk_sparse/values", "original_shape"), (std::vector<int64_t>{7}));  // ch0 only
}

TEST(WriterHdf5, FilesAreReproducible) {
  const auto dir = test::scratch_dir("writer_repro");
  small_model().write((dir / "a.hdf5").string());
  small_model().write((dir / "b.hdf5").string());
  auto slurp = [](const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::vector<char>(std::istreambuf_iterator<char>(in), {});
  };
  EXPECT_EQ(slurp(dir / "a.hdf5"), slurp(dir / "b.hdf5"));
  EXPECT_FALSE(std::filesystem::exists(dir / "a.hdf5.tmp"));
}

TEST(WriterErrors, MisuseIsReported) {
  TensorWriter w;
  EXPECT_THROW(w.add_channel("c", {axis::regular(2, 0, 1, "x")}, false, true), Error);  // flow needs masked
  w.add_channel("c", {axis::regular(2, 0, 1, "x")});
  EXPECT_THROW(w.add_channel("c", {axis::regular(2, 0, 1, "x")}), Error);
  EXPECT_THROW(w.add_process("c", "p", {1, 2, 3}), Error);  // wrong size
  EXPECT_THROW(w.add_process("nope", "p", {1, 2}), Error);
  EXPECT_THROW(w.add_process("c", "p", {1, -2}), Error) << "negative default variances";
  w.add_process("c", "p", {1, 2}, true);
  EXPECT_THROW(w.add_systematic("s", "q", "c", {1, 2}), Error);  // unknown process
  EXPECT_THROW(w.add_norm_systematic("s", {"p"}, "c", std::vector<double>{1.1, 1.2}), Error);
  const auto dir = test::scratch_dir("writer_errors");
  try {
    w.write((dir / "x.hdf5").string());
    FAIL() << "expected an error for the missing data";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("channel 'c' has no data"), std::string::npos) << e.what();
  }
  w.add_data("c", {1, 1});
  w.add_process("c", "q", {1, 1}, false);
  w.add_process("c", "p2", {1, 1}, true);
  TensorWriter both;
  both.add_channel("c", {axis::regular(2, 0, 1, "x")});
  both.add_channel("d", {axis::regular(2, 0, 1, "x")});
  both.add_data("c", {1, 1});
  both.add_data("d", {1, 1});
  both.add_process("c", "p", {1, 1}, true);
  both.add_process("d", "p", {1, 1}, false);
  EXPECT_THROW(both.write((dir / "y.hdf5").string()), Error);
  SystematicOptions unconstrained;
  unconstrained.constrained = false;
  w.add_systematic("free", "p", "c", {1.1, 1.1}, unconstrained);
  EXPECT_THROW(w.add_systematic("free", "q", "c", {1.1, 1.1}), Error) << "constrained and unconstrained";
}

TEST(WriterLogk, ConventionsOfRabbit) {
  // log_normal: sign flips and zero variations give log(1e-3); logk is zeroed where norm == 0.
  TensorWriter w;
  w.add_channel("c", {axis::regular(4, 0, 4, "x")});
  w.add_data("c", {1, 1, 1, 1});
  w.add_process("c", "p", {1, 2, 0, 4}, true);
  w.add_systematic("s", "p", "c", {2, -1, 5, 0});
  const auto dir = test::scratch_dir("writer_logk");
  w.write((dir / "l.hdf5").string());
  H5Read f((dir / "l.hdf5").string());
  h5::Handle d(H5Dopen2(f.file, "hlogk", H5P_DEFAULT));
  std::vector<double> logk(4);
  ASSERT_GE(H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, logk.data()), 0);
  EXPECT_DOUBLE_EQ(logk[0], std::log(2.0));
  EXPECT_DOUBLE_EQ(logk[1], std::log(1e-3));
  EXPECT_EQ(logk[2], 0.0);
  EXPECT_DOUBLE_EQ(logk[3], std::log(1e-3));
}

}  // namespace
}  // namespace rabbit
