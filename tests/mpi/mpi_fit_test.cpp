// rabbit_fit under mpirun (docs/mpi.md): the result of N ranks is the result of --nDevices N (the same
// bin partition, the same shard order of the sums), a reference case still agrees with upstream
// rabbit, and a rank that cannot read its bins ends the run with one line naming it and no result.
// A handful of mpirun runs: each starts N processes on a 2-core machine.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "rabbit/io/json.hpp"
#include "support/command.hpp"
#include "support/fit_comparison.hpp"
#include "support/test_paths.hpp"

namespace {

namespace fs = std::filesystem;
using rabbit::test::CommandResult;
using rabbit::test::shell_quote;

#if RABBIT_MPI_BUILT
std::string rabbit_fit() {
  return shell_quote((rabbit::test::binary_dir() / "rabbit_fit").string());
}

// mpiexec -n N, oversubscribed (more ranks than cores here), as root where the tests run as root.
std::string mpiexec(int ranks) {
  setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
  setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
  std::ostringstream command;
  command << RABBIT_MPIEXEC << " --oversubscribe -n " << ranks << " ";
  return command.str();
}

std::string tensor(const std::string& name) {
  return shell_quote((rabbit::test::source_dir() / "tests/reference/tensors" / name).string());
}

// Every quantity of both files identical (rabbit_compare with every tolerance 0).
void expect_identical(const fs::path& a, const fs::path& b) {
  const std::string compare = shell_quote((rabbit::test::binary_dir() / "rabbit_compare").string());
  const CommandResult r = rabbit::test::run_command(compare + " --tol-scale 0 " + shell_quote(a.string()) +
                                                    " " + shell_quote(b.string()));
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

int count_lines_with(const std::string& text, const std::string& what) {
  std::istringstream in(text);
  int n = 0;
  for (std::string line; std::getline(in, line);) n += line.find(what) != std::string::npos;
  return n;
}
#endif

#define SKIP_WITHOUT_MPI()                                                                           \
  do {                                                                                               \
    if (!RABBIT_MPI_BUILT) GTEST_SKIP() << "built without MPI (RABBIT_MPI=OFF or no C++ MPI found)"; \
  } while (0)

TEST(MpiFit, TwoRanksGiveTheResultOfTwoShards) {
  SKIP_WITHOUT_MPI();
#if RABBIT_MPI_BUILT
  const auto dir = rabbit::test::scratch_dir("mpi_two_ranks");
  const std::string args = shell_quote(rabbit::test::example_tensor()) +
                           " -t 0 --unblind --doImpacts --globalImpacts --gaussianGlobalImpacts --saveHists "
                           "--saveHistsPerProcess --computeHistErrors --scan sig --scanPoints 3 -o " +
                           shell_quote(dir.string());
  const CommandResult one = rabbit::test::run_command(rabbit_fit() + " " + args + " -p shards --nDevices 2");
  ASSERT_EQ(one.exit_code, 0) << one.output;
  const CommandResult two = rabbit::test::run_command(mpiexec(2) + rabbit_fit() + " " + args + " -p ranks");
  ASSERT_EQ(two.exit_code, 0) << two.output;
  EXPECT_NE(two.output.find("Sharding 60 bins over 2 MPI ranks"), std::string::npos) << two.output;
  EXPECT_EQ(count_lines_with(two.output, "Results written in file"), 1) << "rank 0 alone writes\n"
                                                                        << two.output;
  expect_identical(dir / "fitresults_shards.hdf5", dir / "fitresults_ranks.hdf5");
#endif
}

TEST(MpiFit, ThreeRanksOnASparseReferenceCase) {
  SKIP_WITHOUT_MPI();
#if RABBIT_MPI_BUILT
  // The reference case sparse_data with toys added: agrees with upstream rabbit and is bit for bit
  // the --nDevices 3 fit.
  const auto ref = rabbit::io::Json::parse_file(
      (rabbit::test::source_dir() / "tests/reference/fits/sparse_data.json").string());
  const auto dir = rabbit::test::scratch_dir("mpi_three_ranks");
  std::string args = tensor("sparse_blosc2.hdf5");
  for (const auto& a : ref.at("args").strings()) args.append(" ").append(shell_quote(a));
  args += " -o " + shell_quote(dir.string());
  const CommandResult three =
      rabbit::test::run_command(mpiexec(3) + rabbit_fit() + " " + args + " --outname ranks.hdf5");
  ASSERT_EQ(three.exit_code, 0) << three.output;
  rabbit::test::FitTolerances tolerances;
  tolerances.known_deviations = rabbit::test::reference_known_deviations();
  rabbit::test::compare_fit_result("sparse_data", ref.at("results"), (dir / "ranks.hdf5").string(),
                                   tolerances);
  const CommandResult shards =
      rabbit::test::run_command(rabbit_fit() + " " + args + " --outname shards.hdf5 --nDevices 3");
  ASSERT_EQ(shards.exit_code, 0) << shards.output;
  expect_identical(dir / "shards.hdf5", dir / "ranks.hdf5");

  // Frequentist toys (-t 2): every toy's data and BB centres reach every rank.
  const std::string toys =
      tensor("sparse_blosc2.hdf5") + " -t 2 --seed 3 --saveHists -o " + shell_quote(dir.string());
  const CommandResult t3 =
      rabbit::test::run_command(mpiexec(3) + rabbit_fit() + " " + toys + " --outname toys_ranks.hdf5");
  ASSERT_EQ(t3.exit_code, 0) << t3.output;
  const CommandResult t1 =
      rabbit::test::run_command(rabbit_fit() + " " + toys + " --outname toys_shards.hdf5 --nDevices 3");
  ASSERT_EQ(t1.exit_code, 0) << t1.output;
  expect_identical(dir / "toys_shards.hdf5", dir / "toys_ranks.hdf5");
#endif
}

TEST(MpiFit, ARankThatCannotReadItsBinsEndsTheRun) {
  SKIP_WITHOUT_MPI();
#if RABBIT_MPI_BUILT
  // Rank 1 starts in another directory, where the relative file name is a truncated copy: rank 0
  // reads the whole good file, rank 1 fails on its range (mpiexec's MPMD form, one -wdir each).
  const auto dir = rabbit::test::scratch_dir("mpi_bad_rank");
  fs::create_directories(dir / "good");
  fs::create_directories(dir / "bad");
  fs::copy_file(rabbit::test::example_tensor(), dir / "good/t.hdf5", fs::copy_options::overwrite_existing);
  {
    std::ofstream truncated(dir / "bad/t.hdf5", std::ios::binary);
    truncated << "not an HDF5 file";
  }
  const std::string common = " t.hdf5 -t 0 --unblind -o " + shell_quote(dir.string()) + " --outname out.hdf5";
  const std::string cmd = mpiexec(1) + "-wdir " + shell_quote((dir / "good").string()) + " " + rabbit_fit() +
                          common + " : -n 1 -wdir " + shell_quote((dir / "bad").string()) + " " +
                          rabbit_fit() + common;
  const CommandResult r = rabbit::test::run_command(cmd);
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_EQ(count_lines_with(r.output, "rabbit_fit: error:"), 1) << r.output;
  EXPECT_EQ(count_lines_with(r.output, "rabbit_fit: error: rank 1: "), 1) << r.output;
  EXPECT_FALSE(fs::exists(dir / "out.hdf5"));
#endif
}

TEST(MpiFit, WhatCannotSpanRanksIsRefusedInOneLine) {
  SKIP_WITHOUT_MPI();
#if RABBIT_MPI_BUILT
  const auto dir = rabbit::test::scratch_dir("mpi_refused");
  const CommandResult r = rabbit::test::run_command(mpiexec(2) + rabbit_fit() + " " +
                                                    shell_quote(rabbit::test::example_tensor()) +
                                                    " -t 0 --covarianceFit -o " + shell_quote(dir.string()));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_EQ(count_lines_with(r.output,
                             "rabbit_fit: error: mpirun with 2 ranks is incompatible with: --covarianceFit"),
            1)
      << r.output;
  EXPECT_FALSE(fs::exists(dir / "fitresults.hdf5"));
#endif
}

// --nDevices N per rank (docs/mpi.md "Local shards of a rank"): the partition of --nDevices 2·N, rank r
// holding pieces 2r and 2r+1, every piece's partials summed on rank 0 in piece order, so 2 ranks of 2
// shards are bit for bit 4 shards of one process: the fit, impacts, global impacts and the postfit
// histograms and their errors (the yields through the ranks' yield model, the masked channel's on
// rank 0), on the example (dense) and the sparse reference tensor with full BB and masked channels.
TEST(MpiFit, TwoRanksOfTwoShardsGiveTheResultOfFourShards) {
  SKIP_WITHOUT_MPI();
#if RABBIT_MPI_BUILT
  const auto dir = rabbit::test::scratch_dir("mpi_local_shards");
  const std::string post =
      " -t 0 --unblind --doImpacts --globalImpacts --saveHists --saveHistsPerProcess "
      "--computeHistErrors -o " +
      shell_quote(dir.string());
  struct Case {
    std::string name, args, layout;
  };
  const Case cases[] = {
      {"example", shell_quote(rabbit::test::example_tensor()) + post,
       "[rank0:[0,15)+[15,30), rank1:[30,45)+[45,60)]"},
      {"sparse", tensor("sparse_blosc2.hdf5") + post + " --binByBinStatMode full",
       "[rank0:[0,12)+[12,28), rank1:[28,43)+[43,60)]"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const CommandResult four =
        rabbit::test::run_command(rabbit_fit() + " " + c.args + " -p " + c.name + "_shards --nDevices 4");
    ASSERT_EQ(four.exit_code, 0) << four.output;
    const CommandResult two = rabbit::test::run_command(mpiexec(2) + rabbit_fit() + " " + c.args + " -p " +
                                                        c.name + "_ranks --nDevices 2");
    ASSERT_EQ(two.exit_code, 0) << two.output;
    EXPECT_NE(two.output.find("Sharding 60 bins over 2 MPI ranks, 2 local shards each"), std::string::npos)
        << two.output;
    EXPECT_NE(two.output.find(c.layout), std::string::npos) << two.output;
    expect_identical(dir / ("fitresults_" + c.name + "_shards.hdf5"),
                     dir / ("fitresults_" + c.name + "_ranks.hdf5"));
  }
#endif
}

// --fullNll with BB and masked channels: the masked entries' BB constants, which a single process adds
// with its last shard, come from rank 0 (docs/mpi.md "Postfit yields from the owning ranks"). nllvalfull
// sums the constants per rank rather than per shard: to 1e-9 absolute (≈2e-12 relative here), the rest
// bit for bit.
TEST(MpiFit, FullNllWithBinByBinStatAndMaskedChannels) {
  SKIP_WITHOUT_MPI();
#if RABBIT_MPI_BUILT
  const auto dir = rabbit::test::scratch_dir("mpi_full_nll");
  const std::string args = shell_quote(rabbit::test::example_tensor()) +
                           " -t 0 --unblind --fullNll --saveHists -o " + shell_quote(dir.string());
  const CommandResult four = rabbit::test::run_command(rabbit_fit() + " " + args + " -p shards --nDevices 4");
  ASSERT_EQ(four.exit_code, 0) << four.output;
  const CommandResult two =
      rabbit::test::run_command(mpiexec(2) + rabbit_fit() + " " + args + " -p ranks --nDevices 2");
  ASSERT_EQ(two.exit_code, 0) << two.output;
  const std::string compare = shell_quote((rabbit::test::binary_dir() / "rabbit_compare").string()) + " " +
                              shell_quote((dir / "fitresults_shards.hdf5").string()) + " " +
                              shell_quote((dir / "fitresults_ranks.hdf5").string());
  const CommandResult rest =
      rabbit::test::run_command(compare + " --tol-scale 0 --quantities '^(?!nllvalfull$).*'");
  EXPECT_EQ(rest.exit_code, 0) << rest.output;
  const CommandResult full = rabbit::test::run_command(compare + " --quantities nllvalfull --tol-nll 1e-9");
  EXPECT_EQ(full.exit_code, 0) << full.output;
  EXPECT_NE(full.output.find("nllvalfull"), std::string::npos) << full.output;
#endif
}

// --diagnostics with BB: as in a single-device fit, the β-space EDM is not computed (the β profile is
// analytic, docs/mpi.md "What runs across ranks"): the run across ranks is the run without
// --diagnostics, bit for bit, plus the log line, and agrees with the single-device run.
TEST(MpiFit, DiagnosticsWithBinByBinStat) {
  SKIP_WITHOUT_MPI();
#if RABBIT_MPI_BUILT
  const auto dir = rabbit::test::scratch_dir("mpi_diagnostics");
  const std::string args = shell_quote(rabbit::test::example_tensor()) + " -t 0 --unblind --saveHists -o " +
                           shell_quote(dir.string());
  const CommandResult with =
      rabbit::test::run_command(mpiexec(2) + rabbit_fit() + " " + args + " --diagnostics -p with");
  ASSERT_EQ(with.exit_code, 0) << with.output;
  EXPECT_NE(with.output.find("edmvalbeta: not computed"), std::string::npos) << with.output;
  const CommandResult without =
      rabbit::test::run_command(mpiexec(2) + rabbit_fit() + " " + args + " -p without");
  ASSERT_EQ(without.exit_code, 0) << without.output;
  expect_identical(dir / "fitresults_without.hdf5", dir / "fitresults_with.hdf5");
  const CommandResult one = rabbit::test::run_command(rabbit_fit() + " " + args + " --diagnostics -p one");
  ASSERT_EQ(one.exit_code, 0) << one.output;
  const std::string compare = shell_quote((rabbit::test::binary_dir() / "rabbit_compare").string());
  const CommandResult agree =
      rabbit::test::run_command(compare + " " + shell_quote((dir / "fitresults_one.hdf5").string()) + " " +
                                shell_quote((dir / "fitresults_with.hdf5").string()));
  EXPECT_EQ(agree.exit_code, 0) << agree.output;
#endif
}

TEST(MpiFit, ABadDevicesOnOneRankEndsAllRanksInOneLine) {
  SKIP_WITHOUT_MPI();
#if RABBIT_MPI_BUILT
  // mpiexec's MPMD form: rank 1 alone asks for GPU 7 (in a build without CUDA: for any GPU); it fails
  // building its local shards, rank 0 prints the one line naming rank 1 and --devices, no result.
  const auto dir = rabbit::test::scratch_dir("mpi_bad_devices");
  const std::string common = " " + shell_quote(rabbit::test::example_tensor()) + " -t 0 --nDevices 2 -o " +
                             shell_quote(dir.string()) + " --outname out.hdf5";
  const std::string cmd =
      mpiexec(1) + rabbit_fit() + common + " : -n 1 " + rabbit_fit() + common + " --devices 0 7";
  const CommandResult r = rabbit::test::run_command(cmd);
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_EQ(count_lines_with(r.output, "rabbit_fit: error:"), 1) << r.output;
  EXPECT_EQ(count_lines_with(r.output, "rabbit_fit: error: rank 1: --devices 0,7"), 1) << r.output;
  EXPECT_FALSE(fs::exists(dir / "out.hdf5"));
#endif
}

// --backend cuda where no GPU can be had (a build without CUDA, or no GPU visible): under mpirun the
// same one line and exit code as without it.
TEST(MpiFit, BackendCudaWithoutAGpuFailsAsWithoutMpirun) {
  SKIP_WITHOUT_MPI();
#if RABBIT_MPI_BUILT
  const auto dir = rabbit::test::scratch_dir("mpi_backend_cuda");
  const std::string args = " " + shell_quote(rabbit::test::example_tensor()) + " -t 0 --backend cuda -o " +
                           shell_quote(dir.string());
  const CommandResult one = rabbit::test::run_command(rabbit_fit() + args + " -p one");
  if (one.exit_code == 0) GTEST_SKIP() << "a GPU is visible: the CUDA fit ran";
  std::string line;
  std::istringstream in(one.output);
  for (std::string l; std::getline(in, l);)
    if (l.rfind("rabbit_fit: error: --backend cuda: ", 0) == 0) line = l;
  ASSERT_FALSE(line.empty()) << one.output;
  const CommandResult two = rabbit::test::run_command(mpiexec(2) + rabbit_fit() + args + " -p two");
  EXPECT_EQ(two.exit_code, one.exit_code) << two.output;
  EXPECT_EQ(count_lines_with(two.output, "rabbit_fit: error:"), 1) << two.output;
  EXPECT_EQ(count_lines_with(two.output, line), 1) << "expected: " << line << "\n" << two.output;
  EXPECT_FALSE(fs::exists(dir / "fitresults_two.hdf5"));
#endif
}

}  // namespace

namespace {

// A build without MPI started by a launcher with 2 ranks (its environment, here without a launcher)
// would run the whole fit twice into one file: rank 0 says why it refuses, every rank exits with 2.
TEST(NonMpiBuild, RefusesToRunAsRanksOfAnMpiJob) {
  if (RABBIT_MPI_BUILT) GTEST_SKIP() << "this build has MPI: a launcher's environment starts the ranks' fit";
  const auto dir = rabbit::test::scratch_dir("mpi_not_built");
  const std::string fit = shell_quote((rabbit::test::binary_dir() / "rabbit_fit").string()) + " " +
                          shell_quote(rabbit::test::example_tensor()) + " -t 0 -o " +
                          shell_quote(dir.string());
  const CommandResult rank0 =
      rabbit::test::run_command("OMPI_COMM_WORLD_SIZE=2 OMPI_COMM_WORLD_RANK=0 " + fit);
  EXPECT_EQ(rank0.exit_code, 2) << rank0.output;
  EXPECT_NE(rank0.output.find(
                "rabbit_fit: error: started by an MPI launcher with 2 ranks, but this build has no MPI"),
            std::string::npos)
      << rank0.output;
  const CommandResult rank1 =
      rabbit::test::run_command("OMPI_COMM_WORLD_SIZE=2 OMPI_COMM_WORLD_RANK=1 " + fit);
  EXPECT_EQ(rank1.exit_code, 2) << rank1.output;
  EXPECT_EQ(rank1.output, "");
  EXPECT_FALSE(fs::exists(dir / "fitresults.hdf5"));
}

}  // namespace
