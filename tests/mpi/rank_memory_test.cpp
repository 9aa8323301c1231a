// Memory per MPI rank (docs/mpi.md "Memory per rank"): on a generated dense tensor large enough that
// the tensor outweighs the process itself, each rank of `mpirun -n 2` and `-n 3` holds its share of the
// tensor, and its peak resident memory over the whole fit is at most 1.2 × that share, plus the peak of
// the same run on a tiny tensor with the same parameters (the process, its libraries, MPI and the
// parameter-sized state), plus one chunk of the file (4 MiB: a rank whose range starts or ends inside
// a chunk has HDF5 decode that chunk into a buffer of its own, docs/input-reader.md "Ranged reads").
// The ranks report their peaks and tensors at the end of the run (release_ranks).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <numeric>
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

constexpr int kProcesses = 4;
constexpr int kSystematics = 200;
// The chunk of the dense datasets TensorWriter writes (src/io/hdf5_writer.cpp).
constexpr double kChunkMib = 4.0;

// One observed channel of `bins` bins and a masked channel of 5 (rank 0 holds the masked bins'
// logk besides its own), kProcesses processes, kSystematics shape systematics acting on every
// process: the logk is bins × 4 × 200 doubles, 6.4 kB per bin.
std::string write_tensor(const fs::path& dir, int bins) {
  rabbit::TensorWriter w;
  for (const std::string ch : {"obs", "masked"}) {
    const bool masked = ch == "masked";
    const int n = masked ? 5 : bins;
    w.add_channel(ch, {rabbit::axis::regular(n, 0, n, "x")}, masked);
    std::vector<std::vector<double>> nominal(kProcesses, std::vector<double>(n));
    std::vector<double> data(n, 0.0);
    for (int p = 0; p < kProcesses; ++p) {
      for (int b = 0; b < n; ++b) {
        nominal[p][b] = 50.0 + 10.0 * p + 20.0 * std::sin(0.01 * b + p);
        data[b] += nominal[p][b];
      }
      w.add_process(ch, "p" + std::to_string(p), nominal[p], p == 0);
    }
    if (!masked) {
      for (double& d : data) d = std::round(d);
      w.add_data(ch, data);
    }
    for (int s = 0; s < kSystematics; ++s)
      for (int p = 0; p < kProcesses; ++p) {
        std::vector<double> up = nominal[p];
        for (int b = 0; b < n; ++b) up[b] *= 1.0 + 0.01 * std::cos(0.003 * (s + 1) * b + p);
        w.add_systematic("s" + std::to_string(s), "p" + std::to_string(p), ch, up);
      }
  }
  rabbit::WriteOptions options;
  options.compression = rabbit::Compression::none;
  const std::string path = (dir / ("t" + std::to_string(bins) + ".hdf5")).string();
  w.write(path, options);
  return path;
}

#if RABBIT_MPI_BUILT
std::string rabbit_fit(const std::string& tensor, const fs::path& dir) {
  return shell_quote((rabbit::test::binary_dir() / "rabbit_fit").string()) + " " + shell_quote(tensor) +
         " -t 0 -o " + shell_quote(dir.string());
}

struct RankMemory {
  double peak_mib = 0, tensor_mib = 0;
};

// Each rank's peak memory over the run and its tensor, as rank 0 logs them at the end.
std::map<int, RankMemory> fit_on_ranks(const fs::path& dir, const std::string& tensor, int ranks) {
  setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
  setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
  const std::string command = std::string(RABBIT_MPIEXEC) + " --oversubscribe -n " + std::to_string(ranks) +
                              " " + rabbit_fit(tensor, dir);
  const CommandResult r = rabbit::test::run_command(command);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  std::map<int, RankMemory> out;
  const std::regex line(R"(rank (\d+): peak memory ([0-9.]+) MiB over the run, tensor ([0-9.]+) MiB)");
  for (auto it = std::sregex_iterator(r.output.begin(), r.output.end(), line); it != std::sregex_iterator();
       ++it)
    out[std::stoi((*it)[1])] = {std::stod((*it)[2]), std::stod((*it)[3])};
  EXPECT_EQ(static_cast<int>(out.size()), ranks) << r.output;
  return out;
}

void check_ranks(int ranks) {
  const auto dir = rabbit::test::scratch_dir("mpi_rank_memory_" + std::to_string(ranks));
  const std::string small = write_tensor(dir, 30), large = write_tensor(dir, 6000);
  const auto baseline = fit_on_ranks(dir, small, ranks);
  const auto measured = fit_on_ranks(dir, large, ranks);
  ASSERT_EQ(static_cast<int>(measured.size()), ranks);
  ASSERT_EQ(static_cast<int>(baseline.size()), ranks);
  double total = 0;
  for (const auto& [rank, m] : measured) total += m.tensor_mib;
  for (const auto& [rank, m] : measured) {
    // Its share: rank 0 holds besides its bins' the norm and MC statistics of every bin (3 numbers
    // per bin and process against its 200 logk numbers) and the masked bins' logk.
    EXPECT_LT(m.tensor_mib, 1.1 * total / ranks) << "rank " << rank << " of " << ranks;
    EXPECT_GT(m.tensor_mib, 0.9 * total / ranks) << "rank " << rank << " of " << ranks;
    EXPECT_LE(m.peak_mib, 1.2 * m.tensor_mib + baseline.at(rank).peak_mib + kChunkMib)
        << "rank " << rank << " of " << ranks << ": peak " << m.peak_mib << " MiB, tensor " << m.tensor_mib
        << " MiB, the same run on a tiny tensor " << baseline.at(rank).peak_mib << " MiB";
  }
}
#endif

#define SKIP_WITHOUT_MPI()                                                                           \
  do {                                                                                               \
    if (!RABBIT_MPI_BUILT) GTEST_SKIP() << "built without MPI (RABBIT_MPI=OFF or no C++ MPI found)"; \
  } while (0)

TEST(MpiRankMemory, TwoRanksPeakAtTheirShareOfTheTensor) {
  SKIP_WITHOUT_MPI();
#if RABBIT_MPI_BUILT
  check_ranks(2);
#endif
}

TEST(MpiRankMemory, ThreeRanksPeakAtTheirShareOfTheTensor) {
  SKIP_WITHOUT_MPI();
#if RABBIT_MPI_BUILT
  check_ranks(3);
#endif
}

}  // namespace
