#include "support/test_paths.hpp"

#include <unistd.h>

#include <string>

namespace rabbit::test {
std::filesystem::path source_dir() {
  return RABBIT_SOURCE_DIR;
}
std::filesystem::path binary_dir() {
  return RABBIT_BINARY_DIR;
}
std::string example_tensor() {
  return (source_dir() / "examples" / "example_tensor.hdf5").string();
}
std::filesystem::path scratch_dir(const std::string& name) {
  // ctest -j runs every test case in its own process, several at once: the process id keeps two
  // cases that use the same name from deleting each other's files.
  auto dir = binary_dir() / "test-scratch" / (name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}
}  // namespace rabbit::test
