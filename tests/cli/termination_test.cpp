// Termination signals, temporary files and snapshots (docs/user-guide.md "Interrupted runs" and
// "Snapshots and resuming a preempted fit"): a run killed by any catchable termination signal
// leaves no temporary file, keeps the previous result and says one line; temporary files of dead
// runs are removed; a SIGTERM during a fit with --snapshotFile writes a snapshot from which
// --externalPostfit finishes at the same minimum. The killed runs are the executable (fork/exec).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "rabbit/core/durable_file.hpp"
#include "rabbit/io/hdf5_reader.hpp"
#include "rabbit/postfit/result_file.hpp"
#include "support/command.hpp"
#include "support/test_paths.hpp"

namespace fs = std::filesystem;
using rabbit::result::ResultReader;
using rabbit::test::example_tensor;
using rabbit::test::run_rabbit_fit_captured;
using rabbit::test::scratch_dir;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// BUILD/rabbit_fit `args` as a child process, stdout and stderr into `log`.
pid_t start_rabbit_fit(const std::vector<std::string>& args, const fs::path& log) {
  const std::string exe = (rabbit::test::binary_dir() / "rabbit_fit").string();
  pid_t pid = fork();
  if (pid == 0) {
    const struct rlimit no_core = {0, 0};  // SIGQUIT's default action would dump core
    setrlimit(RLIMIT_CORE, &no_core);
    int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 1);
    dup2(fd, 2);
    std::vector<char*> argv{const_cast<char*>(exe.c_str())};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(exe.c_str(), argv.data());
    _exit(127);
  }
  return pid;
}

// Waits (up to 10 s) until a file whose name contains `part` exists in `dir`.
bool wait_for_file(const fs::path& dir, const std::string& part) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < end) {
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), e; !ec && it != e; it.increment(ec))
      if (it->path().filename().string().find(part) != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return false;
}

std::vector<std::string> file_names(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

TEST(Termination, EverySignalRemovesTheTemporaryFileAndKeepsThePreviousResult) {
  auto dir = scratch_dir("termination_signals");
  const fs::path final_path = dir / "fitresults.hdf5";
  // The previous result, which no interrupted run may touch.
  ASSERT_EQ(run_rabbit_fit_captured(example_tensor() + " -t 0 -o " + dir.string()).exit_code, 0);
  const std::string previous = slurp(final_path);
  ASSERT_FALSE(previous.empty());

  const std::vector<std::pair<int, std::string>> signals = {
      {SIGHUP, "SIGHUP"},   {SIGINT, "SIGINT"},   {SIGPIPE, "SIGPIPE"}, {SIGTERM, "SIGTERM"},
      {SIGUSR1, "SIGUSR1"}, {SIGUSR2, "SIGUSR2"}, {SIGQUIT, "SIGQUIT"}, {SIGALRM, "SIGALRM"}};
  for (const auto& [sig, name] : signals) {
    SCOPED_TRACE(name);
    const fs::path log = dir.parent_path() / ("termination_signals_" + name + ".log");
    // A scan of 4001 points keeps the run busy while its temporary result file exists.
    pid_t pid = start_rabbit_fit(
        {example_tensor(), "-t", "0", "--scan", "--scanPoints", "4001", "-o", dir.string()}, log);
    ASSERT_GT(pid, 0);
    EXPECT_TRUE(wait_for_file(dir, ".tmp"));
    kill(pid, sig);
    int status = 0;
    waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status)) << slurp(log);
    EXPECT_EQ(WTERMSIG(status), sig);
    EXPECT_EQ(file_names(dir), std::vector<std::string>{"fitresults.hdf5"});
    EXPECT_EQ(slurp(final_path), previous);
    // One line, naming the signal and the file it removed.
    std::string text = slurp(log);
    const auto at = text.find("rabbit_fit: terminated by " + name + "; removed the unfinished ");
    ASSERT_NE(at, std::string::npos) << text;
    const std::string line = text.substr(at);
    EXPECT_EQ(std::count(line.begin(), line.end(), '\n'), 1) << line;
    EXPECT_NE(line.find(".fitresults.hdf5.tmp" + std::to_string(pid)), std::string::npos) << line;
  }
}

TEST(Termination, StaleTemporaryFilesOfDeadRunsAreRemoved) {
  auto dir = scratch_dir("termination_stale");
  const std::string final_path = (dir / "fitresults.hdf5").string();
  // A pid that is certainly dead: a child that has exited and been reaped.
  pid_t dead = fork();
  if (dead == 0) _exit(0);
  waitpid(dead, nullptr, 0);
  const std::string own = rabbit::durable::temporary_path(final_path);
  const std::string own_pid = std::to_string(getpid());
  auto with_pid = [&](pid_t pid) {
    std::string p = own;
    p.replace(p.find(".tmp" + own_pid) + 4, own_pid.size(), std::to_string(pid));
    return p;
  };
  const std::string stale = with_pid(dead), alive = with_pid(getppid());
  const std::string other_host = stale.substr(0, stale.rfind('.')) + ".some-other-node";
  for (const auto& p : {stale, alive, other_host}) std::ofstream(p) << "partial";

  auto r = run_rabbit_fit_captured(example_tensor() + " -t 0 -o " + dir.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_FALSE(fs::exists(stale)) << r.output;
  EXPECT_NE(r.output.find("removed " + stale + ", the unfinished result of a run that no longer exists"),
            std::string::npos)
      << r.output;
  EXPECT_TRUE(fs::exists(alive));       // a live process of this host may still write it
  EXPECT_TRUE(fs::exists(other_host));  // not of this host: its pid says nothing here
  EXPECT_TRUE(fs::exists(final_path));
}

TEST(Termination, SigtermDuringAFitWritesASnapshotThatResumesToTheSameMinimum) {
  auto dir = scratch_dir("termination_snapshot");
  const std::string tensor = example_tensor();
  // The uninterrupted fit.
  auto r = run_rabbit_fit_captured(tensor + " -t 0 --unblind -o " + dir.string() + " -p full");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const double nll_full =
      ResultReader((dir / "fitresults_full.hdf5").string()).scalar("results/nllvalreduced");

  // The same fit with a snapshot at every iteration (1e-9 h), killed by SIGTERM as soon as the
  // first snapshot exists: the handler defers, the next iteration (or the end point) writes the
  // snapshot, then the run ends by SIGTERM. The fit lasts about a second; on a machine so loaded
  // that the signal only arrives after it, the attempt is repeated (at most three).
  const fs::path snapshot = dir / "snapshot.hdf5";
  const fs::path log = dir.parent_path() / "termination_snapshot.log";
  const std::string deferred =
      "rabbit_fit: terminated by SIGTERM after writing the snapshot " + snapshot.string();
  std::string text;
  int status = 0;
  for (int attempt = 0; attempt < 3; ++attempt) {
    fs::remove(snapshot);
    pid_t pid = start_rabbit_fit({tensor, "-t", "0", "--unblind", "-o", dir.string(), "-p", "killed",
                                  "--snapshotFile", snapshot.string(), "--snapshotInterval", "1e-9"},
                                 log);
    ASSERT_GT(pid, 0);
    ASSERT_TRUE(wait_for_file(dir, "snapshot.hdf5")) << slurp(log);
    kill(pid, SIGTERM);
    waitpid(pid, &status, 0);
    text = slurp(log);
    if (text.find(deferred) != std::string::npos) break;
    fs::remove(dir / "fitresults_killed.hdf5");
  }
  ASSERT_TRUE(WIFSIGNALED(status)) << text;
  EXPECT_EQ(WTERMSIG(status), SIGTERM);
  EXPECT_NE(text.find(deferred), std::string::npos) << text;
  EXPECT_FALSE(fs::exists(dir / "fitresults_killed.hdf5"));
  for (const auto& name : file_names(dir)) EXPECT_EQ(name.find(".tmp"), std::string::npos) << name;

  // Resumed from the snapshot: the same minimum.
  r = run_rabbit_fit_captured(tensor + " -t 0 --unblind -o " + dir.string() +
                              " -p resumed --externalPostfit " + snapshot.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("External postfit " + snapshot.string() + ": 13 of 13 parameters loaded"),
            std::string::npos)
      << r.output;
  const double nll_resumed =
      ResultReader((dir / "fitresults_resumed.hdf5").string()).scalar("results/nllvalreduced");
  EXPECT_NEAR(nll_resumed, nll_full, 1e-9);
}

TEST(Termination, SnapshotOptionsAreChecked) {
  auto r = run_rabbit_fit_captured(example_tensor() + " -t 0 --snapshotInterval 1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("--snapshotInterval needs --snapshotFile"), std::string::npos) << r.output;
  r = run_rabbit_fit_captured(example_tensor() + " -t 0 --snapshotFile s.hdf5 --snapshotInterval -1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("argument --snapshotInterval: must be a number of hours >= 0"), std::string::npos)
      << r.output;
}

TEST(Termination, SnapshotHoldsTheEndPointOfEachFit) {
  auto dir = scratch_dir("termination_snapshot_end");
  const fs::path snapshot = dir / "end.hdf5";
  auto r = run_rabbit_fit_captured(example_tensor() + " -t 0 --unblind -o " + dir.string() +
                                   " --snapshotFile " + snapshot.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  rabbit::h5::Reader reader(snapshot.string());
  const auto x = reader.read_doubles(reader.info("x"));
  const auto names = reader.read_strings("parms");
  const auto parms = ResultReader((dir / "fitresults.hdf5").string()).hist("results/parms");
  ASSERT_EQ(parms.axis_labels.size(), 1u);
  EXPECT_EQ(names, parms.axis_labels[0]);
  EXPECT_EQ(x, parms.values);  // the minimum, bit for bit
  for (const auto& name : file_names(dir)) EXPECT_EQ(name.find(".tmp"), std::string::npos) << name;
}
