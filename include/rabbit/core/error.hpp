#pragma once
// The few exception types of rabbit-cpp. Libraries throw them; each app's main catches them
// once, prints the message as one line and exits with the code of its kind.
#include <stdexcept>
#include <string>
#include <string_view>

namespace rabbit {

enum class ExitCode : int {
  ok = 0,
  failure = 1,    // anything unexpected
  option = 2,     // bad command line
  input = 3,      // bad or unreadable input file
  resource = 4,   // device missing, out of memory
  numerical = 5,  // the fit failed numerically (NaN loss, singular Hessian where one is needed)
};

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what, ExitCode code = ExitCode::failure)
      : std::runtime_error(what), code_(code) {}
  ExitCode code() const noexcept { return code_; }

 private:
  ExitCode code_;
};

/// A bad or unreadable input file; the message names the file and the dataset.
class InputError : public Error {
 public:
  explicit InputError(const std::string& what) : Error(what, ExitCode::input) {}
};

/// A bad command-line option or combination; the message names the option.
class OptionError : public Error {
 public:
  explicit OptionError(const std::string& what) : Error(what, ExitCode::option) {}
};

/// A device that is not there, or memory that does not suffice.
class ResourceError : public Error {
 public:
  explicit ResourceError(const std::string& what) : Error(what, ExitCode::resource) {}
};

/// A numerical failure (non-finite loss at the start point, a singular Hessian where one is needed).
class NumericalError : public Error {
 public:
  explicit NumericalError(const std::string& what) : Error(what, ExitCode::numerical) {}
};

/// Prints "TOOL: error: MESSAGE" on standard error as one line (newlines in MESSAGE become
/// spaces) in a single write, after flushing standard output. A launcher (mpirun, srun) that
/// merges the streams of several ranks then cannot split the line with another stream's text.
void print_error_line(std::string_view tool, std::string_view message);

}  // namespace rabbit
