#pragma once
// --snapshotFile / --snapshotInterval (docs/user-guide.md "Snapshots and resuming a preempted fit"):
// the parameters of the fit in progress written, complete or not at all, in the plain layout that
// --externalPostfit reads (datasets x and parms), so that a preempted job resumes with
// `--externalPostfit SNAPSHOT` from where it was stopped.
#include <Eigen/Core>
#include <chrono>
#include <string>
#include <vector>

namespace rabbit::cli {

class SnapshotWriter {
 public:
  /// `names`: the parameter names of x, in order. Removes the snapshot's temporary files that dead
  /// runs of this host left behind.
  SnapshotWriter(std::string path, double interval_hours, std::vector<std::string> names);

  /// From the minimizer's iteration callback with the full x: writes when the interval has passed
  /// since the last snapshot; when a SIGTERM/SIGUSR1 is pending (rabbit/core/termination.hpp),
  /// writes and ends the run by that signal.
  void on_iteration(const Eigen::VectorXd& x);
  /// After a minimization: writes its end point, then ends the run when a signal is pending.
  void on_minimum(const Eigen::VectorXd& x);

 private:
  void write(const Eigen::VectorXd& x);

  std::string path_;
  double interval_s_;
  std::vector<std::string> names_;
  std::chrono::steady_clock::time_point last_write_;
};

}  // namespace rabbit::cli
