// docs/reliability.md "HDF5's error printing and open files": a result file that cannot be created or
// written ends rabbit_fit with one line that carries the operating system's cause, no HDF5 error
// stack, and an orderly exit (no crash when the library shuts down).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include "support/command.hpp"
#include "support/test_paths.hpp"

namespace rabbit {
namespace {

// The lines of `text` that contain `what`.
int lines_with(const std::string& text, const std::string& what) {
  int n = 0;
  size_t start = 0;
  while (start < text.size()) {
    const size_t end = std::min(text.find('\n', start), text.size());
    n += text.substr(start, end - start).find(what) != std::string::npos;
    start = end + 1;
  }
  return n;
}

// The file system refuses the write: RLIMIT_FSIZE (ulimit -f, in KiB) with SIGXFSZ ignored makes
// write(2) fail with EFBIG once the result file passes the limit, as a full disk does with ENOSPC.
TEST(OutputFailure, AFullFileSystemIsOneLineWithItsCauseAndNoCrashAtExit) {
  const auto dir = test::scratch_dir("output_failure_full");
  const std::string fit = (test::binary_dir() / "rabbit_fit").string();
  const std::string command = "bash -c " + test::shell_quote("ulimit -f 64; trap '' XFSZ; exec " + fit + " " +
                                                             test::example_tensor() +
                                                             " -t 0 --saveHists "
                                                             "--computeHistErrors --computeHistCov -o " +
                                                             dir.string() + " -v 1");
  const test::CommandResult r = test::run_command(command);
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_LT(r.exit_code, 128) << "killed by a signal: " << r.output;  // a shell reports 128 + signal
  EXPECT_EQ(r.output.find("HDF5-DIAG"), std::string::npos) << r.output;
  EXPECT_EQ(lines_with(r.output, "error"), 1) << r.output;
  EXPECT_NE(r.output.find("rabbit_fit: error: "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("File too large"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(dir / "fitresults.hdf5"));
}

// A directory where the result file cannot be created (also for root: /proc/self is not writable).
TEST(OutputFailure, AnUncreatableResultFileIsOneLineWithItsCause) {
  const test::CommandResult r = test::run_rabbit_fit(test::example_tensor() + " -t 0 -o /proc/self -v 1");
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("HDF5-DIAG"), std::string::npos) << r.output;
  EXPECT_EQ(lines_with(r.output, "error"), 1) << r.output;
  EXPECT_NE(r.output.find("cannot create the result file /proc/self/.fitresults.hdf5.tmp"), std::string::npos)
      << r.output;
  // The cause is the operating system's, not HDF5's generic "unable to open file".
  EXPECT_EQ(r.output.find("unable to"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace rabbit
