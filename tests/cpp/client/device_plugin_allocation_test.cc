// The device plugin's pure decisions: device IDs, grant names, preferred
// cores, quotas and what a container receives.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "client/device_plugin/allocation.h"
#include "client/k8s/core_device_ids.h"

namespace neuron_device_plugin {
namespace {

using ::neuron_k8s::CoreDeviceId;
using ::neuron_k8s::CoreOfDeviceId;
using ::neuron_k8s::CoresOfDeviceIds;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Two devices of four cores, 96 GiB each (trn2's LNC=2 numbers).
std::vector<neuronrt::DeviceInfo> TwoDevices() {
  std::vector<neuronrt::DeviceInfo> devices(2);
  devices[0].index = 0;
  devices[0].cores = {0, 1, 2, 3};
  devices[0].hbm_total_bytes = uint64_t{96} << 30;
  devices[1].index = 1;
  devices[1].cores = {4, 5, 6, 7};
  devices[1].hbm_total_bytes = uint64_t{96} << 30;
  return devices;
}

TEST(DevicePluginAllocationTest, DeviceIdsNameOneCoreEach) {
  EXPECT_EQ(CoreDeviceId(12), "nc-12");
  EXPECT_EQ(*CoreOfDeviceId("nc-12"), 12u);
  for (const char* bad : {"nc-", "nc-01", "nc-1x", "nd-1", "nc--1", "nc-4294967296", ""}) {
    EXPECT_THAT(CoreOfDeviceId(bad).status().message(), HasSubstr("is not one of")) << bad;
  }
  EXPECT_THAT(*CoresOfDeviceIds({"nc-5", "nc-4", "nc-5"}), ElementsAre(4u, 5u));
}

TEST(DevicePluginAllocationTest, GrantsAreNamedByTheirCores) {
  EXPECT_EQ(CoreRanges({4, 5, 6, 7}), "4-7");
  EXPECT_EQ(CoreRanges({0, 2, 4, 5}), "0,2,4-5");
  EXPECT_EQ(GrantIdFor({4, 5, 6, 7}), "nc4-7");
  EXPECT_EQ(GrantIdFor({0, 1, 4}), "nc0-1.4");
  std::vector<uint32_t> every_other;
  for (uint32_t core = 0; core < 128; core += 2) every_other.push_back(core);
  const std::string hashed = GrantIdFor(every_other);
  EXPECT_THAT(hashed, ::testing::StartsWith("nc-h"));
  EXPECT_EQ(hashed.size(), 20u);
  EXPECT_EQ(GrantIdFor(every_other), hashed) << "the same cores, the same grant";
  every_other.back() = 127;
  EXPECT_NE(GrantIdFor(every_other), hashed);
}

TEST(DevicePluginAllocationTest, PreferredCoresAreFewDevicesAndContiguous) {
  const auto devices = TwoDevices();
  // Both devices have three free: the first, a contiguous pair.
  EXPECT_THAT(PreferredCores(devices, {1, 2, 3, 5, 6, 7}, {}, 2), ElementsAre(1u, 2u));
  // The tightest device that fits: device 1 has exactly two free.
  EXPECT_THAT(PreferredCores(devices, {0, 1, 2, 5, 7}, {}, 2), ElementsAre(5u, 7u));
  // Must-include first, completed on its device.
  EXPECT_THAT(PreferredCores(devices, {0, 1, 5, 7}, {6}, 2), ElementsAre(5u, 6u));
  // More than a device: a whole device, then the rest.
  EXPECT_THAT(PreferredCores(devices, {0, 1, 2, 3, 4, 5, 6, 7}, {}, 5),
              ElementsAre(0u, 1u, 2u, 3u, 4u));
  // A run of two where one exists.
  EXPECT_THAT(PreferredCores(devices, {0, 2, 3}, {}, 2), ElementsAre(2u, 3u));
}

TEST(DevicePluginAllocationTest, QuotaIsEachCoresShareOfItsDevice) {
  EXPECT_EQ(HbmQuotaFor(TwoDevices(), {0, 4, 5}), uint64_t{72} << 30);
  EXPECT_EQ(HbmQuotaFor(TwoDevices(), {}), 0u);
}

TEST(DevicePluginAllocationTest, AContainerGetsTheDirectoryAndItsCores) {
  const ContainerGrant given = ContainerGrantFor(
      neuronrt::GrantInfo{.grant_id = "nc4-5", .cores = {4, 5},
                          .directory = "/run/neuron-rtd/grants/nc4-5"},
      "/run/neuron-rtd");
  EXPECT_EQ(given.envs.at("NEURON_RTD_ADDRESS"), "unix:/run/neuron-rtd/neuron-rtd.sock");
  EXPECT_EQ(given.envs.at("NEURON_RT_VISIBLE_CORES"), "4-5");
  EXPECT_EQ(given.envs.at("NEURON_RTD_GRANT"), "nc4-5");
  EXPECT_EQ(given.host_path, "/run/neuron-rtd/grants/nc4-5");
  EXPECT_EQ(given.container_path, "/run/neuron-rtd");
}

}  // namespace
}  // namespace neuron_device_plugin
