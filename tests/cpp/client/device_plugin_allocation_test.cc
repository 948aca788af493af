// The device plugin's pure decisions: device IDs, grant names, preferred
// cores and devices, quotas, what a container receives, the devices' health
// and the options it serves.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "client/device_plugin/allocation.h"
#include "client/device_plugin/device_health.h"
#include "client/device_plugin/plugin_runner.h"
#include "client/k8s/device_ids.h"

namespace neuron_device_plugin {
namespace {

using ::neuron_k8s::CoresOfDevices;
using ::neuron_k8s::DeviceId;
using ::neuron_k8s::IndexOfDeviceId;
using ::neuron_k8s::IndicesOfDeviceIds;
using ::neuron_k8s::Unit;
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

TEST(DevicePluginAllocationTest, DeviceIdsNameOneCoreOrOneDeviceEach) {
  EXPECT_EQ(DeviceId(Unit::kCore, 12), "nc-12");
  EXPECT_EQ(DeviceId(Unit::kDevice, 3), "nd-3");
  EXPECT_EQ(*IndexOfDeviceId(Unit::kCore, "nc-12"), 12u);
  EXPECT_EQ(*IndexOfDeviceId(Unit::kDevice, "nd-3"), 3u);
  for (const char* bad : {"nc-", "nc-01", "nc-1x", "nd-1", "nc--1", "nc-4294967296", ""}) {
    EXPECT_THAT(IndexOfDeviceId(Unit::kCore, bad).status().message(), HasSubstr("is not one of"))
        << bad;
  }
  EXPECT_THAT(IndexOfDeviceId(Unit::kDevice, "nc-1").status().message(),
              HasSubstr("(nd-<device>)"));
  EXPECT_THAT(*IndicesOfDeviceIds(Unit::kCore, {"nc-5", "nc-4", "nc-5"}), ElementsAre(4u, 5u));
  EXPECT_THAT(*IndicesOfDeviceIds(Unit::kDevice, {"nd-1", "nd-0"}), ElementsAre(0u, 1u));
}

TEST(DevicePluginAllocationTest, ADeviceStandsForEveryCoreOfIt) {
  EXPECT_THAT(*CoresOfDevices(TwoDevices(), {1}), ElementsAre(4u, 5u, 6u, 7u));
  EXPECT_THAT(*CoresOfDevices(TwoDevices(), {1, 0}), ElementsAre(0u, 1u, 2u, 3u, 4u, 5u, 6u, 7u));
  EXPECT_THAT(CoresOfDevices(TwoDevices(), {2}).status().message(),
              HasSubstr("nd-2 is not one of this host's 2 Neuron devices"));
}

TEST(DevicePluginAllocationTest, GrantsAreNamedByTheirCoresOrDevices) {
  EXPECT_EQ(CoreRanges({4, 5, 6, 7}), "4-7");
  EXPECT_EQ(CoreRanges({0, 2, 4, 5}), "0,2,4-5");
  EXPECT_EQ(GrantIdFor(Unit::kCore, {4, 5, 6, 7}), "nc4-7");
  EXPECT_EQ(GrantIdFor(Unit::kCore, {0, 1, 4}), "nc0-1.4");
  EXPECT_EQ(GrantIdFor(Unit::kDevice, {0, 1, 4}), "nd0-1.4");
  std::vector<uint32_t> every_other;
  for (uint32_t core = 0; core < 128; core += 2) every_other.push_back(core);
  const std::string hashed = GrantIdFor(Unit::kCore, every_other);
  EXPECT_THAT(hashed, ::testing::StartsWith("nc-h"));
  EXPECT_EQ(hashed.size(), 20u);
  EXPECT_EQ(GrantIdFor(Unit::kCore, every_other), hashed) << "the same cores, the same grant";
  EXPECT_THAT(GrantIdFor(Unit::kDevice, every_other), ::testing::StartsWith("nd-h"));
  every_other.back() = 127;
  EXPECT_NE(GrantIdFor(Unit::kCore, every_other), hashed);
  for (const std::string& id : {GrantIdFor(Unit::kCore, {4}), hashed}) {
    EXPECT_EQ(UnitOfGrantId(id), Unit::kCore) << id;
  }
  for (const std::string& id : {GrantIdFor(Unit::kDevice, {4}), GrantIdFor(Unit::kDevice, every_other)}) {
    EXPECT_EQ(UnitOfGrantId(id), Unit::kDevice) << id;
  }
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

// Sixteen devices in a 4x4 torus, as trn2.48xlarge links them.
std::vector<neuronrt::DeviceInfo> Torus() {
  std::vector<neuronrt::DeviceInfo> devices(16);
  for (uint32_t index = 0; index < 16; ++index) {
    const uint32_t row = index / 4;
    const uint32_t column = index % 4;
    devices[index].index = index;
    devices[index].connected_devices = {row * 4 + (column + 1) % 4, row * 4 + (column + 3) % 4,
                                        (row + 1) % 4 * 4 + column, (row + 3) % 4 * 4 + column};
  }
  return devices;
}

TEST(DevicePluginAllocationTest, PreferredDevicesAreLinkedToEachOther) {
  const auto torus = Torus();
  // 0 and 2 are not linked (0-1-2 is a row): 1 joins them, or else 0's
  // neighbours.
  EXPECT_THAT(PreferredDevices(torus, {0, 1, 2, 3}, {}, 2), ElementsAre(0u, 1u));
  // 0 is free but none of its neighbours is: the lowest linked pair.
  EXPECT_THAT(PreferredDevices(torus, {0, 5, 6}, {}, 2), ElementsAre(5u, 6u));
  // Must-include first, grown along its links (6's neighbours 2, 5, 7, 10).
  EXPECT_THAT(PreferredDevices(torus, {0, 1, 10, 11}, {6}, 2), ElementsAre(6u, 10u));
  // No linked set: the lowest.
  EXPECT_THAT(PreferredDevices(torus, {0, 5, 10, 15}, {}, 2), ElementsAre(0u, 5u));
  // All of them.
  EXPECT_EQ(PreferredDevices(torus, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}, {}, 16)
                .size(),
            16u);
  EXPECT_TRUE(PreferredDevices(torus, {0, 1}, {}, 0).empty());
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

std::vector<std::pair<std::string, std::string>> Health(const v1beta1::ListAndWatchResponse& listed) {
  std::vector<std::pair<std::string, std::string>> health;
  for (const v1beta1::Device& device : listed.devices()) {
    health.emplace_back(device.id(), device.health());
  }
  return health;
}

using Listed = std::vector<std::pair<std::string, std::string>>;

TEST(DevicePluginHealthTest, WhatTheOtherResourceHoldsIsUnhealthy) {
  DaemonView view{.serving = true, .devices = TwoDevices()};
  view.devices[1].core_faults[6] = "execution error 101";
  EXPECT_EQ(Health(ListedDevices(Unit::kCore, view)),
            (Listed{{"nc-0", "Healthy"}, {"nc-1", "Healthy"}, {"nc-2", "Healthy"},
                    {"nc-3", "Healthy"}, {"nc-4", "Healthy"}, {"nc-5", "Healthy"},
                    {"nc-6", "Unhealthy"}, {"nc-7", "Healthy"}}));
  EXPECT_EQ(Health(ListedDevices(Unit::kDevice, view)),
            (Listed{{"nd-0", "Healthy"}, {"nd-1", "Unhealthy"}}))
      << "a device is whole only with every core";

  // Core 1 granted as a core: device 0 is no longer whole; device 0 granted
  // as a device: its cores are taken.
  view.devices[1].core_faults.clear();
  view.granted_as_cores = {1};
  EXPECT_EQ(Health(ListedDevices(Unit::kDevice, view)),
            (Listed{{"nd-0", "Unhealthy"}, {"nd-1", "Healthy"}}));
  EXPECT_EQ(Health(ListedDevices(Unit::kCore, view))[1], (std::pair<std::string, std::string>{
                                                             "nc-1", "Healthy"}))
      << "a core's own grant does not hide it from its own resource";
  view.granted_as_cores.clear();
  view.granted_as_devices = {4, 5, 6, 7};
  const Listed cores = Health(ListedDevices(Unit::kCore, view));
  EXPECT_EQ(cores[3].second, "Healthy");
  EXPECT_EQ(cores[4].second, "Unhealthy");
  EXPECT_EQ(cores[7].second, "Unhealthy");
  EXPECT_EQ(Health(ListedDevices(Unit::kDevice, view))[1].second, "Healthy");

  // A daemon that does not serve: every device, the same list.
  view.serving = false;
  view.granted_as_devices.clear();
  for (const auto& [id, health] : Health(ListedDevices(Unit::kDevice, view))) {
    EXPECT_EQ(health, "Unhealthy") << id;
  }
  EXPECT_EQ(ListedDevices(Unit::kCore, view).devices_size(), 8);
}

TEST(DevicePluginOptionsTest, OneResourceOfEachUnitEachOnItsOwnSocket) {
  PluginOptions options;
  EXPECT_TRUE(ValidatePluginOptions(options).ok()) << "the defaults";
  options.resources.push_back({.resource = {.name = "aws.amazon.com/neuron", .unit = Unit::kDevice},
                               .endpoint = "neuron-rtd-neuron.sock"});
  EXPECT_TRUE(ValidatePluginOptions(options).ok());

  PluginOptions two_device_names = options;
  two_device_names.resources.push_back(
      {.resource = {.name = "aws.amazon.com/neurondevice", .unit = Unit::kDevice},
       .endpoint = "neuron-rtd-neurondevice.sock"});
  EXPECT_THAT(ValidatePluginOptions(two_device_names).message(),
              HasSubstr("only one resource of devices"));

  PluginOptions same_socket = options;
  same_socket.resources[1].endpoint = same_socket.resources[0].endpoint;
  EXPECT_THAT(ValidatePluginOptions(same_socket).message(), HasSubstr("used by two resources"));

  for (const char* endpoint : {"", "../x.sock", "kubelet.sock", ".hidden.sock"}) {
    PluginOptions bad = options;
    bad.resources[1].endpoint = endpoint;
    EXPECT_THAT(ValidatePluginOptions(bad).message(), HasSubstr("is not a socket name")) << endpoint;
  }
  PluginOptions no_domain = options;
  no_domain.resources[1].resource.name = "neuron";
  EXPECT_THAT(ValidatePluginOptions(no_domain).message(), HasSubstr("domain/name"));
  EXPECT_THAT(ValidatePluginOptions(PluginOptions{.resources = {}}).message(),
              HasSubstr("no resource"));
}

}  // namespace
}  // namespace neuron_device_plugin
