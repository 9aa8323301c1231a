// The memory limit of a run (docs/user-guide.md "Memory"): the cgroup limits of a slurm job are
// read from /proc/self/cgroup and the cgroup file systems (v2, v1, and a container's namespace
// whose path is not visible), and a run under `ulimit -v` ends with one line that names what did
// not fit and the figure, exit code 4, instead of a bare std::bad_alloc. A small file that claims
// a 2 GiB 'hdata_obs' is refused before that array is allocated (docs/input-reader.md "Observations").
#include "rabbit/core/memory_limit.hpp"

#include <gtest/gtest.h>
#include <hdf5.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <new>
#include <string>

#include "rabbit/io/hdf5_handle.hpp"
#include "rabbit/io/tensor_writer.hpp"
#include "support/command.hpp"
#include "support/test_paths.hpp"

namespace fs = std::filesystem;
using rabbit::memory::cgroup_headroom;
using rabbit::test::scratch_dir;

namespace {
void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}
constexpr double kGiB = 1073741824.0;
}  // namespace

TEST(MemoryLimit, CgroupV2LimitOfTheJobAndItsAncestors) {
  const auto root = scratch_dir("memory_cgroup_v2");
  // slurm: the job's cgroup holds the limit, the step's (where the process is) has none.
  write(root / "slurm/job_1/memory.max", "4294967296\n");
  write(root / "slurm/job_1/memory.current", "1073741824\n");
  write(root / "slurm/job_1/memory.stat", "anon 536870912\ninactive_file 536870912\n");
  write(root / "slurm/job_1/step_0/memory.max", "max\n");
  write(root / "slurm/job_1/step_0/memory.current", "1073741824\n");
  const auto h = cgroup_headroom("0::/slurm/job_1/step_0\n", root.string(), "/nonexistent");
  // 4 GiB less the 1 GiB used, of which 0.5 GiB is reclaimable page cache.
  EXPECT_DOUBLE_EQ(h.bytes, 3.5 * kGiB);
  EXPECT_NE(h.source.find("slurm/job_1 (memory.max)"), std::string::npos) << h.source;
}

TEST(MemoryLimit, CgroupV1InAContainerNamespaceAndUnlimited) {
  const auto root = scratch_dir("memory_cgroup_v1");
  // The path named in /proc/self/cgroup is not visible: the namespace's root holds the limit.
  write(root / "memory.limit_in_bytes", "2147483648\n");
  write(root / "memory.usage_in_bytes", "1073741824\n");
  write(root / "memory.stat", "cache 0\ntotal_inactive_file 0\n");
  auto h = cgroup_headroom("4:memory:/process_api/abc\n0::/\n", "/nonexistent", root.string());
  EXPECT_DOUBLE_EQ(h.bytes, 1.0 * kGiB);
  // v1's "unlimited" (2^63 rounded to a page) is no limit.
  write(root / "memory.limit_in_bytes", "9223372036854771712\n");
  h = cgroup_headroom("4:memory:/process_api/abc\n", "/nonexistent", root.string());
  EXPECT_TRUE(h.source.empty()) << h.source;
}

TEST(MemoryLimit, UlimitRunEndsWithOneLineAndTheFigure) {
  const auto dir = scratch_dir("memory_ulimit");
  // 5000 parameters: the prefit covariance alone is 5000^2 doubles (0.19 GiB), and --noHessian
  // needs it and its postfit copy (0.37 GiB) -- more than 0.29 GiB of address space leaves.
  rabbit::TensorWriter w(rabbit::SystematicType::log_normal);
  w.add_channel("ch0", {rabbit::axis::regular(4, 0, 4, "x")});
  w.add_data("ch0", {100, 110, 90, 105});
  w.add_process("ch0", "sig", {100, 100, 100, 100}, true);
  for (int k = 0; k < 5000; ++k) w.add_norm_systematic("n" + std::to_string(k), {"sig"}, "ch0", {1.001});
  const std::string tensor = (dir / "many.hdf5").string();
  w.write(tensor);
  const std::string exe = (rabbit::test::binary_dir() / "rabbit_fit").string();
  // One thread: the address space of the run does not depend on the machine's cores.
  auto r = rabbit::test::run_command("ulimit -v 300000; OMP_NUM_THREADS=1 " + rabbit::test::shell_quote(exe) +
                                     " " + tensor + " -t 0 --noHessian -o " + dir.string());
  EXPECT_EQ(r.exit_code, 4) << r.output;
  EXPECT_EQ(r.output.find("bad_alloc"), std::string::npos) << r.output;
  const auto at = r.output.find("rabbit_fit: error: ");
  ASSERT_NE(at, std::string::npos) << r.output;
  const std::string line = r.output.substr(at);
  EXPECT_EQ(std::count(line.begin(), line.end(), '\n'), 1) << line;
  EXPECT_NE(line.find("the requested steps (prefit covariance) need about 0.37 GiB but only "),
            std::string::npos)
      << line;
  EXPECT_NE(line.find("GiB of memory are available under the address-space limit (ulimit -v, 0.29 GiB)"),
            std::string::npos)
      << line;
}

TEST(MemoryLimit, OutOfMemoryMessageNamesTheAllocationAfterUnwinding) {
  // As in rabbit_fit_main: the std::bad_alloc is caught after the scopes have been left.
  try {
    rabbit::memory::AllocationScope outer("the input tensor of f.hdf5");
    rabbit::memory::AllocationScope inner("the prefit covariance of 7 parameters");
    throw std::bad_alloc();
  } catch (const std::bad_alloc&) {
    EXPECT_EQ(rabbit::memory::out_of_memory_message().rfind(
                  "out of memory while allocating the prefit covariance of 7 parameters", 0),
              0u)
        << rabbit::memory::out_of_memory_message();
  }
  // A new scope forgets the record.
  rabbit::memory::AllocationScope next("the model");
  EXPECT_EQ(rabbit::memory::what_is_allocated(), "the model");
}

TEST(MemoryLimit, ForgedDataSizeIsRefusedBeforeItIsAllocated) {
  const auto dir = scratch_dir("memory_forged_size");
  const fs::path forged = dir / "forged.hdf5";
  fs::copy_file(rabbit::test::example_tensor(), forged);
  {
    // 'hdata_obs' replaced by 2^28 doubles (2 GiB) in chunks that are never written: a file of
    // a few kB that claims 2 GiB.
    rabbit::h5::Handle file(H5Fopen(forged.c_str(), H5F_ACC_RDWR, H5P_DEFAULT));
    ASSERT_TRUE(file.valid());
    ASSERT_GE(H5Ldelete(file, "hdata_obs", H5P_DEFAULT), 0);
    const hsize_t n = hsize_t{1} << 28, chunk = hsize_t{1} << 20;
    rabbit::h5::Handle space(H5Screate_simple(1, &n, nullptr));
    rabbit::h5::Handle dcpl(H5Pcreate(H5P_DATASET_CREATE));
    H5Pset_chunk(dcpl, 1, &chunk);
    rabbit::h5::Handle d(
        H5Dcreate2(file, "hdata_obs", H5T_IEEE_F64LE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT));
    ASSERT_TRUE(d.valid());
  }
  ASSERT_LT(fs::file_size(forged), 1u << 20);
  const std::string exe = (rabbit::test::binary_dir() / "rabbit_fit").string();
  // Under a limit the claimed array does not fit in: the refusal must come before the allocation.
  auto r = rabbit::test::run_command("ulimit -v 1500000; " + rabbit::test::shell_quote(exe) + " " +
                                     forged.string() + " -t 0 -o " + dir.string());
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("dataset 'hnorm': covers 70 bins, fewer than nbins=268435456 of 'hdata_obs'"),
            std::string::npos)
      << r.output;
}
