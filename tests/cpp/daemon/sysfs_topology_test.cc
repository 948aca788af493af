// The nrt backend's reading of the Neuron driver's sysfs (devices and links,
// ECC counts, the cores' memory), on fake trees in the driver's formats.
#include "daemon/hal/nrt/sysfs_topology.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "daemon/hal/nrt/sysfs_ecc.h"
#include "daemon/hal/nrt/sysfs_memory.h"

#include "testing/fake_neuron_sysfs.h"
#include "testing/temp_dir.h"

namespace neuron::rtd::hal::nrt {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

TEST(SysfsTopologyTest, ReadsEachDevicesNameCoresAndLinks) {
  neuron::testing::TempDir dir;
  neuron::testing::WriteFakeNeuronSysfs(
      dir.path(), {{.index = 0, .connected_devices = {1, 3}},
                   {.index = 1, .connected_devices = {0}},
                   {.index = 3, .physical_cores = 8, .connected_devices = {}}});
  absl::StatusOr<std::map<uint32_t, SysfsDevice>> devices = ReadSysfsTopology(dir.path());
  ASSERT_TRUE(devices.ok()) << devices.status();
  ASSERT_EQ(devices->size(), 3u);
  const SysfsDevice& first = devices->at(0);
  EXPECT_EQ(first.physical_cores, 8u);
  EXPECT_EQ(first.device_name, "Trainium2");
  EXPECT_EQ(first.instance_type, "Trn2");
  EXPECT_THAT(first.connected_devices, ElementsAre(1, 3));
  EXPECT_THAT(devices->at(3).connected_devices, IsEmpty());
}

TEST(SysfsTopologyTest, CountsCoreDirectoriesWhereCoreCountIsRootOnly) {
  neuron::testing::TempDir dir;
  neuron::testing::WriteFakeNeuronSysfs(
      dir.path(), {{.index = 0, .physical_cores = 4, .core_count_readable = false}});
  absl::StatusOr<std::map<uint32_t, SysfsDevice>> devices = ReadSysfsTopology(dir.path());
  ASSERT_TRUE(devices.ok()) << devices.status();
  EXPECT_EQ(devices->at(0).physical_cores, 4u);
}

TEST(SysfsTopologyTest, IgnoresWhatIsNotADeviceAndDevicesWithoutCores) {
  neuron::testing::TempDir dir;
  neuron::testing::WriteFakeNeuronSysfs(dir.path(), {{.index = 2, .physical_cores = 2}});
  std::filesystem::create_directories(dir.Join("neuron_x"));
  std::filesystem::create_directories(dir.Join("neuron07"));
  std::filesystem::create_directories(dir.Join("neuron5"));  // no cores
  dir.WriteFile("neuron9", "not a directory");
  absl::StatusOr<std::map<uint32_t, SysfsDevice>> devices = ReadSysfsTopology(dir.path());
  ASSERT_TRUE(devices.ok()) << devices.status();
  ASSERT_EQ(devices->size(), 1u);
  EXPECT_EQ(devices->begin()->first, 2u);
}

TEST(SysfsTopologyTest, NoDriverIsNotFoundNamingThePath) {
  neuron::testing::TempDir dir;
  absl::StatusOr<std::map<uint32_t, SysfsDevice>> empty = ReadSysfsTopology(dir.path());
  EXPECT_EQ(empty.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(empty.status().message(), HasSubstr(dir.path()));
  absl::StatusOr<std::map<uint32_t, SysfsDevice>> missing =
      ReadSysfsTopology(dir.Join("no/such/dir"));
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("no/such/dir"));
}

TEST(SysfsEccTest, ReadsTheDriversCountsAndLeavesWhatItLacksUnknown) {
  neuron::testing::TempDir dir;
  neuron::testing::WriteFakeNeuronSysfs(
      dir.path(), {{.index = 0, .mem_ecc_uncorrected = 3, .sram_ecc_uncorrected = 1},
                   {.index = 1}});
  const EccCounts counted = ReadSysfsEcc(dir.Join("neuron0"));
  EXPECT_EQ(counted.mem_uncorrected, 3u);
  EXPECT_EQ(counted.sram_uncorrected, 1u);
  EXPECT_FALSE(counted.mem_repairable_uncorrected.has_value());
  EXPECT_FALSE(counted.mem_corrected.has_value());
  EXPECT_FALSE(ReadSysfsEcc(dir.Join("neuron1")).mem_uncorrected.has_value());
  // Drivers from 2.30.2 count corrected events too.
  std::ofstream(dir.Join("neuron0/stats/hardware/sram_ecc_corrected")) << "12\n";
  EXPECT_EQ(ReadSysfsEcc(dir.Join("neuron0")).sram_corrected, 12u);
  EXPECT_FALSE(ReadSysfsEcc(dir.Join("neuron7")).sram_uncorrected.has_value());
  // What is not a count is not taken for one.
  std::ofstream(dir.Join("neuron0/stats/hardware/mem_ecc_uncorrected")) << "error\n";
  std::ofstream(dir.Join("neuron0/stats/hardware/sram_ecc_uncorrected")) << "-1\n";
  const EccCounts garbled = ReadSysfsEcc(dir.Join("neuron0"));
  EXPECT_FALSE(garbled.mem_uncorrected.has_value());
  EXPECT_FALSE(garbled.sram_uncorrected.has_value());
}

TEST(SysfsMemoryTest, SumsTheCoresAskedForByCategory) {
  neuron::testing::TempDir dir;
  neuron::testing::WriteFakeNeuronSysfs(
      dir.path(), {{.index = 0,
                    .physical_cores = 4,
                    .core_memory = {{0,
                                     {{"tensors", 4096},
                                      {"model_code", 100},
                                      {"constants", 10},
                                      {"model_shared_scratchpad", 1000},
                                      {"nonshared_scratchpad", 2000},
                                      {"runtime_memory", 1},
                                      {"driver_memory", 2},
                                      {"collectives", 4},
                                      {"notifications", 8},
                                      {"dma_rings", 16},
                                      {"uncategorized", 32}}},
                                    {1, {{"model_code", 200}}},
                                    {2, {{"model_code", 50000}}}}}});
  const std::vector<uint32_t> first_two = {0, 1};
  std::optional<SysfsMemoryUsage> usage = ReadSysfsMemoryUsage(dir.Join("neuron0"), first_two);
  ASSERT_TRUE(usage.has_value());
  EXPECT_EQ(usage->tensors, 4096u);
  // Present bytes (not total or peak), core 2 left out.
  EXPECT_EQ(usage->model_code, 300u);
  EXPECT_EQ(usage->constants, 10u);
  EXPECT_EQ(usage->scratchpad, 3000u);
  EXPECT_EQ(usage->other, 63u);
  EXPECT_EQ(usage->total(), 4096u + 300 + 10 + 3000 + 63);
}

TEST(SysfsMemoryTest, UnknownWhenACoreHasNoReadableCategory) {
  neuron::testing::TempDir dir;
  neuron::testing::WriteFakeNeuronSysfs(
      dir.path(), {{.index = 0, .physical_cores = 4, .core_memory = {{0, {{"tensors", 1}}}}}});
  const std::vector<uint32_t> both = {0, 3};
  EXPECT_FALSE(ReadSysfsMemoryUsage(dir.Join("neuron0"), both).has_value());
  EXPECT_FALSE(ReadSysfsMemoryUsage(dir.Join("neuron9"), both).has_value());
  const std::vector<uint32_t> first = {0};
  ASSERT_TRUE(ReadSysfsMemoryUsage(dir.Join("neuron0"), first).has_value());
  // What is not a decimal is not a count; the core's other categories are.
  std::filesystem::create_directories(
      dir.Join("neuron0/neuron_core0/stats/memory_usage/device_mem/constants"));
  std::ofstream(dir.Join("neuron0/neuron_core0/stats/memory_usage/device_mem/constants/present"))
      << "lots\n";
  std::optional<SysfsMemoryUsage> garbled = ReadSysfsMemoryUsage(dir.Join("neuron0"), first);
  ASSERT_TRUE(garbled.has_value());
  EXPECT_EQ(garbled->constants, 0u);
  EXPECT_EQ(garbled->tensors, 1u);
}

}  // namespace
}  // namespace neuron::rtd::hal::nrt
