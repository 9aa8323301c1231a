#include "support/test_paths.hpp"

namespace rabbit::test {
std::filesystem::path source_dir() { return RABBIT_SOURCE_DIR; }
std::filesystem::path binary_dir() { return RABBIT_BINARY_DIR; }
std::filesystem::path shared_dir() { return RABBIT_SHARED_DIR; }
std::filesystem::path scratch_dir(const std::string& name) {
  auto dir = binary_dir() / "test-scratch" / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}
}  // namespace rabbit::test
