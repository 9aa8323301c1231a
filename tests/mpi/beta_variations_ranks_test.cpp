// hbetavariations across MPI ranks (docs/mpi.md "Memory per rank"): the masked bins' yields follow the
// profiled β of observed source bins, and rank 0, which computes the masked bins, reads the logk of
// its own range extended to the last source bin instead of the whole tensor. On a generated dense
// tensor whose source bins end inside rank 1's range (3 ranks) or inside rank 0's (2 ranks), the
// ranks give the result of --nDevices N at tolerance 0 (rabbit_fit with histograms, their errors,
// variations and impacts; rabbit_limit on the masked channel), while rank 0 holds exactly the logk
// of the bins it needs.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include "mpi_runs.hpp"
#include "rabbit/io/axis_factories.hpp"
#include "rabbit/io/tensor_writer.hpp"
#include "support/command.hpp"
#include "support/test_paths.hpp"

namespace {

namespace fs = std::filesystem;
using rabbit::test::CommandResult;
using rabbit::test::shell_quote;
using namespace rabbit::test::mpi_runs;

constexpr int kObservedBins = 60;  // channels a and b, 30 bins each
constexpr int kMaskedBins = 8;     // channel m
constexpr int kSourceEnd = 23;     // the source bins of channel a: 3d and 3d + 1 for masked bin d

// Observed channels a, b (sig, bkg; a shape and a normalisation systematic) and a masked channel m
// (sig) that receives beta variations of sig from channel a's bins [0, kSourceEnd).
std::string write_tensor(const fs::path& dir) {
  rabbit::TensorWriter w;
  for (const std::string ch : {"a", "b", "m"}) {
    const bool masked = ch == "m";
    const int n = masked ? kMaskedBins : kObservedBins / 2;
    w.add_channel(ch, {rabbit::axis::regular(n, 0, n, "x")}, masked);
    std::vector<double> sig(n), bkg(n), data(n), sig_w2(n), tilt(n);
    for (int b = 0; b < n; ++b) {
      sig[b] = 30.0 * std::exp(-0.5 * (b - 10.0) * (b - 10.0) / 16.0) + 3.0;
      bkg[b] = 150.0 - 3.0 * b;
      sig_w2[b] = sig[b] * (0.1 + 0.01 * (b % 7));  // weighted MC: visible BB effects
      data[b] = std::round(1.1 * sig[b] + bkg[b] + (b % 4) - 1.5);
      tilt[b] = bkg[b] * (1.0 + 0.005 * (b - 12));
    }
    if (!masked) w.add_data(ch, data);
    w.add_process(ch, "sig", sig, true, sig_w2);
    if (!masked) w.add_process(ch, "bkg", bkg);
    if (!masked) w.add_systematic("tilt", "bkg", ch, tilt);
    w.add_norm_systematic("lumi",
                          masked ? std::vector<std::string>{"sig"} : std::vector<std::string>{"sig", "bkg"},
                          ch, {1.02});
  }
  std::vector<double> var(kMaskedBins * kObservedBins / 2, 0.0);
  for (int d = 0; d < kMaskedBins; ++d) {
    var[d * kObservedBins / 2 + 3 * d] = 0.6 + 0.05 * d;
    if (3 * d + 1 < kSourceEnd) var[d * kObservedBins / 2 + 3 * d + 1] = 0.2;
  }
  w.add_beta_variations("sig", "a", "m", var);
  const std::string path = (dir / "beta_variations.hdf5").string();
  w.write(path);
  return path;
}

#define SKIP_WITHOUT_MPI()                                                                           \
  do {                                                                                               \
    if (!RABBIT_MPI_BUILT) GTEST_SKIP() << "built without MPI (RABBIT_MPI=OFF or no C++ MPI found)"; \
  } while (0)

#if RABBIT_MPI_BUILT
// `program` with `args` on `ranks` ranks and with --nDevices `ranks`: identical result files; returns
// the ranks' output.
std::string ranks_equal_shards(const fs::path& dir, const std::string& program_name, const std::string& args,
                               int ranks, const std::string& tag) {
  const CommandResult on_ranks = rabbit::test::run_command(mpiexec(ranks) + program(program_name) + " " +
                                                           args + " --outname " + tag + "_ranks.hdf5");
  EXPECT_EQ(on_ranks.exit_code, 0) << on_ranks.output;
  const CommandResult shards =
      rabbit::test::run_command(program(program_name) + " " + args + " --outname " + tag +
                                "_shards.hdf5 --nDevices " + std::to_string(ranks));
  EXPECT_EQ(shards.exit_code, 0) << shards.output;
  expect_identical(dir / (tag + "_shards.hdf5"), dir / (tag + "_ranks.hdf5"));
  return on_ranks.output;
}

void check_ranks(int ranks) {
  const auto dir = rabbit::test::scratch_dir("mpi_beta_variations_" + std::to_string(ranks));
  const std::string tensor = shell_quote(write_tensor(dir));
  const std::string common =
      tensor + " -t -1 0 --unblind --binByBinStatMode full -o " + shell_quote(dir.string());
  const std::string fit = ranks_equal_shards(dir, "rabbit_fit",
                                             common +
                                                 " --saveHists --saveHistsPerProcess --computeHistErrors "
                                                 "--computeVariations --doImpacts --globalImpacts",
                                             ranks, "fit");
  EXPECT_EQ(fit.find("rank 0 reads the whole input"), std::string::npos) << fit;
  std::smatch m;
  const std::regex own(R"(rank 0: bins \[0, (\d+)\), logk (\d+) of the file's (\d+) values)");
  ASSERT_TRUE(std::regex_search(fit, m, own)) << fit;
  const long end = std::stol(m[1]), held = std::stol(m[2]), in_file = std::stol(m[3]);
  EXPECT_EQ(end, kObservedBins / ranks);
  // Dense: every bin has the same logk rows, so rank 0 holds exactly the rows of the bins it needs.
  const long needed = std::max<long>(end, kSourceEnd) + kMaskedBins;
  EXPECT_EQ(held * (kObservedBins + kMaskedBins), needed * in_file) << fit;
  EXPECT_LT(held, in_file);
  // The limit on the masked channel's yield, which the beta variations move.
  ranks_equal_shards(dir, "rabbit_limit", common + " --asymptoticLimits sig -m Project m --modes gaussian",
                     ranks, "limit");
}
#endif

TEST(MpiBetaVariations, SourceBinsBeyondRankZeroGiveTheResultOfThreeShards) {
  SKIP_WITHOUT_MPI();
#if RABBIT_MPI_BUILT
  check_ranks(3);  // rank 0: bins [0, 20), sources up to bin 22
#endif
}

TEST(MpiBetaVariations, SourceBinsWithinRankZeroGiveTheResultOfTwoShards) {
  SKIP_WITHOUT_MPI();
#if RABBIT_MPI_BUILT
  check_ranks(2);  // rank 0: bins [0, 30), every source bin its own
#endif
}

}  // namespace
