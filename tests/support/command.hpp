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

/// `text` as one single-quoted shell word.
std::string shell_quote(const std::string& text);

}  // namespace rabbit::test
