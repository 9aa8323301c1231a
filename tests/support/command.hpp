#pragma once
// Running the project's executables from tests.
#include <string>

namespace rabbit::test {

struct CommandResult {
  int exit_code = -1;  // -1 when the command could not be started or did not exit normally
  std::string output;  // stdout and stderr, interleaved
};

/// Runs `command` through the shell, capturing stdout and stderr.
CommandResult run_command(const std::string& command);

/// rabbit_fit in this process (no shell, no new process): `args` split at whitespace, without the
/// program name; returns its exit code. For the slow and repeated cases (docs/validation.md).
int run_rabbit_fit_in_process(const std::string& args);

/// `text` as one single-quoted shell word.
std::string shell_quote(const std::string& text);

}  // namespace rabbit::test
