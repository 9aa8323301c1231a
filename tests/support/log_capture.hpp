#pragma once
// Captures what rabbit::log() writes while alive (its formatted lines, the last 1000), for tests
// that check a log message; the logger's own sinks keep writing as before.
#include <spdlog/sinks/ringbuffer_sink.h>

#include <algorithm>
#include <memory>
#include <string>

#include "rabbit/core/logging.hpp"

namespace rabbit::test {

class LogCapture {
 public:
  LogCapture() : sink_(std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(1000)) {
    rabbit::log().sinks().push_back(sink_);
  }
  ~LogCapture() {
    auto& sinks = rabbit::log().sinks();
    sinks.erase(std::remove(sinks.begin(), sinks.end(), sink_), sinks.end());
  }
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;

  bool contains(const std::string& text) const {
    for (const auto& line : sink_->last_formatted())
      if (line.find(text) != std::string::npos) return true;
    return false;
  }

 private:
  std::shared_ptr<spdlog::sinks::ringbuffer_sink_mt> sink_;
};

}  // namespace rabbit::test
