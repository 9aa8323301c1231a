// The CUDA plugin from the command line (docs/sharding-and-gpu.md "The CUDA plugin"): no app of a
// CUDA build links a CUDA library, and `--backend cuda` where the plugin cannot be loaded is one
// error line naming --backend and dlopen's reason, with the ResourceError exit code.
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <sstream>
#include <string>

#include "rabbit/core/error.hpp"
#include "rabbit/fit/devices.hpp"
#include "support/command.hpp"
#include "support/test_paths.hpp"

namespace fs = std::filesystem;

namespace {

using rabbit::test::binary_dir;
using rabbit::test::run_command;
using rabbit::test::shell_quote;

TEST(CudaPluginCli, NoAppLinksACudaLibrary) {
  if (!rabbit::built_with_cuda()) GTEST_SKIP() << "built without CUDA (configure with -DRABBIT_CUDA=ON)";
  const std::regex cuda_library(
      R"(lib(cuda|cudart|cublas|cublasLt|cusolver|cusparse|nvJitLink|nvrtc)[.\-_])");
  int checked = 0;
  for (const char* app : {"rabbit_fit", "rabbit_inspect", "rabbit_make_tensor", "rabbit_print_impacts",
                          "rabbit_print_pulls_and_constraints", "rabbit_compare"}) {
    const fs::path exe = binary_dir() / app;
    if (!fs::exists(exe)) continue;
    const auto r = run_command("ldd " + shell_quote(exe.string()));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_FALSE(std::regex_search(r.output, cuda_library)) << app << " links a CUDA library:\n" << r.output;
    ++checked;
  }
  ASSERT_TRUE(fs::exists(binary_dir() / "rabbit_fit")) << "build rabbit_fit_app first";
  EXPECT_GE(checked, 1);
}

TEST(CudaPluginCli, BackendCudaWithoutThePluginIsOneLineNamingBackend) {
  if (!rabbit::built_with_cuda()) GTEST_SKIP() << "built without CUDA (configure with -DRABBIT_CUDA=ON)";
  const fs::path exe = binary_dir() / "rabbit_fit";
  const fs::path out = rabbit::test::scratch_dir("cuda_plugin_cli");
  const fs::path tensor = rabbit::test::source_dir() / "examples" / "example_tensor.hdf5";
  const auto r =
      run_command("RABBIT_CUDA_PLUGIN=/nonexistent/rabbit_cuda_plugin.so " + shell_quote(exe.string()) + " " +
                  shell_quote(tensor.string()) + " -t 0 --backend cuda -o " + shell_quote(out.string()));
  EXPECT_EQ(r.exit_code, static_cast<int>(rabbit::ExitCode::resource)) << r.output;
  std::istringstream lines(r.output);
  std::string line, error_line;
  int error_lines = 0;
  while (std::getline(lines, line))
    if (line.find("error") != std::string::npos) {
      error_line = line;
      ++error_lines;
    }
  EXPECT_EQ(error_lines, 1) << r.output;
  EXPECT_NE(error_line.find("--backend cuda"), std::string::npos) << r.output;
  // dlopen's reason, on the same line.
  EXPECT_NE(error_line.find("/nonexistent/rabbit_cuda_plugin.so"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(out / "fitresults.hdf5"));
}

}  // namespace
