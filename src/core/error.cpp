#include "rabbit/core/error.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <iostream>

namespace rabbit {

void print_error_line(std::string_view tool, std::string_view message) {
  std::cout.flush();
  std::fflush(stdout);
  std::string line;
  line.reserve(tool.size() + message.size() + 10);
  line.append(tool).append(": error: ").append(message);
  std::replace(line.begin(), line.end(), '\n', ' ');
  line.push_back('\n');
  // One write(2): std::cerr is unbuffered and would write the pieces one by one.
  const char* p = line.data();
  size_t left = line.size();
  while (left > 0) {
    const ssize_t n = ::write(STDERR_FILENO, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    p += n;
    left -= static_cast<size_t>(n);
  }
}

}  // namespace rabbit
