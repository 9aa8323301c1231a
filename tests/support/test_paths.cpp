#include "support/test_paths.hpp"

#include <unistd.h>

#include <cstdlib>
#include <string>

namespace rabbit::test {
// RABBIT_TEST_SOURCE_DIR / RABBIT_TEST_BINARY_DIR override the paths compiled in, for test executables
// run on another machine (scripts/gpu-check's prebuilt binaries, docs/sharding-and-gpu.md "GPU check").
std::filesystem::path source_dir() {
  const char* dir = std::getenv("RABBIT_TEST_SOURCE_DIR");
  return dir && *dir ? dir : RABBIT_SOURCE_DIR;
}
std::filesystem::path binary_dir() {
  const char* dir = std::getenv("RABBIT_TEST_BINARY_DIR");
  return dir && *dir ? dir : RABBIT_BINARY_DIR;
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
