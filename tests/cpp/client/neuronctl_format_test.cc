#include "client/neuronctl/format.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace neuronctl {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(NeuronctlFormatTest, CacheWhyFindsAGraphByNameOrIdAndNamesTheGraphsWhenNoneMatches) {
  const std::vector<neuronrt::CachedExecutable> executables = {
      {.executable_id = 7, .name = "forward_0", .kind = "graph", .launches = 3,
       .compile_state = "interpreted", .disk_cache = "not on disk: no package has this key"},
      {.executable_id = 8, .name = "aten::add", .kind = "eager_op"},
      {.executable_id = 9, .name = "backward_0", .kind = "graph", .tier = 1,
       .compile_state = "compiled"}};
  absl::StatusOr<std::string> by_name = CacheWhyText(executables, "forward_0");
  ASSERT_TRUE(by_name.ok());
  EXPECT_THAT(*by_name, HasSubstr("graph forward_0 (executable 7), 3 launch(es): tier 0, "
                                  "interpreted\n  disk cache: not on disk"));
  absl::StatusOr<std::string> by_id = CacheWhyText(executables, "9");
  ASSERT_TRUE(by_id.ok());
  EXPECT_THAT(*by_id, HasSubstr("does not compile graphs"));
  absl::StatusOr<std::string> missing = CacheWhyText(executables, "aten::add");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("holds backward_0, forward_0"));
}

TEST(NeuronctlFormatTest, Bytes) {
  EXPECT_EQ(FormatBytes(0), "0 B");
  EXPECT_EQ(FormatBytes(1023), "1023 B");
  EXPECT_EQ(FormatBytes(1024), "1 KiB");
  EXPECT_EQ(FormatBytes(1536), "1.5 KiB");
  EXPECT_EQ(FormatBytes(uint64_t{96} << 30), "96 GiB");
  EXPECT_EQ(FormatBytes(uint64_t{3} << 40), "3 TiB");
}

TEST(NeuronctlFormatTest, IndexRanges) {
  EXPECT_EQ(FormatIndexRanges({}), "-");
  EXPECT_EQ(FormatIndexRanges({5}), "5");
  EXPECT_EQ(FormatIndexRanges({0, 1, 2, 3}), "0-3");
  EXPECT_EQ(FormatIndexRanges({3, 0, 2}), "0,2-3");
}

TEST(NeuronctlFormatTest, HealthSaysWhetherGraphsCanBeCompiled) {
  neuronrt::HealthInfo health{.state = "serving", .daemon_version = "1.0", .backend = "sim"};
  EXPECT_THAT(HealthText(health, "unix:/s"), HasSubstr("  compiler: off\n"));
  health.compiler.enabled = true;
  EXPECT_THAT(HealthText(health, "unix:/s"), HasSubstr("compiler: starting its worker"));
  health.compiler.ready = true;
  health.compiler.python = "/venv/bin/python3.11";
  health.compiler.worker_torch_version = "2.13.0+cpu";
  EXPECT_THAT(HealthText(health, "unix:/s"),
              HasSubstr("compiler: ready (/venv/bin/python3.11, torch 2.13.0+cpu)"));
  EXPECT_EQ(HealthJson(health, "unix:/s")["compiler"]["python"], "/venv/bin/python3.11");
  health.compiler.ready = false;
  health.compiler.unavailable = "no Python interpreter has this daemon's torch 2.13.0";
  EXPECT_THAT(HealthText(health, "unix:/s"),
              HasSubstr("compiler: cannot compile: no Python interpreter has"));
}

neuronrt::DeviceInfo Device() {
  neuronrt::DeviceInfo device;
  device.index = 1;
  device.instance_type = "trn2.48xlarge";
  device.architecture = "trainium2";
  device.backend = "sim";
  device.physical_cores = 8;
  device.logical_nc_config = 2;
  device.cores = {4, 5, 6, 7};
  device.hbm_total_bytes = uint64_t{96} << 30;
  device.hbm_used_bytes = uint64_t{1} << 30;
  device.connected_devices = {0, 2, 5, 13};
  device.bus_id = "sim:1";
  return device;
}

TEST(NeuronctlFormatTest, DevicesTableHasAHeaderAndARowPerDevice) {
  const std::string table = DevicesTable({Device()});
  EXPECT_THAT(table, HasSubstr("DEVICE"));
  EXPECT_THAT(table, HasSubstr("HBM TOTAL"));
  EXPECT_THAT(table, HasSubstr("4 (4-7)"));
  EXPECT_THAT(table, HasSubstr("96 GiB"));
  EXPECT_THAT(table, HasSubstr("0,2,5,13"));
  EXPECT_EQ(std::count(table.begin(), table.end(), '\n'), 2);
}

TEST(NeuronctlFormatTest, DevicesJsonCarriesEveryField) {
  const nlohmann::json json = DevicesJson({Device()});
  ASSERT_EQ(json["devices"].size(), 1u);
  const nlohmann::json& device = json["devices"][0];
  EXPECT_EQ(device["index"], 1);
  EXPECT_EQ(device["cores"], 4);
  EXPECT_EQ(device["core_indices"], nlohmann::json({4, 5, 6, 7}));
  EXPECT_EQ(device["hbm_total_bytes"], uint64_t{96} << 30);
  EXPECT_EQ(device["hbm_used_bytes"], uint64_t{1} << 30);
  EXPECT_EQ(device["instance_type"], "trn2.48xlarge");
  EXPECT_EQ(device["logical_nc_config"], 2);
  EXPECT_EQ(device["connected_devices"], nlohmann::json({0, 2, 5, 13}));
}

TEST(NeuronctlFormatTest, StatsShowEachDevicesMemoryAndWhatEccCountsItReports) {
  neuronrt::Stats stats;
  stats.cores.push_back({.core = 0, .executions_completed = 3});
  // The sim: every figure known.
  stats.devices.push_back({.device_index = 0, .tensors_bytes = 3 << 20,
                           .hbm_total_bytes = uint64_t{4} << 30,
                           .hbm_largest_free_bytes = uint64_t{3} << 30, .hbm_segments = 2,
                           .runtime_bytes = 0,
                           .ecc = {.mem_corrected = 0, .mem_uncorrected = 0,
                                   .mem_repairable_uncorrected = 0, .sram_corrected = 0,
                                   .sram_uncorrected = 0}});
  // A driver without corrected counts, a runtime whose memory is unknown.
  stats.devices.push_back({.device_index = 1, .hbm_total_bytes = uint64_t{96} << 30,
                           .ecc = {.mem_uncorrected = 2, .mem_repairable_uncorrected = 1,
                                   .sram_uncorrected = 0}});
  const std::string table = neuronctl::StatsTable(stats);
  EXPECT_THAT(table, HasSubstr("CORE"));
  EXPECT_THAT(table, HasSubstr("HBM ECC CE/UE/REPAIR"));
  EXPECT_THAT(table, HasSubstr("3 MiB"));
  EXPECT_THAT(table, HasSubstr("0/0/0"));
  EXPECT_THAT(table, HasSubstr("-/2/1"));
  EXPECT_THAT(table, HasSubstr("-/0"));

  const nlohmann::json json = neuronctl::StatsJson(stats);
  ASSERT_EQ(json["devices"].size(), 2u);
  EXPECT_EQ(json["devices"][0]["tensors_bytes"], 3 << 20);
  EXPECT_EQ(json["devices"][0]["runtime_bytes"], 0);
  EXPECT_EQ(json["devices"][0]["ecc"].size(), 5u);
  EXPECT_TRUE(json["devices"][1]["runtime_bytes"].is_null());
  EXPECT_EQ(json["devices"][1]["ecc"],
            (nlohmann::json{{"mem_uncorrected", 2}, {"mem_repairable_uncorrected", 1},
                            {"sram_uncorrected", 0}}))
      << "counts the driver does not report are left out, not 0";
  EXPECT_EQ(json["cores"][0]["executions_completed"], 3);
}

TEST(NeuronctlFormatTest, SessionsTableAndJson) {
  neuronrt::SessionInfo session;
  session.session_id = 7;
  session.owner = {.pid = 1234, .uid = 1000, .gid = 1000};
  session.client_name = "train.py";
  session.cores = {0, 1};
  session.hbm_used_bytes = uint64_t{3} << 30;
  session.stream_count = 2;
  session.commands_completed = 99;
  session.commands_failed = 1;
  const std::string table = SessionsTable({session});
  EXPECT_THAT(table, HasSubstr("SESSION"));
  EXPECT_THAT(table, HasSubstr("train.py"));
  EXPECT_THAT(table, HasSubstr("3 GiB"));
  EXPECT_THAT(table, HasSubstr("0-1"));
  const nlohmann::json json = SessionsJson({session});
  EXPECT_EQ(json["sessions"][0]["pid"], 1234);
  EXPECT_EQ(json["sessions"][0]["commands_completed"], 99);
  EXPECT_EQ(json["sessions"][0]["hbm_used_bytes"], uint64_t{3} << 30);
  EXPECT_EQ(SessionsJson({})["sessions"].size(), 0u);
}

TEST(NeuronctlFormatTest, AClientsNameCannotDriveTheTerminalOrBreakTheTable) {
  EXPECT_EQ(TableCell("train.py"), "train.py");
  EXPECT_EQ(TableCell(""), "-");
  EXPECT_EQ(TableCell("a\nb\x1b[2Jc\x7f"), "a?b?[2Jc?");
  EXPECT_EQ(TableCell(std::string(60, 'x'), 10), "xxxxxxx...");
  neuronrt::SessionInfo session;
  session.client_name = "python -c \nimport torch\x1b]0;pwned\x07";
  EXPECT_THAT(SessionsTable({session}), Not(HasSubstr("\x1b")));
}

TEST(NeuronctlFormatTest, GroupsShowTheirHostsAndOtherHostsRanks) {
  std::vector<neuronrt::CommunicatorInfo> groups = {
      {.name = "c1", .size = 2, .members = {"session 3, pid 10", "session 4, pid 11"},
       .collectives_completed = 5},
      {.name = "c2", .size = 4,
       .members = {"session 3, pid 10", "", "on host 1", "on host 1"},
       .operations_pending = 1, .aborted = "", .hosts = 2, .host = 0}};
  const std::string table = CommunicatorsTable(groups);
  EXPECT_THAT(table, HasSubstr("HOSTS"));
  EXPECT_THAT(table, HasSubstr("2 (this: 0)"));
  EXPECT_THAT(table, HasSubstr("1: (not joined)"));
  EXPECT_THAT(table, HasSubstr("3: on host 1"));
  const nlohmann::json json = CommunicatorsJson(groups);
  EXPECT_EQ(json["groups"][1]["hosts"], 2);
  EXPECT_EQ(json["groups"][1]["host"], 0);
  EXPECT_EQ(json["groups"][0]["hosts"], 1);
}

}  // namespace
}  // namespace neuronctl
