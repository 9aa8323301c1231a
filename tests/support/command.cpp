#include "support/command.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cctype>
#include <cstdio>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <vector>

#include "rabbit/cli/run_fit.hpp"
#include "support/test_paths.hpp"

namespace rabbit::test {

std::vector<std::string> shell_words(const std::string& text) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  char quote = 0;  // the open quote character, 0 outside quotes
  for (char c : text) {
    if (quote) {
      if (c == quote)
        quote = 0;
      else
        word += c;
    } else if (c == '\'' || c == '"') {
      quote = c;
      in_word = true;
    } else if (std::isspace(static_cast<unsigned char>(c))) {
      if (in_word) words.push_back(word);
      word.clear();
      in_word = false;
    } else {
      word += c;
      in_word = true;
    }
  }
  if (quote) throw std::invalid_argument("shell_words: unterminated quote in: " + text);
  if (in_word) words.push_back(word);
  return words;
}

int run_rabbit_fit_in_process(const std::string& args) {
  std::vector<std::string> words{"rabbit_fit"};
  for (auto& w : shell_words(args)) words.push_back(std::move(w));
  std::vector<const char*> argv;
  for (const auto& w : words) argv.push_back(w.c_str());
  return rabbit::cli::rabbit_fit_main(static_cast<int>(argv.size()), argv.data());
}

namespace {

// Points file descriptors 1 and 2 at `target` until destroyed (also when the run throws), with
// every C and C++ stream flushed at both ends so no text lands on the wrong side.
class RedirectedOutput {
 public:
  explicit RedirectedOutput(int target) : saved_out_(::dup(1)), saved_err_(::dup(2)) {
    flush_all();
    ::dup2(target, 1);
    ::dup2(target, 2);
  }
  ~RedirectedOutput() {
    flush_all();
    ::dup2(saved_out_, 1);
    ::dup2(saved_err_, 2);
    ::close(saved_out_);
    ::close(saved_err_);
  }
  RedirectedOutput(const RedirectedOutput&) = delete;
  RedirectedOutput& operator=(const RedirectedOutput&) = delete;

 private:
  static void flush_all() {
    std::cout.flush();
    std::cerr.flush();
    std::fflush(nullptr);
  }
  int saved_out_, saved_err_;
};

}  // namespace

CommandResult run_rabbit_fit_captured(const std::string& args) {
  std::unique_ptr<FILE, int (*)(FILE*)> file(std::tmpfile(), &std::fclose);
  if (!file) throw std::runtime_error("run_rabbit_fit_captured: no temporary file for the output");
  CommandResult result;
  {
    RedirectedOutput redirect(::fileno(file.get()));
    result.exit_code = run_rabbit_fit_in_process(args);
  }
  std::rewind(file.get());
  std::array<char, 4096> buffer;
  for (size_t n; (n = std::fread(buffer.data(), 1, buffer.size(), file.get())) > 0;)
    result.output.append(buffer.data(), n);
  return result;
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

CommandResult run_rabbit_fit(const std::string& args) {
  return run_command(shell_quote((binary_dir() / "rabbit_fit").string()) + " " + args);
}

std::string shell_quote(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace rabbit::test
