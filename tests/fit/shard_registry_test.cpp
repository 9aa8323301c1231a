// The registry of shard kinds (docs/architecture.md "Adding a shard kind"): "cpu" is built in, a
// registered kind is found by name and builds shards, an unknown name is one Error line.
#include "rabbit/fit/shard_registry.hpp"

#include <gtest/gtest.h>

#include "rabbit/core/error.hpp"
#include "support/model_fixtures.hpp"

namespace rabbit {
namespace {

using testing::make_test_input;
using testing::make_test_model;
using testing::ShardConfig;

TEST(ShardRegistry, CpuIsBuiltIn) {
  ShardConfig cfg;
  auto model = make_test_model(make_test_input(cfg), cfg);
  const ShardKind& cpu = shard_kind("cpu");
  EXPECT_FALSE(cpu.dense_linalg);  // CPU fits keep the host's default_linalg()
  ShardSpec spec;
  spec.model = model;
  spec.bin_begin = 1;
  spec.bin_end = model->input->nbins;
  spec.threads = 1;
  auto shard = cpu.create(spec);
  EXPECT_EQ(shard->device(), "cpu");
  EXPECT_EQ(shard->bin_begin(), 1);
  EXPECT_EQ(shard->bin_end(), model->input->nbins);
}

TEST(ShardRegistry, ARegisteredKindBuildsShardsByName) {
  int calls = 0;
  ShardKind counting;
  counting.create = [&calls](const ShardSpec& s) {
    ++calls;
    return shard_kind("cpu").create(s);
  };
  register_shard_kind("counting_test_kind", counting);
  ASSERT_NE(find_shard_kind("counting_test_kind"), nullptr);
  const auto names = shard_kind_names();
  EXPECT_NE(std::find(names.begin(), names.end(), "counting_test_kind"), names.end());
  ShardConfig cfg;
  auto model = make_test_model(make_test_input(cfg), cfg);
  ShardSpec spec;
  spec.model = model;
  spec.bin_end = model->input->nbins;
  auto shard = shard_kind("counting_test_kind").create(spec);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(shard->bin_end(), model->input->nbins);
}

TEST(ShardRegistry, UnknownKindIsOneLineNamingTheRegisteredOnes) {
  EXPECT_EQ(find_shard_kind("no_such_kind"), nullptr);
  try {
    shard_kind("no_such_kind");
    FAIL() << "expected Error";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("'no_such_kind'"), std::string::npos) << m;
    EXPECT_NE(m.find("cpu"), std::string::npos) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  }
}

}  // namespace
}  // namespace rabbit
