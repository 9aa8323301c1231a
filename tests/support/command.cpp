#include "support/command.hpp"

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <sstream>
#include <vector>

#include "rabbit/cli/run_fit.hpp"

namespace rabbit::test {

int run_rabbit_fit_in_process(const std::string& args) {
  std::vector<std::string> words{"rabbit_fit"};
  std::istringstream in(args);
  for (std::string w; in >> w;) words.push_back(w);
  std::vector<const char*> argv;
  for (const auto& w : words) argv.push_back(w.c_str());
  return rabbit::cli::rabbit_fit_main(static_cast<int>(argv.size()), argv.data());
}

CommandResult run_command(const std::string& command) {
  CommandResult result;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return result;
  std::array<char, 4096> buffer;
  while (fgets(buffer.data(), buffer.size(), pipe)) result.output += buffer.data();
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

std::string shell_quote(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace rabbit::test
