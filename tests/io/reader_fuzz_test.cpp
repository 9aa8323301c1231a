// docs/reliability.md "Fuzzing": a bounded, deterministic fuzz run of the fit-tensor reader (a gzip and a
// Blosc2 tensor, byte and structure mutations) and of the pickle reader, in this process through the
// reader API. Each case either reads or ends in a rabbit::Error, leaves no HDF5 object open, and
// finishes within kCaseSeconds; a crash or hang is reported with the case that caused it.
// RABBIT_FUZZ_CASES (cases per input, default kDefaultCases) and RABBIT_FUZZ_SEED run it longer or
// elsewhere (docs/reliability.md "Fuzzing": the longer local mode).
#include <gtest/gtest.h>
#include <hdf5.h>
#include <unistd.h>

#include <array>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "rabbit/core/error.hpp"
#include "rabbit/core/logging.hpp"
#include "rabbit/io/fit_input_data.hpp"
#include "rabbit/io/meta_info.hpp"
#include "rabbit/io/pickle.hpp"
#include "support/test_paths.hpp"

namespace rabbit {
namespace {

constexpr int kDefaultCases = 800;
constexpr uint64_t kDefaultSeed = 20261201;
constexpr unsigned kCaseSeconds = 20;

// ---- the per-case guard: a crash or hang names the case (async-signal-safe: a fixed buffer, write, _exit)

char g_case[512] = "no case running";

extern "C" void report_case_and_exit(int sig) {
  const char* what = sig == SIGALRM ? "fuzz case hung (no result within the time bound): "
                                    : "fuzz case crashed with a signal: ";
  ssize_t ignored = write(STDERR_FILENO, what, std::strlen(what));
  ignored = write(STDERR_FILENO, g_case, std::strlen(g_case));
  ignored = write(STDERR_FILENO, "\n", 1);
  (void)ignored;
  _exit(100 + sig);
}

class CaseGuard {
 public:
  CaseGuard() {
    struct sigaction sa;
    std::memset(&sa, 0, sizeof sa);
    sa.sa_handler = report_case_and_exit;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < kSignals.size(); ++i) sigaction(kSignals[i], &sa, &old_[i]);
  }
  ~CaseGuard() {
    alarm(0);
    for (size_t i = 0; i < kSignals.size(); ++i) sigaction(kSignals[i], &old_[i], nullptr);
  }
  void start(const std::string& description) {
    std::snprintf(g_case, sizeof g_case, "%s", description.c_str());
    alarm(kCaseSeconds);
  }

 private:
  static constexpr std::array<int, 5> kSignals = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGALRM};
  std::array<struct sigaction, 5> old_{};
};

// ---- mutations

uint64_t env_or(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtoull(v, nullptr, 10) : fallback;
}

std::vector<uint8_t> read_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

// Offsets of the HDF5 structures whose bytes the library dereferences: heaps, object headers, B-trees.
std::vector<size_t> structure_offsets(const std::vector<uint8_t>& bytes) {
  static const char* kSignatures[] = {"GCOL", "OHDR", "OCHK", "TREE", "HEAP",
                                      "SNOD", "BTHD", "BTLF", "FRHP", "FHDB"};
  std::vector<size_t> out = {0};  // the superblock
  for (const char* sig : kSignatures) {
    for (size_t i = 0; i + 4 <= bytes.size(); ++i)
      if (std::memcmp(bytes.data() + i, sig, 4) == 0) out.push_back(i);
  }
  return out;
}

// One mutation of `bytes`, described for the report.
std::string mutate(std::vector<uint8_t>& bytes, const std::vector<size_t>& structures, std::mt19937_64& rng) {
  auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  auto near_structure = [&]() {
    return std::min(bytes.size() - 1, structures[pick(structures.size())] + pick(96));
  };
  const int kind = static_cast<int>(rng() % 7);
  switch (kind) {
    case 0: {
      const size_t at = pick(bytes.size());
      bytes[at] = static_cast<uint8_t>(rng());
      return "one random byte at " + std::to_string(at);
    }
    case 1: {
      const size_t at = near_structure();
      bytes[at] = static_cast<uint8_t>(rng());
      return "one random byte in a structure at " + std::to_string(at);
    }
    case 2: {
      std::string where;
      for (int k = 0; k < 8; ++k) {
        const size_t at = pick(bytes.size());
        bytes[at] = static_cast<uint8_t>(rng());
        where += " " + std::to_string(at);
      }
      return "8 random bytes at" + where;
    }
    case 3: {
      const size_t at = rng() % 2 ? near_structure() : pick(bytes.size());
      const size_t n = std::min<size_t>(64, bytes.size() - at);
      std::memset(bytes.data() + at, 0, n);
      return "64 zero bytes at " + std::to_string(at);
    }
    case 4: {
      const size_t at = near_structure();
      const size_t n = std::min<size_t>(8, bytes.size() - at);
      std::memset(bytes.data() + at, 0xFF, n);
      return "8 bytes 0xFF in a structure at " + std::to_string(at);
    }
    case 5: {
      const size_t keep = pick(bytes.size());
      bytes.resize(keep);
      return "truncated to " + std::to_string(keep) + " bytes";
    }
    default: {
      const size_t n = 16 + pick(240);
      const size_t from = pick(bytes.size() - n), to = pick(bytes.size() - n);
      std::memmove(bytes.data() + to, bytes.data() + from, n);
      return std::to_string(n) + " bytes copied from " + std::to_string(from) + " to " + std::to_string(to);
    }
  }
}

struct Tally {
  int read = 0, rejected = 0;
};

Tally fuzz_tensor(const std::filesystem::path& source, const std::string& label) {
  const std::vector<uint8_t> original = read_bytes(source);
  const std::vector<size_t> structures = structure_offsets(original);
  const uint64_t seed = env_or("RABBIT_FUZZ_SEED", kDefaultSeed);
  const auto cases = static_cast<int>(env_or("RABBIT_FUZZ_CASES", kDefaultCases));
  const std::string path = (test::scratch_dir("reader_fuzz_" + label) / "case.hdf5").string();
  std::mt19937_64 rng(seed ^ std::hash<std::string>{}(label));
  Tally tally;
  setenv("RABBIT_HDF5_PROBE_SECONDS", "5", 1);  // a hang costs 5 s, within the guard's kCaseSeconds
  CaseGuard guard;
  set_verbosity(0);  // thousands of expected warnings (invalid UTF-8 names, meta fallbacks) stay quiet
  for (int c = 0; c < cases; ++c) {
    std::vector<uint8_t> bytes = original;
    const std::string mutation = mutate(bytes, structures, rng);
    {
      std::ofstream out(path, std::ios::binary | std::ios::trunc);
      out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    }
    const std::string description =
        label + " case " + std::to_string(c) + " (seed " + std::to_string(seed) + "): " + mutation;
    guard.start(description);
    try {
      read_fit_input(path);
      ++tally.read;
    } catch (const Error& e) {
      ++tally.rejected;
      const std::string m = e.what();
      EXPECT_EQ(m.find('\n'), std::string::npos) << description << ": " << m;
    } catch (const std::exception& e) {
      const std::string kept = path + "." + std::to_string(c);
      std::filesystem::copy_file(path, kept, std::filesystem::copy_options::overwrite_existing);
      ADD_FAILURE() << description << ": not a rabbit::Error: " << e.what() << " (the case is kept as "
                    << kept << ")";
    }
    const ssize_t open_objects = H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL);
    if (open_objects != 0) {
      ADD_FAILURE() << description << ": " << open_objects << " HDF5 objects left open";
      break;
    }
  }
  set_verbosity(3);
  unsetenv("RABBIT_HDF5_PROBE_SECONDS");
  return tally;
}

TEST(ReaderFuzz, GzipTensorMutationsReadOrFailWithOneLine) {
  const Tally t = fuzz_tensor(test::example_tensor(), "gzip");
  EXPECT_GT(t.rejected, 0);
  std::printf("gzip tensor: %d mutated files read, %d rejected\n", t.read, t.rejected);
}

TEST(ReaderFuzz, Blosc2TensorMutationsReadOrFailWithOneLine) {
  const Tally t =
      fuzz_tensor(test::source_dir() / "tests" / "reference" / "tensors" / "sparse_blosc2.hdf5", "blosc2");
  EXPECT_GT(t.rejected, 0);
  std::printf("blosc2 tensor: %d mutated files read, %d rejected\n", t.read, t.rejected);
}

// The meta pickle on its own: the non-executing pickle machine and the meta interpretation.
TEST(ReaderFuzz, MetaPickleMutationsDecodeOrFailWithOneLine) {
  const std::vector<uint8_t> original = read_fit_input(test::example_tensor()).meta_pickle;
  ASSERT_FALSE(original.empty());
  const uint64_t seed = env_or("RABBIT_FUZZ_SEED", kDefaultSeed);
  const auto cases = static_cast<int>(env_or("RABBIT_FUZZ_CASES", kDefaultCases)) * 2;
  std::mt19937_64 rng(seed ^ 0x5049434bULL);
  const std::vector<size_t> anywhere = {0};
  int decoded = 0, rejected = 0;
  CaseGuard guard;
  for (int c = 0; c < cases; ++c) {
    std::vector<uint8_t> bytes = original;
    const std::string mutation = mutate(bytes, anywhere, rng);
    const std::string description =
        "meta pickle case " + std::to_string(c) + " (seed " + std::to_string(seed) + "): " + mutation;
    guard.start(description);
    try {
      io::interpret_meta(*pickle::parse(bytes));
      ++decoded;
    } catch (const Error& e) {
      ++rejected;
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << description << ": " << e.what();
    } catch (const std::exception& e) {
      ADD_FAILURE() << description << ": not a rabbit::Error: " << e.what();
    }
  }
  EXPECT_GT(rejected, 0);
  std::printf("meta pickle: %d mutations decoded, %d rejected\n", decoded, rejected);
}

}  // namespace
}  // namespace rabbit
