// The termination-signal handlers (rabbit/core/termination.hpp). Everything the handler does is
// async-signal-safe: unlink(2), write(2), sigaction(2), raise(3) on paths and flags prepared
// beforehand (signal-safety(7)).
#include "rabbit/core/termination.hpp"

#include <unistd.h>

#include <array>
#include <atomic>
#include <csignal>
#include <cstring>

#include "rabbit/core/error.hpp"

namespace rabbit::termination {
namespace {

struct Slot {
  std::atomic<bool> active{false};
  char path[4096] = {0};
};
std::array<Slot, 4> g_slots;
std::atomic<bool> g_installed{false};
std::atomic<bool> g_deferring{false};
std::atomic<int> g_pending{0};
char g_program[64] = "rabbit_fit";

struct Named {
  int number;
  const char* name;
};
// The catchable signals whose default action ends the process (signal(7)); the synchronous faults
// (SEGV, BUS, FPE, ILL, ABRT, TRAP, SYS) are left to their default action.
constexpr Named kSignals[] = {{SIGHUP, "SIGHUP"},   {SIGINT, "SIGINT"},       {SIGQUIT, "SIGQUIT"},
                              {SIGPIPE, "SIGPIPE"}, {SIGALRM, "SIGALRM"},     {SIGTERM, "SIGTERM"},
                              {SIGUSR1, "SIGUSR1"}, {SIGUSR2, "SIGUSR2"},     {SIGXCPU, "SIGXCPU"},
                              {SIGXFSZ, "SIGXFSZ"}, {SIGVTALRM, "SIGVTALRM"}, {SIGPROF, "SIGPROF"}};

const char* signal_name(int sig) {
  for (const auto& s : kSignals)
    if (s.number == sig) return s.name;
  return "a signal";
}

void put(const char* text) {
  const size_t n = std::strlen(text);
  // A closed terminal (SIGHUP) or pipe makes the write fail; there is nobody to tell then.
  [[maybe_unused]] ssize_t written = write(STDERR_FILENO, text, n);
}

// Removes the registered files and prints the line; returns nothing, may run in a handler.
void clean_up_and_report(int sig, const char* snapshot_path) {
  bool removed_any = false;
  put(g_program);
  put(": terminated by ");
  put(signal_name(sig));
  if (snapshot_path) {
    put(" after writing the snapshot ");
    put(snapshot_path);
  }
  for (auto& slot : g_slots) {
    if (!slot.active.load()) continue;
    unlink(slot.path);
    put(removed_any ? ", " : "; removed the unfinished ");
    put(slot.path);
    removed_any = true;
  }
  if (removed_any) put(" (an earlier result under the final name is kept)");
  put("\n");
}

[[noreturn]] void end_by(int sig) {
  struct sigaction dfl;
  std::memset(&dfl, 0, sizeof(dfl));
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(sig, &dfl, nullptr);
  sigset_t unblock;
  sigemptyset(&unblock);
  sigaddset(&unblock, sig);
  sigprocmask(SIG_UNBLOCK, &unblock, nullptr);
  raise(sig);
  _exit(128 + sig);  // not reached: the default action of every handled signal ends the process
}

extern "C" void on_termination_signal(int sig) {
  if ((sig == SIGTERM || sig == SIGUSR1) && g_deferring.load()) {
    int none = 0;
    if (g_pending.compare_exchange_strong(none, sig)) return;  // the next iteration snapshots
  }
  clean_up_and_report(sig, nullptr);
  end_by(sig);
}

}  // namespace

void install_handlers(const char* program) {
  if (g_installed.exchange(true)) return;
  std::strncpy(g_program, program, sizeof(g_program) - 1);
  struct sigaction sa;
  std::memset(&sa, 0, sizeof(sa));
  sa.sa_handler = on_termination_signal;
  sigfillset(&sa.sa_mask);  // one handler at a time
  sa.sa_flags = SA_RESTART;
  for (const auto& s : kSignals) {
    struct sigaction old;
    sigaction(s.number, nullptr, &old);
    // A signal the parent set to be ignored (nohup's SIGHUP) stays ignored.
    if (old.sa_handler == SIG_IGN) continue;
    sigaction(s.number, &sa, nullptr);
  }
}

TemporaryFile::TemporaryFile(const std::string& path) {
  if (path.size() >= sizeof(Slot::path)) throw Error("path too long for a temporary file: " + path);
  for (size_t i = 0; i < g_slots.size(); ++i) {
    if (g_slots[i].active.load()) continue;
    std::memset(g_slots[i].path, 0, sizeof(Slot::path));
    std::memcpy(g_slots[i].path, path.data(), path.size());
    g_slots[i].active.store(true);
    slot_ = static_cast<int>(i);
    return;
  }
  throw Error("more than " + std::to_string(g_slots.size()) + " temporary files open at once: " + path);
}

TemporaryFile::~TemporaryFile() {
  release();
}

void TemporaryFile::release() {
  if (slot_ >= 0) g_slots[static_cast<size_t>(slot_)].active.store(false);
  slot_ = -1;
}

DeferTerminationForSnapshot::DeferTerminationForSnapshot() {
  g_deferring.store(true);
}

DeferTerminationForSnapshot::~DeferTerminationForSnapshot() {
  g_deferring.store(false);
}

int pending_signal() {
  return g_pending.load();
}

void terminate_after_snapshot(const std::string& snapshot_path) {
  const int sig = g_pending.load();
  clean_up_and_report(sig ? sig : SIGTERM, snapshot_path.c_str());
  end_by(sig ? sig : SIGTERM);
}

}  // namespace rabbit::termination
