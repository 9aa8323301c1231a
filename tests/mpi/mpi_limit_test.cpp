// rabbit_limit under mpirun (docs/mpi.md "rabbit_limit across ranks"): every fit of the limit sequence
// spans the ranks as rabbit_fit's does, so each reference limit case on N ranks is the --nDevices N run
// (the same bin partition and order of the sums) at tolerance 0 and agrees with upstream
// rabbit_limit.py; rank 0 alone writes; what cannot span ranks is refused in one line.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "mpi_runs.hpp"
#include "rabbit/io/json.hpp"
#include "support/command.hpp"
#include "support/limit_comparison.hpp"
#include "support/test_paths.hpp"

namespace {

namespace fs = std::filesystem;
using rabbit::test::CommandResult;
using rabbit::test::shell_quote;
using namespace rabbit::test::mpi_runs;

#define SKIP_WITHOUT_MPI()                                                                           \
  do {                                                                                               \
    if (!RABBIT_MPI_BUILT) GTEST_SKIP() << "built without MPI (RABBIT_MPI=OFF or no C++ MPI found)"; \
  } while (0)

fs::path reference_dir() {
  return rabbit::test::source_dir() / "tests" / "reference";
}

struct LimitCase {
  std::string name;
  int ranks;
};

class MpiLimit : public ::testing::TestWithParam<LimitCase> {};

TEST_P(MpiLimit, RanksGiveTheResultOfAsManyShardsAndAgreeWithUpstream) {
  SKIP_WITHOUT_MPI();
#if RABBIT_MPI_BUILT
  const auto& [name, ranks] = GetParam();
  const auto ref = rabbit::io::Json::parse_file((reference_dir() / "limits" / (name + ".json")).string());
  const auto dir = rabbit::test::scratch_dir("mpi_limit_" + name);
  std::string args = shell_quote((reference_dir() / "tensors" / ref.at("tensor").string()).string());
  for (const auto& a : ref.at("args").strings()) args.append(" ").append(shell_quote(a));
  args += " -o " + shell_quote(dir.string());
  const CommandResult on_ranks = rabbit::test::run_command(mpiexec(ranks) + program("rabbit_limit") + " " +
                                                           args + " --outname ranks.hdf5");
  ASSERT_EQ(on_ranks.exit_code, 0) << on_ranks.output;
  EXPECT_EQ(count_lines_with(on_ranks.output, "over " + std::to_string(ranks) + " MPI ranks"), 1)
      << on_ranks.output;
  EXPECT_EQ(count_lines_with(on_ranks.output, "Results written in file"), 1) << "rank 0 alone writes\n"
                                                                             << on_ranks.output;
  EXPECT_GT(rabbit::test::compare_limit_result(name, ref.at("results"), (dir / "ranks.hdf5").string()), 0);
  const CommandResult shards = rabbit::test::run_command(
      program("rabbit_limit") + " " + args + " --outname shards.hdf5 --nDevices " + std::to_string(ranks));
  ASSERT_EQ(shards.exit_code, 0) << shards.output;
  expect_identical(dir / "shards.hdf5", dir / "ranks.hdf5");
#endif
}

// Every reference limit case, on 2 or 3 ranks (3 oversubscribe the 2-core machine: a few seconds each).
INSTANTIATE_TEST_SUITE_P(
    ReferenceCases, MpiLimit,
    ::testing::Values(LimitCase{"limits_asimov", 2}, LimitCase{"limits_asimov_negative", 3},
                      LimitCase{"limits_data_negative", 2}, LimitCase{"limits_mapping_masked", 3},
                      LimitCase{"limits_pseudodata", 2}, LimitCase{"limits_toys", 3}),
    [](const auto& info) { return info.param.name + "_" + std::to_string(info.param.ranks); });

TEST(MpiLimitRefusals, LocalShardsWorkAndWhatCannotSpanRanksIsRefusedInOneLine) {
  SKIP_WITHOUT_MPI();
#if RABBIT_MPI_BUILT
  const auto dir = rabbit::test::scratch_dir("mpi_limit_refused");
  const std::string common = program("rabbit_limit") + " " +
                             shell_quote((reference_dir() / "tensors" / "dense.hdf5").string()) +
                             " --asymptoticLimits sig -o " + shell_quote(dir.string());
  // Local shards per rank (docs/mpi.md "Local shards of a rank"): 2 ranks of 2 shards are the
  // single process's --nDevices 4.
  const CommandResult devices =
      rabbit::test::run_command(mpiexec(2) + common + " --nDevices 2 --outname ranks.hdf5");
  ASSERT_EQ(devices.exit_code, 0) << devices.output;
  const CommandResult four = rabbit::test::run_command(common + " --nDevices 4 --outname shards.hdf5");
  ASSERT_EQ(four.exit_code, 0) << four.output;
  expect_identical(dir / "shards.hdf5", dir / "ranks.hdf5");
  // A bad option is refused by rank 0 alone, which releases the other ranks with its exit code.
  const CommandResult option = rabbit::test::run_command(mpiexec(2) + common + " --saveHists");
  EXPECT_EQ(option.exit_code, 2) << option.output;
  EXPECT_EQ(count_lines_with(option.output, "rabbit_limit: error: --saveHists: an option of rabbit_fit"), 1)
      << option.output;
  EXPECT_EQ(count_lines_with(option.output, "error"), 1) << option.output;
  EXPECT_FALSE(fs::exists(dir / "limits.hdf5"));
#endif
}

}  // namespace

namespace {

// A build without MPI started by a launcher with 2 ranks would compute the limits twice into one file:
// rank 0 says why it refuses, every rank exits with 2.
TEST(NonMpiBuildLimit, RefusesToRunAsRanksOfAnMpiJob) {
  if (RABBIT_MPI_BUILT) GTEST_SKIP() << "this build has MPI: a launcher's environment starts the ranks' run";
  const auto dir = rabbit::test::scratch_dir("mpi_limit_not_built");
  const std::string limit = program("rabbit_limit") + " " +
                            shell_quote((reference_dir() / "tensors" / "dense.hdf5").string()) +
                            " --asymptoticLimits sig -o " + shell_quote(dir.string());
  const CommandResult rank0 =
      rabbit::test::run_command("OMPI_COMM_WORLD_SIZE=2 OMPI_COMM_WORLD_RANK=0 " + limit);
  EXPECT_EQ(rank0.exit_code, 2) << rank0.output;
  EXPECT_NE(rank0.output.find(
                "rabbit_limit: error: started by an MPI launcher with 2 ranks, but this build has no MPI"),
            std::string::npos)
      << rank0.output;
  const CommandResult rank1 =
      rabbit::test::run_command("OMPI_COMM_WORLD_SIZE=2 OMPI_COMM_WORLD_RANK=1 " + limit);
  EXPECT_EQ(rank1.exit_code, 2) << rank1.output;
  EXPECT_EQ(rank1.output, "");
  EXPECT_FALSE(fs::exists(dir / "limits.hdf5"));
}

}  // namespace
