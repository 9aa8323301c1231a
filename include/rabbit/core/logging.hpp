#pragma once
// One spdlog logger for the whole program, with rabbit's -v levels:
//   0 critical only, 1 errors, 2 warnings, 3 info (default), 4 debug and beyond.
#include <spdlog/spdlog.h>

namespace rabbit {

/// The project's logger ("rabbit"), created on first use, writing to stderr.
spdlog::logger& log();

/// Sets the level from rabbit's --verbose value (0..4; above 4 is trace).
void set_verbosity(int verbose);

}  // namespace rabbit
