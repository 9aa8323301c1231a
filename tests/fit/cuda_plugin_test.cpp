// The CUDA plugin boundary (docs/sharding-and-gpu.md "The CUDA plugin"), on any machine with a CUDA
// build, GPU or not: the plugin next to the test executable loads (which also checks that it shares
// this process's rabbit_core: one logger), registers the shard kind "cuda", and rabbit's exception
// types thrown inside the plugin are caught by type here with their exit code.
#include <gtest/gtest.h>

#include <cstdlib>

#include "rabbit/core/error.hpp"
#include "rabbit/core/logging.hpp"
#include "rabbit/fit/cuda_plugin_loader.hpp"
#include "rabbit/fit/devices.hpp"
#include "rabbit/fit/shard_registry.hpp"
#include "support/model_fixtures.hpp"

namespace rabbit {
namespace {

using testing::make_test_input;
using testing::make_test_model;
using testing::ShardConfig;

const CudaPluginV1* loaded_plugin() {
  std::string why;
  const CudaPluginV1* plugin = cuda_plugin(&why);
  EXPECT_NE(plugin, nullptr) << why << " (looked at: " << cuda_plugin_candidates().front() << ")";
  return plugin;
}

TEST(CudaPlugin, LoadsAndSharesTheProcessCore) {
  if (!built_with_cuda()) GTEST_SKIP() << "built without CUDA (configure with -DRABBIT_CUDA=ON)";
  if (std::getenv(kCudaPluginVariable)) GTEST_SKIP() << kCudaPluginVariable << " is set";
  const CudaPluginV1* plugin = loaded_plugin();
  ASSERT_NE(plugin, nullptr);
  EXPECT_EQ(plugin->core_identity(), static_cast<const void*>(&log()));
  EXPECT_NE(find_shard_kind("cuda"), nullptr);
  // Device enumeration answers without a GPU too (empty, with the runtime's reason).
  std::string why;
  const auto devices = plugin->visible_devices(&why);
  if (devices.empty()) {
    EXPECT_FALSE(why.empty());
  }
}

TEST(CudaPlugin, ItsExceptionsAreCaughtByTypeWithTheirExitCode) {
  if (!built_with_cuda()) GTEST_SKIP() << "built without CUDA (configure with -DRABBIT_CUDA=ON)";
  if (std::getenv(kCudaPluginVariable)) GTEST_SKIP() << kCudaPluginVariable << " is set";
  ASSERT_NE(loaded_plugin(), nullptr);
  ShardConfig cfg;
  auto model = make_test_model(make_test_input(cfg), cfg);
  ShardSpec spec;
  spec.model = model;
  spec.bin_end = model->input->nbins;
  spec.device = 4096;  // no such device, GPU or not: the plugin throws ResourceError
  try {
    shard_kind("cuda").create(spec);
    FAIL() << "expected ResourceError";
  } catch (const ResourceError& e) {
    EXPECT_EQ(e.code(), ExitCode::resource);
    const std::string m = e.what();
    EXPECT_NE(m.find("cuda:4096"), std::string::npos) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  }
  const auto& linalg = find_shard_kind("cuda")->dense_linalg;
  ASSERT_TRUE(linalg);
  EXPECT_THROW(linalg(4096), ResourceError);
}

}  // namespace
}  // namespace rabbit
