// Filters 32001 (Blosc v1) and 32026 (Blosc2 frame): chunks compressed here with the real
// libraries' own APIs, stored with H5Dwrite_chunk under the filter id and the cd_values that
// hdf5plugin writes, then read back through read paths of the reader.
#include <blosc2.h>
#include <gtest/gtest.h>

#include <cstring>

#include "io/reader_test_support.hpp"
#include "rabbit/core/error.hpp"
#include "rabbit/io/blosc_filters.hpp"
#include "rabbit/io/fit_input_data.hpp"
#include "rabbit/io/hdf5_reader.hpp"
#include "support/test_paths.hpp"

namespace rabbit {
namespace {

std::vector<double> pattern(size_t n) {
  std::vector<double> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = 0.001 * static_cast<double>(i % 977) - 0.3 + 1e-9 * static_cast<double>(i);
  return v;
}

// A Blosc2 cframe exactly as PyTables' hdf5-blosc2 filter builds it: a super-chunk holding the
// whole HDF5 chunk as chunk 0, serialised with blosc2_schunk_to_buffer.
std::vector<uint8_t> blosc2_frame_from_library(const void* data, size_t bytes, int typesize, int codec) {
  blosc2_init();
  blosc2_cparams cparams = BLOSC2_CPARAMS_DEFAULTS;
  cparams.compcode = static_cast<uint8_t>(codec);
  cparams.clevel = 5;
  cparams.typesize = typesize;
  cparams.filters[BLOSC2_MAX_FILTERS - 1] = BLOSC_SHUFFLE;
  blosc2_storage storage = BLOSC2_STORAGE_DEFAULTS;
  storage.cparams = &cparams;
  storage.contiguous = false;
  blosc2_schunk* schunk = blosc2_schunk_new(&storage);
  EXPECT_NE(schunk, nullptr);
  EXPECT_GE(blosc2_schunk_append_buffer(schunk, data, static_cast<int32_t>(bytes)), 0);
  uint8_t* frame = nullptr;
  bool needs_free = false;
  const int64_t len = blosc2_schunk_to_buffer(schunk, &frame, &needs_free);
  EXPECT_GT(len, 0);
  std::vector<uint8_t> out(frame, frame + len);
  if (needs_free) free(frame);
  blosc2_schunk_free(schunk);
  return out;
}

template <typename F>
std::vector<std::vector<uint8_t>> compress_chunks(const std::vector<double>& v, size_t chunk, F&& compress) {
  std::vector<std::vector<uint8_t>> chunks;
  for (size_t start = 0; start < v.size(); start += chunk) {
    // HDF5 chunks are always full size: the last one is padded (with zeros here).
    std::vector<double> c(chunk, 0.0);
    std::copy(v.begin() + static_cast<ptrdiff_t>(start),
              v.begin() + static_cast<ptrdiff_t>(std::min(v.size(), start + chunk)), c.begin());
    chunks.push_back(compress(c.data(), c.size() * sizeof(double)));
  }
  return chunks;
}

TEST(BloscFilters, AreRegistered) {
  const io::BloscFilterStatus& s = io::ensure_blosc_filters();
  EXPECT_NE(s.blosc, io::FilterSource::unavailable);
  EXPECT_NE(s.blosc2, io::FilterSource::unavailable);
  EXPECT_GT(H5Zfilter_avail(io::kBloscFilterId), 0);
  EXPECT_GT(H5Zfilter_avail(io::kBlosc2FilterId), 0);
}

TEST(BloscFilters, Blosc2FramesFromTheLibraryDecodeBitExactly) {
  io::ensure_blosc_filters();
  const auto dir = test::scratch_dir("blosc2_frames");
  const std::vector<double> values = pattern(10000);
  const size_t chunk = 4096;  // 3 chunks, the last one partial
  const auto chunks = compress_chunks(
      values, chunk, [](const void* p, size_t n) { return blosc2_frame_from_library(p, n, 8, BLOSC_LZ4); });
  // The payload is a frame, not a bare chunk: "b2frame" magic at byte 2.
  ASSERT_GT(chunks[0].size(), 10u);
  EXPECT_EQ(std::memcmp(chunks[0].data() + 2, "b2frame", 7), 0);
  {
    test::H5Builder b(dir / "f.hdf5");
    b.raw_chunks("x", H5T_IEEE_F64LE, values.size(), chunk, io::kBlosc2FilterId,
                 {1, 0, 8, static_cast<unsigned>(chunk * 8), 5, 1, 1}, chunks, {100, 100});
  }
  h5::Reader r((dir / "f.hdf5").string());
  const h5::DatasetInfo info = r.info("x");
  EXPECT_EQ(info.shape, (std::vector<int64_t>{100, 100}));
  const std::vector<double> back = r.read_doubles(info);
  ASSERT_EQ(back.size(), values.size());
  EXPECT_EQ(std::memcmp(back.data(), values.data(), values.size() * sizeof(double)), 0);
  // Partial reads cross chunk boundaries.
  std::vector<double> part(5000);
  r.read_doubles_range(info, 4000, 5000, part.data());
  EXPECT_EQ(std::memcmp(part.data(), values.data() + 4000, part.size() * sizeof(double)), 0);
}

TEST(BloscFilters, Blosc2ZstdAndZlibCodecs) {
  const std::vector<double> values = pattern(3000);
  for (int codec : {BLOSC_ZSTD, BLOSC_ZLIB, BLOSC_BLOSCLZ}) {
    const auto frame = blosc2_frame_from_library(values.data(), values.size() * 8, 8, codec);
    const auto back =
        io::blosc2_decode_frame(frame.data(), frame.size(), static_cast<int64_t>(values.size() * 8));
    ASSERT_EQ(back.size(), values.size() * 8) << codec;
    EXPECT_EQ(std::memcmp(back.data(), values.data(), back.size()), 0) << codec;
  }
}

TEST(BloscFilters, Blosc2SpecialZeroChunk) {
  const std::vector<double> zeros(2048, 0.0);
  const auto frame = blosc2_frame_from_library(zeros.data(), zeros.size() * 8, 8, BLOSC_LZ4);
  const auto back = io::blosc2_decode_frame(frame.data(), frame.size());
  ASSERT_EQ(back.size(), zeros.size() * 8);
  EXPECT_EQ(std::memcmp(back.data(), zeros.data(), back.size()), 0);
}

TEST(BloscFilters, Blosc1ChunksFromTheLibraryDecodeBitExactly) {
  io::ensure_blosc_filters();
  const auto dir = test::scratch_dir("blosc1_chunks");
  const std::vector<double> values = pattern(7000);
  const size_t chunk = 2500;
  const auto chunks = compress_chunks(values, chunk, [](const void* p, size_t n) {
    return io::blosc1_encode(p, n, 8, 5, 1, 1 /* BLOSC_LZ4 in c-blosc */);
  });
  {
    test::H5Builder b(dir / "f.hdf5");
    b.raw_chunks("x", H5T_IEEE_F64LE, values.size(), chunk, io::kBloscFilterId,
                 {2, 2, 8, static_cast<unsigned>(chunk * 8), 5, 1, 1}, chunks, {7000});
  }
  h5::Reader r((dir / "f.hdf5").string());
  const std::vector<double> back = r.read_doubles(r.info("x"));
  EXPECT_EQ(std::memcmp(back.data(), values.data(), values.size() * sizeof(double)), 0);
}

TEST(BloscFilters, MetaPickleThroughBlosc1) {
  // The meta pickle as rabbit stores it: uint8, filter 32001 with typesize 1.
  test::TensorSpec spec;
  const std::vector<uint8_t> pickle_bytes = *spec.meta;
  spec.skip = {"meta"};
  spec.extra = [&](test::H5Builder& b) {
    b.group("meta");
    b.attr_int64("meta", "narf_h5py_pickle_protocol_version", {1}, true);
    const size_t chunk = 64;
    std::vector<std::vector<uint8_t>> chunks;
    for (size_t s = 0; s < pickle_bytes.size(); s += chunk) {
      std::vector<uint8_t> c(chunk, 0);
      std::copy(pickle_bytes.begin() + static_cast<ptrdiff_t>(s),
                pickle_bytes.begin() + static_cast<ptrdiff_t>(std::min(pickle_bytes.size(), s + chunk)),
                c.begin());
      chunks.push_back(io::blosc1_encode(c.data(), c.size(), 1, 5, 1, 1));
    }
    b.raw_chunks("meta/pickle_data", H5T_STD_U8LE, pickle_bytes.size(), chunk, io::kBloscFilterId,
                 {2, 2, 1, static_cast<unsigned>(chunk), 5, 1, 1}, chunks,
                 {static_cast<int64_t>(pickle_bytes.size())});
  };
  const auto path = test::scratch_dir("blosc1_meta") / "t.hdf5";
  test::write_tensor(path, spec);
  const FitInputData d = read_fit_input(path.string());
  EXPECT_TRUE(d.has_meta);
  EXPECT_EQ(d.meta_pickle, pickle_bytes);
  EXPECT_EQ(d.channels.size(), 2u);
}

TEST(BloscFilters, CorruptChunksReportTheCause) {
  io::ensure_blosc_filters();
  const auto dir = test::scratch_dir("blosc_corrupt");
  const std::vector<double> values = pattern(512);
  auto frame = blosc2_frame_from_library(values.data(), values.size() * 8, 8, BLOSC_LZ4);
  frame.resize(frame.size() / 2);  // truncated frame
  std::vector<uint8_t> bare = io::blosc1_encode(values.data(), values.size() * 8, 8, 5, 1, 1);
  {
    test::H5Builder b(dir / "f.hdf5");
    b.raw_chunks("truncated", H5T_IEEE_F64LE, 512, 512, io::kBlosc2FilterId, {1, 0, 8, 4096, 5, 1, 1},
                 {frame}, {512});
    // A bare Blosc chunk where a Blosc2 frame is expected.
    b.raw_chunks("bare", H5T_IEEE_F64LE, 512, 512, io::kBlosc2FilterId, {1, 0, 8, 4096, 5, 1, 1}, {bare},
                 {512});
    std::vector<uint8_t> cut(bare.begin(), bare.begin() + 40);
    b.raw_chunks("cut_blosc1", H5T_IEEE_F64LE, 512, 512, io::kBloscFilterId, {2, 2, 8, 4096, 5, 1, 1}, {cut},
                 {512});
  }
  h5::Reader r((dir / "f.hdf5").string());
  auto message = [&](const std::string& name) {
    try {
      r.read_doubles(r.info(name));
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  const std::string truncated = message("truncated");
  EXPECT_NE(truncated.find("dataset 'truncated': Blosc2 frame:"), std::string::npos) << truncated;
  const std::string bare_msg = message("bare");
  EXPECT_NE(bare_msg.find("missing 'b2frame' magic"), std::string::npos) << bare_msg;
  const std::string cut_msg = message("cut_blosc1");
  EXPECT_NE(cut_msg.find("dataset 'cut_blosc1': Blosc chunk: corrupt"), std::string::npos) << cut_msg;
}

// A filter id that nobody provides: one-line error naming dataset, id and the fix.
size_t passthrough(unsigned, size_t, const unsigned[], size_t nbytes, size_t*, void**) {
  return nbytes;
}

TEST(BloscFilters, UnavailableFilterIsAOneLineErrorWithTheFix) {
  const auto dir = test::scratch_dir("filter_missing");
  const H5Z_class2_t fake = {H5Z_CLASS_T_VERS, 32999, 1, 1, "fake", nullptr, nullptr, passthrough};
  ASSERT_GE(H5Zregister(&fake), 0);
  {
    test::H5Builder b(dir / "f.hdf5");
    std::vector<double> v(16, 1.0);
    const hsize_t n = 16, chunk = 8;
    h5::Handle space(H5Screate_simple(1, &n, nullptr));
    h5::Handle dcpl(H5Pcreate(H5P_DATASET_CREATE));
    H5Pset_chunk(dcpl, 1, &chunk);
    H5Pset_filter(dcpl, 32999, H5Z_FLAG_MANDATORY, 0, nullptr);
    h5::Handle d(H5Dcreate2(b.file(), "hlogk", H5T_IEEE_F64LE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT));
    ASSERT_GE(H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()), 0);
  }
  ASSERT_GE(H5Zunregister(32999), 0);
  h5::Reader r((dir / "f.hdf5").string());
  try {
    r.read_doubles(r.info("hlogk"));
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("dataset 'hlogk': uses HDF5 filter 32999"), std::string::npos) << m;
    EXPECT_NE(m.find("HDF5_PLUGIN_PATH"), std::string::npos) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  }
}

TEST(BloscFilters, WritingThroughOurFiltersRoundTrips) {
  // Our filters also encode (used by io_bench and available to writers).
  io::ensure_blosc_filters();
  const auto dir = test::scratch_dir("blosc_write");
  const std::vector<double> values = pattern(20000);
  for (int id : {io::kBloscFilterId, io::kBlosc2FilterId}) {
    const auto path = dir / ("f" + std::to_string(id) + ".hdf5");
    {
      test::H5Builder b(path);
      const hsize_t n = values.size(), chunk = 3000;
      h5::Handle space(H5Screate_simple(1, &n, nullptr));
      h5::Handle dcpl(H5Pcreate(H5P_DATASET_CREATE));
      H5Pset_chunk(dcpl, 1, &chunk);
      const unsigned cd[7] = {0, 0, 0, 0, 5, 1, 1};
      ASSERT_GE(H5Pset_filter(dcpl, static_cast<H5Z_filter_t>(id), H5Z_FLAG_OPTIONAL, 7, cd), 0);
      h5::Handle d(H5Dcreate2(b.file(), "x", H5T_IEEE_F64LE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT));
      ASSERT_TRUE(d.valid());
      ASSERT_GE(H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()), 0);
      // set_local filled typesize and chunk bytes.
      h5::Handle plist(H5Dget_create_plist(d));
      unsigned flags = 0, got[8] = {0};
      size_t ncd = 8;
      ASSERT_GE(
          H5Pget_filter_by_id2(plist, static_cast<H5Z_filter_t>(id), &flags, &ncd, got, 0, nullptr, nullptr),
          0);
      EXPECT_EQ(got[2], 8u);
      EXPECT_EQ(got[3], 3000u * 8u);
    }
    h5::Reader r(path.string());
    const auto back = r.read_doubles(r.info("x"));
    EXPECT_EQ(std::memcmp(back.data(), values.data(), values.size() * 8), 0) << id;
  }
}

}  // namespace
}  // namespace rabbit
