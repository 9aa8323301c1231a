// ResultWriter's two layouts on a small recorded tree (docs/output-format.md): the storage buffer in
// boost-histogram's memory order with its flow bins, upstream's ones in string-category overflow
// bins of flow channels, the aliases for rabbit-fit 0.2.5, the globals of the pickle streams (no
// numpy module name, so numpy 1 and 2 load them), and the atomic write.
#include <gtest/gtest.h>

#include <cstring>
#include <set>

#include "rabbit/io/hdf5_handle.hpp"
#include "rabbit/io/pickle.hpp"
#include "rabbit/postfit/result_file.hpp"
#include "support/test_paths.hpp"

namespace fs = std::filesystem;
using namespace rabbit::result;
using rabbit::pickle::Kind;
using rabbit::pickle::Value;

namespace {

// A channel with flow: x (regular, 2 bins, both flow bins) and processes (a, b); 4 x 2 values.
Axis regular_x() {
  Axis x;
  x.type = "regular";
  x.name = "x";
  x.bins = 2;
  x.lower = 0;
  x.upper = 1;
  x.underflow = x.overflow = true;
  return x;
}

void record(ResultWriter& w) {
  auto meta = create_group(w.root(), "meta", "meta");
  write_strings(meta, "procs", {"a", "b"});
  write_strings(meta, "pois", {"a"}, NameArray::fixed_bytes);
  auto g = create_group(w.root(), "results", "result");
  set_attr(g, "fit_index", int64_t{0});
  const std::vector<double> values = {10, 11, 20, 21, 30, 31, 40, 41};  // [x with flow][process]
  const std::vector<double> variances = {1, 2, 3, 4, 5, 6, 7, 8};
  auto ch =
      create_group(create_group(create_group(create_group(g, "mappings", "dict"), "BaseMapping", "dict"),
                                "channels", "dict"),
                   "ch0", "dict");
  write_hist(ch, "hist_postfit", {regular_x(), Axis::strcat("processes", {"a", "b"})}, values.data(),
             variances.data(), "postfit", true);
  write_hist(g, "scan", {Axis::floatcat("scan", {0.5, 1e-05})}, values.data(), nullptr);
  write_scalar(g, "nllvalreduced", 1.5);
  write_scalar_bool(g, "postfit_profile", true);
  write_scalar_str(only_in(g, Layout::rabbit), "only_rabbit", "r");
  w.flush();
}

std::vector<uint8_t> read_bytes(const fs::path& file, const std::string& dataset) {
  rabbit::h5::Handle f(H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
  rabbit::h5::Handle d(H5Dopen2(f, dataset.c_str(), H5P_DEFAULT));
  rabbit::h5::Handle space(H5Dget_space(d));
  std::vector<uint8_t> out(static_cast<size_t>(H5Sget_simple_extent_npoints(space)));
  H5Dread(d, H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data());
  return out;
}

void collect_globals(const Value& v, std::set<std::string>& out) {
  if (v.is(Kind::global)) out.insert(v.qualified_name());
  for (const auto& i : v.items) collect_globals(*i, out);
  for (const auto& [k, x] : v.dict_items) {
    collect_globals(*k, out);
    collect_globals(*x, out);
  }
  for (const auto* p : {&v.cls, &v.args, &v.state, &v.dtype})
    if (*p) collect_globals(**p, out);
}

TEST(ResultWriter, RabbitLayoutStorageAndReaders) {
  const fs::path dir = rabbit::test::scratch_dir("result_writer");
  for (Layout layout : {Layout::rabbit, Layout::plain}) {
    const fs::path file = dir / (layout == Layout::rabbit ? "rabbit.hdf5" : "plain.hdf5");
    {
      ResultWriter w(file.string(), layout);
      record(w);
      w.commit();
    }
    const ResultReader r(file.string());
    EXPECT_EQ(r.layout(), layout);
    const Hist inner = r.hist("results/mappings/BaseMapping/channels/ch0/hist_postfit");
    EXPECT_EQ(inner.shape, (std::vector<int64_t>{2, 2}));
    EXPECT_EQ(inner.values, (std::vector<double>{20, 21, 30, 31}));
    EXPECT_EQ(inner.variances, (std::vector<double>{3, 4, 5, 6}));
    const Hist flow = r.hist("results/mappings/BaseMapping/channels/ch0/hist_postfit", true);
    EXPECT_EQ(flow.shape, (std::vector<int64_t>{4, 2}));
    EXPECT_EQ(flow.values, (std::vector<double>{10, 11, 20, 21, 30, 31, 40, 41}));
    const Hist scan = r.hist("results/scan");
    EXPECT_EQ(scan.axis_values.at(0), (std::vector<double>{0.5, 1e-05}));
    EXPECT_EQ(r.scalar("results/nllvalreduced"), 1.5);
    EXPECT_EQ(r.scalar("results/postfit_profile"), 1.0);
    EXPECT_EQ(r.strings("meta/pois"), (std::vector<std::string>{"a"}));
    EXPECT_EQ(r.strings("meta/procs"), (std::vector<std::string>{"a", "b"}));
    EXPECT_EQ(r.exists("results/only_rabbit"), layout == Layout::rabbit);
    std::vector<std::string> keys;
    for (const auto& e : r.members("results")) keys.push_back(e.key);
    if (layout == Layout::rabbit) {
      EXPECT_EQ(keys, (std::vector<std::string>{"mappings", "scan", "nllvalreduced", "postfit_profile",
                                                "only_rabbit"}));
      // rabbit-fit 0.2.5's names, the same objects, left out of the listing.
      EXPECT_TRUE(r.exists("results/physics_models/BaseMapping/channels/ch0/hist_postfit"));
      EXPECT_EQ(r.strings("meta/signals"), (std::vector<std::string>{"a"}));
    } else {
      EXPECT_EQ(keys, (std::vector<std::string>{"mappings", "scan", "nllvalreduced", "postfit_profile"}));
      EXPECT_EQ(r.attr_str("results", "key"), "results");
    }
  }
}

// What wums reads into hist.view(flow=True): boost-histogram's memory order (first axis fastest),
// weight bins as (value, variance) pairs, upstream's ones in the overflow bin of string categories
// when the channel has flow.
TEST(ResultWriter, StorageBufferAsBoostHistogramHoldsIt) {
  const fs::path file = rabbit::test::scratch_dir("result_writer_buffer") / "r.hdf5";
  {
    ResultWriter w(file.string(), Layout::rabbit);
    record(w);
    w.commit();
  }
  const auto bytes = read_bytes(file, "/results/proxied_objects/proxied_object_0/h5_buffers/h5_buffer_0");
  ASSERT_EQ(bytes.size(), 4u * 3u * 2u * sizeof(double));  // x: 4 with flow; processes: 2 + overflow
  std::vector<double> storage(bytes.size() / sizeof(double));
  std::memcpy(storage.data(), bytes.data(), bytes.size());
  auto bin = [&](int ix, int ip, int c) { return storage[(static_cast<size_t>(ix) + 4u * ip) * 2u + c]; };
  EXPECT_EQ(bin(0, 0, 0), 10);  // underflow of x, process a
  EXPECT_EQ(bin(1, 1, 0), 21);
  EXPECT_EQ(bin(1, 1, 1), 4);
  EXPECT_EQ(bin(3, 1, 0), 41);  // overflow of x, process b
  for (int ix = 0; ix < 4; ++ix) {
    EXPECT_EQ(bin(ix, 2, 0), 1.0) << ix;  // the processes' overflow bin
    EXPECT_EQ(bin(ix, 2, 1), 1.0) << ix;
  }
}

// The streams name wums, hist and boost-histogram classes and numpy's public API only: nothing that
// moved between numpy 1 and 2 (numpy.core became numpy._core).
TEST(ResultWriter, PickleStreamsUseVersionIndependentGlobals) {
  const fs::path file = rabbit::test::scratch_dir("result_writer_globals") / "r.hdf5";
  {
    ResultWriter w(file.string(), Layout::rabbit);
    record(w);
    Axis v;
    v.type = "variable";
    v.name = "v";
    v.edges = {0, 1, 3};
    const std::vector<double> values = {1, 2};
    write_hist(create_group(w.root(), "results_asimov", "result"), "h", {v}, values.data(), nullptr);
    w.commit();
  }
  std::set<std::string> globals;
  for (const char* dataset : {"/meta/pickle_data", "/results/pickle_data", "/results_asimov/pickle_data",
                              "/results/proxied_objects/proxied_object_0/pickle_data",
                              "/results/proxied_objects/proxied_object_1/pickle_data",
                              "/results_asimov/proxied_objects/proxied_object_0/pickle_data"}) {
    const auto bytes = read_bytes(file, dataset);
    collect_globals(*rabbit::pickle::parse(bytes), globals);
    // Our reader reads numpy arrays as data (no global left to collect): look at the stream too.
    const std::string stream(bytes.begin(), bytes.end());
    EXPECT_EQ(stream.find("numpy.core"), std::string::npos) << dataset;
    EXPECT_EQ(stream.find("numpy._core"), std::string::npos) << dataset;
    if (std::string(dataset) == "/results_asimov/proxied_objects/proxied_object_0/pickle_data") {
      EXPECT_NE(stream.find("frombuffer"), std::string::npos) << "the variable axis' edges";
    }
  }
  const std::set<std::string> expected = {"numpy.array",
                                          "wums.ioutils.H5PickleProxy",
                                          "wums.ioutils.H5Path",
                                          "wums.ioutils.H5Buffer",
                                          "wums.ioutils.make_Hist",
                                          "hist.axis.Regular",
                                          "hist.axis.StrCategory",
                                          "hist.axis.Variable",
                                          "boost_histogram._core.axis.regular_uoflow",
                                          "boost_histogram._core.axis.category_str",
                                          "boost_histogram._core.axis.variable_none",
                                          "boost_histogram.storage.Weight",
                                          "boost_histogram.storage.Double"};
  EXPECT_EQ(globals, expected);
}

// Interrupted before commit (an exception): neither the final nor the temporary file remains.
TEST(ResultWriter, UncommittedWriteLeavesNoFile) {
  const fs::path dir = rabbit::test::scratch_dir("result_writer_atomic");
  std::string tmp;
  {
    ResultWriter w((dir / "r.hdf5").string(), Layout::rabbit);
    record(w);
    tmp = w.temporary_path();
    EXPECT_TRUE(fs::exists(tmp));
  }
  EXPECT_FALSE(fs::exists(tmp));
  EXPECT_FALSE(fs::exists(dir / "r.hdf5"));
}

}  // namespace
