#pragma once
// Running the project's executables from tests.
#include <string>
#include <vector>

namespace rabbit::test {

struct CommandResult {
  int exit_code = -1;  // -1 when the command could not be started or did not exit normally
  std::string output;  // stdout and stderr, interleaved
};

/// Runs `command` through the shell, capturing stdout and stderr.
CommandResult run_command(const std::string& command);

/// BUILD/rabbit_fit `args` as its own process, through the shell (so `args` are quoted as for a
/// shell), capturing stdout and stderr: for checks of the executable itself (exit codes, messages).
CommandResult run_rabbit_fit(const std::string& args);

/// `text` split into words as a POSIX shell splits unquoted, single-quoted and double-quoted text
/// (no expansions, no backslash escapes): "a 'b c'" gives {"a", "b c"}.
std::vector<std::string> shell_words(const std::string& text);

/// rabbit_fit in this process (no shell, no new process): `args` (without the program name) split
/// by shell_words; returns its exit code, its output goes where the test's goes. For the slow and
/// repeated cases (docs/architecture.md "Folders", tests).
int run_rabbit_fit_in_process(const std::string& args);

/// The same, with what the run writes to stdout and stderr captured (file descriptors 1 and 2
/// point to a temporary file during the call): the exit code and the text the executable would
/// print, without the cost of starting it.
CommandResult run_rabbit_fit_captured(const std::string& args);

/// `text` as one single-quoted shell word.
std::string shell_quote(const std::string& text);

}  // namespace rabbit::test
