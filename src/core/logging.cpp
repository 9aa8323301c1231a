#include "rabbit/core/logging.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>

namespace rabbit {

spdlog::logger& log() {
  static std::shared_ptr<spdlog::logger> logger = [] {
    auto l = spdlog::stderr_color_mt("rabbit");
    l->set_pattern("%^%L%$ %H:%M:%S.%e %v");
    l->set_level(spdlog::level::info);
    return l;
  }();
  return *logger;
}

void set_verbosity(int verbose) {
  using spdlog::level::level_enum;
  level_enum level = level_enum::info;
  if (verbose <= 0)
    level = level_enum::critical;
  else if (verbose == 1)
    level = level_enum::err;
  else if (verbose == 2)
    level = level_enum::warn;
  else if (verbose == 3)
    level = level_enum::info;
  else if (verbose == 4)
    level = level_enum::debug;
  else
    level = level_enum::trace;
  log().set_level(level);
}

}  // namespace rabbit
