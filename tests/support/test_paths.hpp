#pragma once
// Paths the tests need: the source tree (inputs such as examples/) and the build tree (the apps,
// scratch files). Tests read nothing outside the repository and the build tree. Both can be moved by
// the environment (test_paths.cpp).
#include <filesystem>
#include <string>

namespace rabbit::test {
std::filesystem::path source_dir();
std::filesystem::path binary_dir();
/// examples/example_tensor.hdf5 of the source tree: the model most tests fit.
std::string example_tensor();
/// A fresh, empty directory under the build tree for one test's files, private to this process.
std::filesystem::path scratch_dir(const std::string& name);
}  // namespace rabbit::test
