#pragma once
// rabbit_limit's command line (docs/user-guide.md "rabbit_limit"): its own options (rabbit_limit.py's
// --asymptoticLimits, --levels, --modes) are taken off argv here and the rest is parsed by rabbit_fit's
// parser; check_limit_options then refuses, with one line naming the option, every rabbit_fit option
// that rabbit_limit does not take or does not honour.
#include <string>
#include <vector>

#include "rabbit/cli/options.hpp"

namespace rabbit::cli {

struct LimitOptions {
  std::vector<std::string> params;  // --asymptoticLimits
  std::vector<double> levels = {0.05};
  bool gaussian = true, likelihood = true;  // --modes
};

/// Takes rabbit_limit.py's own options (nargs="+") off argv into `lo`; returns the rest for
/// parse_fit_options, with --outname limits.hdf5 added when none was given (rabbit_limit.py's default).
std::vector<std::string> take_limit_options(int argc, const char* const* argv, LimitOptions& lo);

/// Throws OptionError (one line, naming the option) for what rabbit_limit refuses; returns the
/// warnings to log (options accepted with a note).
std::vector<std::string> check_limit_options(const FitOptions& o, const LimitOptions& lo);

}  // namespace rabbit::cli
