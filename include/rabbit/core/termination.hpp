#pragma once
// What a catchable termination signal does to a run (docs/architecture.md "Termination, temporary
// files and memory"): every signal whose default action ends the process (HUP, INT, QUIT, PIPE,
// ALRM, TERM, USR1, USR2, XCPU, XFSZ, VTALRM, PROF) removes the temporary files registered here,
// prints one line naming the signal and ends the process by the signal's own default action, so
// the parent sees it killed by that signal. A previous result under the final name is never
// touched: it is only ever replaced by a rename of a complete file.
//
// Snapshots (docs/user-guide.md "Snapshots and resuming a preempted fit"): while a minimisation
// that writes snapshots runs, SIGTERM and SIGUSR1 (what slurm sends before a time limit or a
// preemption) are deferred instead: the handler only records the signal, the minimiser's next
// iteration writes the snapshot and then calls terminate_after_snapshot(). A second deferred
// signal, or any other signal, ends the run at once.
#include <string>

namespace rabbit::termination {

/// Installs the handlers (once; later calls do nothing). `program` prefixes the line printed on a
/// signal.
void install_handlers(const char* program = "rabbit_fit");

/// A temporary file removed by the handlers while registered. Registration is for the thread that
/// creates and renames the file (the run's main thread); at most a few are registered at once.
class TemporaryFile {
 public:
  explicit TemporaryFile(const std::string& path);
  ~TemporaryFile();
  TemporaryFile(const TemporaryFile&) = delete;
  TemporaryFile& operator=(const TemporaryFile&) = delete;
  /// Stops removing the file on a signal (it has been renamed or removed).
  void release();

 private:
  int slot_ = -1;
};

/// While alive, SIGTERM and SIGUSR1 are deferred (see above).
class DeferTerminationForSnapshot {
 public:
  DeferTerminationForSnapshot();
  ~DeferTerminationForSnapshot();
  DeferTerminationForSnapshot(const DeferTerminationForSnapshot&) = delete;
  DeferTerminationForSnapshot& operator=(const DeferTerminationForSnapshot&) = delete;
};

/// The deferred signal waiting for a snapshot, or 0.
int pending_signal();

/// After the snapshot for the pending signal is written: removes the temporary files, prints one
/// line naming the signal and `snapshot_path`, and ends the process by the signal.
[[noreturn]] void terminate_after_snapshot(const std::string& snapshot_path);

}  // namespace rabbit::termination
