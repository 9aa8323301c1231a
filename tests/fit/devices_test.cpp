// GPU selection (docs/sharding-and-gpu.md "Device selection") as a pure function of the visible devices and
// their occupancy, plus the parsers it relies on. No GPU needed.
#include "rabbit/fit/devices.hpp"

#include <gtest/gtest.h>

#include "rabbit/core/error.hpp"
#include "support/exception_message.hpp"

namespace rabbit {
namespace {

using test::message_of;

GpuInfo gpu(int ordinal, uint32_t bus) {
  GpuInfo g;
  g.ordinal = ordinal;
  g.pci = PciAddress{0, bus, 0, 0};
  g.name = "test";
  return g;
}

std::vector<int> ordinals(const GpuSelection& s) {
  std::vector<int> out;
  for (const auto& g : s.gpus) out.push_back(g.ordinal);
  return out;
}

TEST(Devices, ParsesPciBusIds) {
  auto a = parse_pci_bus_id("00000000:17:00.0");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->bus, 0x17u);
  auto b = parse_pci_bus_id(" 0000:B3:00.0 \n");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->bus, 0xb3u);
  EXPECT_EQ(*a < *b, true);
  EXPECT_EQ(b->str(), "0000:b3:00.0");
  EXPECT_FALSE(parse_pci_bus_id("GPU-1234"));
  EXPECT_FALSE(parse_pci_bus_id("0000:17:00.0x"));
}

TEST(Devices, ParsesNvidiaSmiCsv) {
  const auto occ =
      parse_nvidia_smi_memory("00000000:17:00.0, 1024\n00000000:65:00.0, 3\nNo devices were found\n");
  ASSERT_EQ(occ.size(), 2u);
  EXPECT_EQ(occ[0].pci.bus, 0x17u);
  EXPECT_EQ(occ[0].used_bytes, 1024ull << 20);
  EXPECT_EQ(occ[1].used_bytes, 3ull << 20);
}

TEST(Devices, ValidatesOptions) {
  EXPECT_NE(
      message_of<OptionError>([] { validate_device_options(0, {}); }).find("--nDevices must be >= 1, got 0"),
      std::string::npos);
  EXPECT_NE(message_of<OptionError>([] { validate_device_options(-1, {}); }).find("must be >= 1"),
            std::string::npos);
  EXPECT_NE(message_of<OptionError>([] {
              validate_device_options(2, {0, -1});
            }).find("must be >= 0"),
            std::string::npos);
  EXPECT_NE(message_of<OptionError>([] {
              validate_device_options(2, {1});
            }).find("--devices lists 1 device(s) but --nDevices is 2; they must match."),
            std::string::npos);
  EXPECT_NO_THROW(validate_device_options(2, {1, 1}));  // two shards on one GPU
  EXPECT_NO_THROW(validate_device_options(2, {3, 1}));
}

TEST(Devices, NoGpuMeansCpuRun) {
  const auto sel = choose_gpus(2, {}, {}, std::nullopt, "no CUDA device is visible");
  EXPECT_TRUE(sel.gpus.empty());
  EXPECT_NE(message_of<ResourceError>([] {
              choose_gpus(1, {0}, {}, std::nullopt, "driver too old");
            }).find("driver too old"),
            std::string::npos);
}

TEST(Devices, PicksLeastOccupiedByPciBusNotByOrdinal) {
  // CUDA ordinals in "fastest first" order differ from the bus order; the occupancy is keyed by bus.
  const std::vector<GpuInfo> visible = {gpu(0, 0x65), gpu(1, 0x17), gpu(2, 0xb3), gpu(3, 0x31)};
  const std::vector<GpuOccupancy> occ = {{PciAddress{0, 0x17, 0, 0}, 9000ull << 20},
                                         {PciAddress{0, 0x31, 0, 0}, 10ull << 20},
                                         {PciAddress{0, 0x65, 0, 0}, 5000ull << 20},
                                         {PciAddress{0, 0xb3, 0, 0}, 20ull << 20}};
  const auto one = choose_gpus(1, {}, visible, occ);
  EXPECT_EQ(ordinals(one), std::vector<int>({3}));  // bus 0x31
  const auto two = choose_gpus(2, {}, visible, occ);
  EXPECT_EQ(ordinals(two), std::vector<int>({3, 2}));  // returned in bus order: 0x31, 0xb3
  EXPECT_FALSE(two.info.empty());
}

TEST(Devices, MissingOccupancyCountsAsZeroAndTiesKeepBusOrder) {
  const std::vector<GpuInfo> visible = {gpu(0, 0x65), gpu(1, 0x17), gpu(2, 0xb3)};
  const std::vector<GpuOccupancy> occ = {{PciAddress{0, 0x17, 0, 0}, 100ull << 20}};
  EXPECT_EQ(ordinals(choose_gpus(2, {}, visible, occ)), std::vector<int>({0, 2}));
}

TEST(Devices, QueryFailureTakesTheFirstNAndSaysSo) {
  const std::vector<GpuInfo> visible = {gpu(0, 0x65), gpu(1, 0x17), gpu(2, 0xb3)};
  const auto sel = choose_gpus(2, {}, visible, std::nullopt, "libnvidia-ml.so.1 not found");
  EXPECT_EQ(ordinals(sel), std::vector<int>({1, 0}));  // bus 0x17, 0x65
  ASSERT_EQ(sel.warnings.size(), 1u);
  EXPECT_NE(sel.warnings[0].find(
                "Could not query GPU occupancy (libnvidia-ml.so.1 not found); using the first 2 GPU(s)."),
            std::string::npos);
}

TEST(Devices, ExplicitIndicesFollowBusOrderAndAreChecked) {
  const std::vector<GpuInfo> visible = {gpu(0, 0x65), gpu(1, 0x17)};
  EXPECT_EQ(ordinals(choose_gpus(1, {0}, visible, std::nullopt)), std::vector<int>({1}));
  EXPECT_EQ(ordinals(choose_gpus(1, {1}, visible, std::nullopt)), std::vector<int>({0}));
  // An index may repeat: two shards on the GPU at bus 0x65 (--devices 1,1).
  EXPECT_EQ(ordinals(choose_gpus(2, {1, 1}, visible, std::nullopt)), std::vector<int>({0, 0}));
  EXPECT_NE(message_of<ResourceError>([&] {
              choose_gpus(1, {2}, visible, std::nullopt);
            }).find("out of range: 2 GPU(s) visible"),
            std::string::npos);
}

TEST(Devices, FewerVisibleThanRequestedReturnsAll) {
  const std::vector<GpuInfo> visible = {gpu(0, 0x65)};
  EXPECT_EQ(ordinals(choose_gpus(3, {}, visible, std::nullopt)), std::vector<int>({0}));
}

TEST(Devices, OccupancyQueryNeverThrows) {
  // On a machine without a GPU driver both routes fail and say why; with one they return data.
  std::string failure;
  const auto occ = query_gpu_occupancy(&failure);
  if (!occ) {
    EXPECT_FALSE(failure.empty());
  }
  std::string why;
  const auto visible = visible_gpus(&why);
  if (visible.empty()) {
    EXPECT_FALSE(why.empty());
  }
}

}  // namespace
}  // namespace rabbit
