// Rank 0 of an MPI fit reads the logk of its own bins only (docs/mpi.md "Memory per rank") and the
// postfit yields of the other bins come from the ranks that own them (docs/mpi.md "Postfit yields
// from the owning ranks"): on a generated tensor, dense and sparse, without and with a masked channel,
// 3 ranks give the result file of --nDevices 3 while rank 0 logs that it holds its share of the logk
// (and the masked bins', whose yields it computes).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include "rabbit/io/axis_factories.hpp"
#include "rabbit/io/tensor_writer.hpp"
#include "support/command.hpp"
#include "support/test_paths.hpp"

namespace {

namespace fs = std::filesystem;
using rabbit::test::CommandResult;
using rabbit::test::shell_quote;

constexpr int kMaskedBins = 7;

// Two observed channels of 30 bins, three processes, shape systematics that vanish in half of the
// bins (so the sparse tensor's cost differs per bin) and normalisation systematics; with `masked`, a
// masked channel "m" of kMaskedBins bins after them (its yields enter the histograms only).
std::string write_tensor(const fs::path& dir, bool sparse, bool masked) {
  rabbit::TensorWriter w;
  for (const std::string ch : {"a", "b", "m"}) {
    const bool is_masked = ch == "m";
    if (is_masked && !masked) continue;
    const int n = is_masked ? kMaskedBins : 30;
    w.add_channel(ch, {rabbit::axis::regular(n, 0, n, "x")}, is_masked);
    std::vector<double> sig(n), bkg(n), other(n), data(n), tilt(n), bump(n);
    for (int b = 0; b < n; ++b) {
      sig[b] = 20.0 * std::exp(-0.5 * (b - 12.0) * (b - 12.0) / 9.0) + (ch == "b" ? 2.0 : 0.5);
      bkg[b] = 200.0 - 4.0 * b;
      other[b] = 40.0 + (b % 5);
      data[b] = std::round(sig[b] + bkg[b] + other[b] + (b % 3) - 1.0);
      tilt[b] = bkg[b] * (1.0 + 0.004 * (b - 15));
      bump[b] = other[b] * (b < n / 2 ? 1.08 : 1.0);  // zero logk in the upper half
    }
    if (!is_masked) w.add_data(ch, data);
    w.add_process(ch, "sig", sig, true);
    w.add_process(ch, "bkg", bkg);
    w.add_process(ch, "other", other);
    w.add_systematic("tilt", "bkg", ch, tilt);
    w.add_systematic("bump_" + ch, "other", ch, bump);
    w.add_norm_systematic("lumi", {"sig", "bkg", "other"}, ch, {1.02});
  }
  rabbit::WriteOptions options;
  options.sparse = sparse;
  const std::string path =
      (dir / (std::string(sparse ? "sparse" : "dense") + (masked ? "_masked" : "") + ".hdf5")).string();
  w.write(path, options);
  return path;
}

#if RABBIT_MPI_BUILT
std::string rabbit_fit() {
  return shell_quote((rabbit::test::binary_dir() / "rabbit_fit").string());
}

std::string mpiexec(int ranks) {
  setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
  setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
  return std::string(RABBIT_MPIEXEC) + " --oversubscribe -n " + std::to_string(ranks) + " ";
}

void expect_identical(const fs::path& a, const fs::path& b) {
  const std::string compare = shell_quote((rabbit::test::binary_dir() / "rabbit_compare").string());
  const CommandResult r = rabbit::test::run_command(compare + " --tol-scale 0 " + shell_quote(a.string()) +
                                                    " " + shell_quote(b.string()));
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

void check_layout(bool sparse, bool masked) {
  const auto dir = rabbit::test::scratch_dir(std::string(sparse ? "mpi_rank0_sparse" : "mpi_rank0_dense") +
                                             (masked ? "_masked" : ""));
  const std::string tensor = write_tensor(dir, sparse, masked);
  const std::string args = shell_quote(tensor) +
                           " -t -1 0 --unblind --doImpacts --globalImpacts --saveHists --saveHistsPerProcess "
                           "--computeHistErrors --computeHistErrorsPerProcess -o " +
                           shell_quote(dir.string());
  const CommandResult ranks =
      rabbit::test::run_command(mpiexec(3) + rabbit_fit() + " " + args + " --outname ranks.hdf5");
  ASSERT_EQ(ranks.exit_code, 0) << ranks.output;
  const CommandResult shards =
      rabbit::test::run_command(rabbit_fit() + " " + args + " --outname shards.hdf5 --nDevices 3");
  ASSERT_EQ(shards.exit_code, 0) << shards.output;
  expect_identical(dir / "shards.hdf5", dir / "ranks.hdf5");

  std::smatch m;
  const std::regex own(R"(rank 0: bins \[0, (\d+)\), logk (\d+) of the file's (\d+) values)");
  ASSERT_TRUE(std::regex_search(ranks.output, m, own)) << "rank 0 read every bin's logk\n" << ranks.output;
  EXPECT_EQ(ranks.output.find("rank 0 reads the whole input"), std::string::npos) << ranks.output;
  const long end = std::stol(m[1]), held = std::stol(m[2]), in_file = std::stol(m[3]);
  EXPECT_NE(ranks.output.find("rank 1: bins [" + std::to_string(end) + ", "), std::string::npos)
      << ranks.output;
  EXPECT_GT(held, 0);
  EXPECT_LT(held, in_file);
  // Dense: every bin has the same logk rows, so rank 0 holds exactly the share of its bins and the
  // masked bins of all 60 + kMaskedBins.
  const long nmasked = masked ? kMaskedBins : 0;
  if (!sparse) EXPECT_EQ(held * (60 + nmasked), (end + nmasked) * in_file);
}
#endif

#define SKIP_WITHOUT_MPI()                                                                           \
  do {                                                                                               \
    if (!RABBIT_MPI_BUILT) GTEST_SKIP() << "built without MPI (RABBIT_MPI=OFF or no C++ MPI found)"; \
  } while (0)

TEST(MpiCoordinatorInput, DenseRankZeroHoldsTheLogkOfItsBins) {
  SKIP_WITHOUT_MPI();
#if RABBIT_MPI_BUILT
  check_layout(false, false);
#endif
}

TEST(MpiCoordinatorInput, SparseRankZeroHoldsTheLogkOfItsBins) {
  SKIP_WITHOUT_MPI();
#if RABBIT_MPI_BUILT
  check_layout(true, false);
#endif
}

TEST(MpiCoordinatorInput, DenseWithAMaskedChannelRankZeroHoldsItsBinsAndTheMaskedBins) {
  SKIP_WITHOUT_MPI();
#if RABBIT_MPI_BUILT
  check_layout(false, true);
#endif
}

TEST(MpiCoordinatorInput, SparseWithAMaskedChannelRankZeroHoldsItsBinsAndTheMaskedBins) {
  SKIP_WITHOUT_MPI();
#if RABBIT_MPI_BUILT
  check_layout(true, true);
#endif
}

}  // namespace
