#include "daemon/hal/sim/presets.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

namespace neuron::rtd::hal::sim {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr uint64_t kGiB = uint64_t{1} << 30;

std::vector<DeviceInfo> Topology(std::string_view name, uint32_t lnc = 0) {
  const SimPreset* preset = FindSimPreset(name);
  EXPECT_NE(preset, nullptr) << name;
  absl::StatusOr<std::vector<DeviceInfo>> devices = BuildTopology(*preset, lnc);
  EXPECT_TRUE(devices.ok()) << devices.status();
  return *devices;
}

TEST(PresetsTest, DevIsSmall) {
  std::vector<DeviceInfo> devices = Topology("dev");
  ASSERT_EQ(devices.size(), 1u);
  EXPECT_EQ(devices[0].logical_cores(), 2u);
  EXPECT_EQ(devices[0].hbm_total_bytes, 4 * kGiB);
  EXPECT_EQ(kDefaultSimPreset, "dev");
}

TEST(PresetsTest, Trn2ThreeXLargeIsOneChipOfFourLogicalCores) {
  std::vector<DeviceInfo> devices = Topology("trn2.3xlarge");
  ASSERT_EQ(devices.size(), 1u);
  EXPECT_EQ(devices[0].instance_type, "trn2.3xlarge");
  EXPECT_EQ(devices[0].architecture, Architecture::kTrainium2);
  EXPECT_EQ(devices[0].physical_cores, 8u);
  EXPECT_EQ(devices[0].logical_nc_config, 2u);
  EXPECT_EQ(devices[0].logical_cores(), 4u);
  EXPECT_EQ(devices[0].hbm_total_bytes, 96 * kGiB);
  EXPECT_TRUE(devices[0].connected_devices.empty());
}

TEST(PresetsTest, Trn2FortyEightXLargeIsSixteenChipsInATorus) {
  std::vector<DeviceInfo> devices = Topology("trn2.48xlarge");
  ASSERT_EQ(devices.size(), 16u);
  uint32_t next_core = 0;
  for (const DeviceInfo& device : devices) {
    EXPECT_EQ(device.logical_cores(), 4u);
    EXPECT_EQ(device.hbm_total_bytes, 96 * kGiB);
    EXPECT_EQ(device.first_core_index, next_core);
    next_core += device.logical_cores();
    ASSERT_EQ(device.connected_devices.size(), 4u) << device.index;
    for (uint32_t neighbour : device.connected_devices) {
      const auto& back = devices[neighbour].connected_devices;
      EXPECT_NE(std::find(back.begin(), back.end(), device.index), back.end())
          << device.index << " -> " << neighbour << " is not symmetric";
    }
  }
  EXPECT_EQ(next_core, 64u);
  EXPECT_THAT(devices[0].connected_devices, ElementsAre(1, 3, 4, 12));
  EXPECT_THAT(devices[5].connected_devices, ElementsAre(1, 4, 6, 9));
}

TEST(PresetsTest, Trn3HasTrainium3Numbers) {
  std::vector<DeviceInfo> devices = Topology("trn3");
  ASSERT_EQ(devices.size(), 1u);
  EXPECT_EQ(devices[0].architecture, Architecture::kTrainium3);
  EXPECT_EQ(devices[0].physical_cores, 8u);
  EXPECT_EQ(devices[0].hbm_total_bytes, 144 * kGiB);
}

TEST(PresetsTest, LogicalNcConfigOneShowsEveryPhysicalCore) {
  std::vector<DeviceInfo> devices = Topology("trn2.48xlarge", 1);
  EXPECT_EQ(devices[0].logical_cores(), 8u);
  EXPECT_EQ(devices[15].first_core_index, 120u);
}

TEST(PresetsTest, BadLogicalNcConfigIsRefused) {
  const SimPreset* preset = FindSimPreset("dev");
  EXPECT_THAT(BuildTopology(*preset, 3).status().message(), HasSubstr("must be 1 or 2"));
}

TEST(PresetsTest, UnknownPresetIsNotFound) {
  EXPECT_EQ(FindSimPreset("trn1.2xlarge"), nullptr);
  EXPECT_EQ(SimPresetNames(), "dev, trn2.3xlarge, trn2.48xlarge, trn3");
}

}  // namespace
}  // namespace neuron::rtd::hal::sim
