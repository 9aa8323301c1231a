// docs/input-reader.md "Variable-length data and the global heap": corrupt heaps (the inputs
// that crashed or hung HDF5 inside H5Dread, tests/io/crashers/README.md) end in one InputError naming
// the file and the dataset, quickly, and leave no HDF5 object open.
#include <gtest/gtest.h>
#include <hdf5.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "io/reader_test_support.hpp"
#include "rabbit/core/error.hpp"
#include "rabbit/io/fit_input_data.hpp"
#include "rabbit/io/hdf5_reader.hpp"
#include "support/test_paths.hpp"

namespace rabbit {
namespace {

std::filesystem::path crasher(const std::string& name) {
  return test::source_dir() / "tests" / "io" / "crashers" / name;
}

// The message of the InputError read_fit_input throws for `path`, checked to be one line that starts
// with the file name; fails the test when there is none or it takes more than a few seconds.
std::string read_error(const std::string& path) {
  const auto start = std::chrono::steady_clock::now();
  std::string message;
  try {
    read_fit_input(path);
    ADD_FAILURE() << path << ": expected an InputError";
  } catch (const InputError& e) {
    message = e.what();
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 5.0) << path;
  EXPECT_EQ(message.rfind(path + ": dataset '", 0), 0u) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  EXPECT_EQ(H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL), 0) << "HDF5 objects left open after: " << message;
  return message;
}

TEST(ReaderCorruptHeap, OneChangedByteInTheHeapIsAnErrorNotASegfault) {
  const std::string m = read_error(crasher("segv_global_heap_1byte.hdf5").string());
  EXPECT_NE(m.find("dataset 'hprocs': corrupt variable-length data"), std::string::npos) << m;
  EXPECT_NE(m.find("past the collection end"), std::string::npos) << m;
}

TEST(ReaderCorruptHeap, EightRandomBytesAreAnErrorNotASegfault) {
  const std::string m = read_error(crasher("segv_global_heap_8bytes.hdf5").string());
  EXPECT_NE(m.find("corrupt variable-length data"), std::string::npos) << m;
}

TEST(ReaderCorruptHeap, ZeroedHeapBytesAreAnErrorNotAHang) {
  const std::string m = read_error(crasher("hang_global_heap_zeroed.hdf5").string());
  EXPECT_NE(m.find("corrupt variable-length data"), std::string::npos) << m;
}

// A corrupt local heap (a group's link names) that HDF5 dereferences while looking up 'meta/pickle_data':
// our heap check does not see it, the structure walk in a child process does (hdf5_structure_probe.hpp).
TEST(ReaderCorruptHeap, ACrashInsideHdf5IsAnErrorNamingTheFile) {
  const std::string path = crasher("segv_local_heap_8bytes_ff.hdf5").string();
  std::string message;
  try {
    read_fit_input(path);
    ADD_FAILURE() << "expected an InputError";
  } catch (const InputError& e) {
    message = e.what();
  }
  EXPECT_EQ(message.rfind(path + ": object '", 0), 0u) << message;
  EXPECT_NE(message.find("corrupt HDF5 structure (the HDF5 library crashed reading it: Segmentation fault)"),
            std::string::npos)
      << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

// A contiguous (unfiltered) string dataset, as h5py writes small lists: the descriptors come from the
// file directly. The heap object of 'hsysts'[0] is made to claim more bytes than its element's length.
TEST(ReaderCorruptHeap, ContiguousStringsWithAWrongObjectSizeAreAnError) {
  const auto path = test::scratch_dir("reader_corrupt_heap_contiguous") / "t.hdf5";
  {
    h5::Handle file(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT));
    h5::Handle type(H5Tcopy(H5T_C_S1));
    H5Tset_size(type, H5T_VARIABLE);
    const hsize_t n = 1;
    h5::Handle space(H5Screate_simple(1, &n, nullptr));
    h5::Handle d(H5Dcreate2(file, "hsysts", type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
    const char* names[] = {"only_syst_name"};
    ASSERT_GE(H5Dwrite(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, names), 0);
    h5::Handle dcpl(H5Dget_create_plist(d));
    ASSERT_EQ(H5Pget_layout(dcpl), H5D_CONTIGUOUS);
  }
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  const size_t gcol = bytes.find("GCOL");
  ASSERT_NE(gcol, std::string::npos);
  const size_t name = bytes.find("only_syst_name", gcol);
  ASSERT_NE(name, std::string::npos);
  bytes[name - 8] = static_cast<char>(bytes[name - 8] + 1);  // object size 14 -> 15
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << bytes;
  }
  h5::Reader reader(path.string());
  try {
    reader.read_strings("hsysts");
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("dataset 'hsysts': corrupt variable-length data: element 0: global "
                                         "heap object 1"),
              std::string::npos)
        << e.what();
  }
}

TEST(ReaderCorruptHeap, IntactVariableLengthDataReadsAsBefore) {
  const FitInputData d = read_fit_input(test::example_tensor());
  EXPECT_FALSE(d.procs.empty());
  EXPECT_FALSE(d.systs.empty());
  const FitInputData blosc2 =
      read_fit_input((test::source_dir() / "tests/reference/tensors/sparse_blosc2.hdf5").string());
  EXPECT_FALSE(blosc2.procs.empty());
}

}  // namespace
}  // namespace rabbit
