// neuron-rtd-exporter's families from fixed snapshots (a golden exposition),
// its neuron-monitor compatibility set, its settings, and what it serves
// when the daemon cannot be reached.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "client/exporter/daemon_snapshot.h"
#include "client/exporter/exporter.h"
#include "client/exporter/exporter_config.h"
#include "client/exporter/metric_families.h"
#include "client/exporter/neuron_monitor_compat.h"
#include "prometheus/text_serializer.h"
#include "testing/temp_dir.h"

namespace neuron_exporter {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::vector<uint64_t> Log2Buckets(std::map<size_t, uint64_t> counts) {
  std::vector<uint64_t> buckets(64, 0);
  for (const auto& [bucket, count] : counts) buckets[bucket] = count;
  return buckets;
}

// Two devices of two cores, one failed; two sessions; a cache, a compiler
// and collectives.
DaemonSnapshot Snapshot() {
  DaemonSnapshot snapshot;
  snapshot.health = {.state = "serving", .daemon_version = "0.1.0", .backend = "hardware"};
  snapshot.health.failed_cores[3] = "NRT_EXEC_UNIT_UNRECOVERABLE";
  for (uint32_t device = 0; device < 2; ++device) {
    neuronrt::DeviceInfo info{.index = device,
                              .instance_type = "trn2.48xlarge",
                              .architecture = "trainium2",
                              .backend = "hardware",
                              .logical_nc_config = 2,
                              .cores = {2 * device, 2 * device + 1},
                              .hbm_total_bytes = uint64_t{96} << 30,
                              .bus_id = "0000:10:1" + std::to_string(device) + ".0"};
    snapshot.devices.push_back(info);
    snapshot.stats.devices.push_back({.device_index = device,
                                      .tensors_bytes = (uint64_t{24} << 30) * (1 - device),
                                      .hbm_total_bytes = uint64_t{96} << 30,
                                      .hbm_largest_free_bytes = uint64_t{70} << 30,
                                      .hbm_segments = 12 * (1 - device)});
  }
  for (uint32_t core = 0; core < 4; ++core) {
    neuronrt::CoreStats stats{.core = core};
    if (core == 0) {
      stats.recent_compute_utilization = 0.5;
      stats.compute_busy_ns = 3'000'000'000;
      stats.dma_busy_ns = 500'000'000;
      // 100 under 1 us (bucket 9: 256-511 ns), 50 of 1-2 us, 10 of 0.5-1 s.
      stats.execution_ns_log2_buckets = Log2Buckets({{9, 100}, {11, 50}, {30, 10}});
      stats.execution_ns_sum = 10 * 700'000'000ull + 50 * 1'500 + 100 * 300;
      stats.commands = {{.kind = "launch", .outcome = "completed", .count = 140},
                        {.kind = "launch", .outcome = "rejected", .count = 2},
                        {.kind = "launch", .outcome = "failed", .count = 1},
                        {.kind = "copy", .outcome = "completed", .count = 17},
                        {.kind = "signal", .outcome = "abandoned", .count = 3}};
      stats.queued_commands = 7;
      stats.host_executed_launches = 5;
    } else {
      stats.execution_ns_log2_buckets = Log2Buckets({});
    }
    snapshot.stats.cores.push_back(stats);
  }
  neuronrt::DaemonStats& daemon = snapshot.stats.daemon;
  daemon = {.version = "0.1.0",
            .backend = "hardware",
            .state = "serving",
            .start_time_unix_ms = 1'796'371'200'500,
            .sessions_opened = 9,
            .sessions_live = 2,
            .sessions_ended = {{"closed", 4}, {"client_died", 2}, {"killed", 1}},
            .communicators_live = 1,
            .collectives = {{.kind = "all_reduce", .outcome = "completed", .count = 30,
                             .bytes = 1 << 20},
                            {.kind = "all_reduce", .outcome = "failed", .count = 1}},
            .cpu_user_seconds = 12.5,
            .cpu_system_seconds = 2.25,
            .resident_memory_bytes = 300 << 20};
  daemon.executables = {.entries = 40, .memory_bytes = 4 << 20, .held_bytes = 1 << 20,
                        .hits = 1000, .misses = 40, .evictions = 3, .max_bytes = 1 << 30};
  daemon.executables.compiler = {.enabled = true, .builds = 4, .failures = 1, .disk_hits = 2,
                                 .queued = 1, .build_seconds = 80, .disk_bytes = 5 << 20};
  snapshot.sessions = {
      {.session_id = 7, .owner = {.pid = 700, .uid = 1000}, .client_name = "train \"a\".py",
       .cores = {0, 1}, .hbm_used_bytes = uint64_t{24} << 30, .commands_completed = 160,
       .commands_failed = 3, .device_time_ns = 3'500'000'000, .recent_core_share = 0.5,
       .queued_commands = 7},
      {.session_id = 8, .owner = {.pid = 800, .uid = 1001}, .client_name = "notebook",
       .cores = {2}},
  };
  return snapshot;
}

std::string Render(const DaemonSnapshot& snapshot, bool per_session, bool compat) {
  Families families(Labels{{"cluster", "c1"}});
  AddDaemonFamilies(snapshot, FamilyOptions{.per_session = per_session}, families);
  if (compat) {
    AddNeuronMonitorFamilies(snapshot, {.monotonic_seconds = 20, .user_seconds = 12.5,
                                        .system_seconds = 2.25},
                             CpuSample{.monotonic_seconds = 10, .user_seconds = 10.5,
                                       .system_seconds = 2.0},
                             4, families);
  }
  return prometheus::TextSerializer().Serialize(std::move(families).Take());
}

TEST(ExporterFamiliesTest, TheExpositionOfAFixedSnapshotMatchesTheGoldenFile) {
  const std::string rendered = Render(Snapshot(), /*per_session=*/true, /*compat=*/true);
  const std::string golden_path = NEURON_EXPORTER_GOLDEN;
  if (std::getenv("NEURON_UPDATE_GOLDEN") != nullptr) {
    std::ofstream(golden_path) << rendered;
  }
  std::ifstream golden(golden_path);
  ASSERT_TRUE(golden.good()) << golden_path;
  std::stringstream expected;
  expected << golden.rdbuf();
  EXPECT_EQ(rendered, expected.str())
      << "rerun with NEURON_UPDATE_GOLDEN=1 to accept the new exposition";
}

TEST(ExporterFamiliesTest, TheLog2HistogramBecomesCumulativePowerOfTwoBuckets) {
  const HistogramSample histogram = ExecutionDurationHistogram(Snapshot().stats.cores[0]);
  EXPECT_EQ(histogram.count, 160u);
  EXPECT_NEAR(histogram.sum, 7.000105, 1e-9);
  ASSERT_EQ(histogram.buckets.size(), 14u);  // 2^10 .. 2^34 ns by 4x, then +Inf
  EXPECT_DOUBLE_EQ(histogram.buckets[0].first, 1024e-9);
  EXPECT_EQ(histogram.buckets[0].second, 100u);  // under 2^10 ns
  EXPECT_EQ(histogram.buckets[1].second, 150u);  // under 2^12 ns
  EXPECT_EQ(histogram.buckets[9].second, 150u);  // under 2^28 ns
  EXPECT_EQ(histogram.buckets[10].second, 160u);  // under 2^30 ns
  EXPECT_TRUE(std::isinf(histogram.buckets.back().first));
  EXPECT_EQ(histogram.buckets.back().second, 160u);
}

TEST(ExporterFamiliesTest, PerSessionSeriesOnlyWhenAskedFor) {
  const std::string without = Render(Snapshot(), /*per_session=*/false, /*compat=*/false);
  EXPECT_THAT(without, Not(HasSubstr("neuron_rtd_session_")));
  EXPECT_THAT(without, Not(HasSubstr("execution_status_total")));
  const std::string with = Render(Snapshot(), /*per_session=*/true, /*compat=*/false);
  // Label values are escaped, as the text format requires.
  EXPECT_THAT(with, HasSubstr(R"(client="train \"a\".py")"));
}

TEST(ExporterFamiliesTest, ACoreAPodHoldsCarriesThePodOnEveryPerCoreSeries) {
  DaemonSnapshot snapshot = Snapshot();
  snapshot.core_holders[1] = {.pod = "train-0", .pod_namespace = "ml", .container = "worker"};
  const std::string text = Render(snapshot, /*per_session=*/false, /*compat=*/false);
  const std::string held =
      R"(neuroncore="1",neuron_device_index="0",pod="train-0",namespace="ml",container="worker")";
  for (const char* family :
       {"neuron_core_busy_seconds_total{", "neuron_core_utilization_ratio{",
        "neuron_core_commands_total{", "neuron_core_execution_duration_seconds_bucket{",
        "neuron_core_queued_commands{", "neuron_core_host_executed_launches_total{",
        "neuron_core_healthy{"}) {
    EXPECT_THAT(text, HasSubstr(family + held)) << family;
  }
  // Cores no pod holds have no pod labels; device series never do.
  EXPECT_THAT(text, HasSubstr(R"(neuron_core_healthy{neuroncore="0",neuron_device_index="0",cluster="c1"} 1)"));
  EXPECT_THAT(text, Not(HasSubstr(R"(neuron_device_memory_total_bytes{neuron_device_index="0",pod)")));
  EXPECT_EQ(text.find(R"(pod=")"), text.find(R"(pod="train-0")"));

  // neuron-monitor's per-core family too.
  const std::string compat = Render(snapshot, /*per_session=*/false, /*compat=*/true);
  EXPECT_THAT(compat, HasSubstr(R"(neuroncore_utilization_ratio{neuroncore="1",runtime_tag="neuron-rtd",pod="train-0",namespace="ml",container="worker")"));
  EXPECT_THAT(compat, HasSubstr(R"(neuroncore_utilization_ratio{neuroncore="0",runtime_tag="neuron-rtd",cluster="c1"})"));
}

TEST(ExporterFamiliesTest, RuntimeMemoryAndEccCountsAreServedWhereTheDeviceReportsThem) {
  DaemonSnapshot snapshot = Snapshot();
  snapshot.stats.devices[0].runtime_bytes = uint64_t{3} << 30;
  snapshot.stats.devices[0].ecc = {.mem_corrected = 7, .mem_uncorrected = 1,
                                   .sram_uncorrected = 0};
  const std::string text = Render(snapshot, /*per_session=*/false, /*compat=*/true);
  EXPECT_THAT(text, HasSubstr(R"(neuron_device_memory_used_bytes{neuron_device_index="0",category="runtime",cluster="c1"} 3221225472)"));
  EXPECT_THAT(text, HasSubstr(R"(neuron_device_hw_ecc_events_total{neuron_device_index="0",event_type="mem_ecc_corrected",cluster="c1"} 7)"));
  EXPECT_THAT(text, HasSubstr(R"(neuron_device_hw_ecc_events_total{neuron_device_index="0",event_type="mem_ecc_uncorrected",cluster="c1"} 1)"));
  EXPECT_THAT(text, HasSubstr(R"(neuron_device_hw_ecc_events_total{neuron_device_index="0",event_type="sram_ecc_uncorrected",cluster="c1"} 0)"));
  EXPECT_THAT(text, HasSubstr(R"(hardware_ecc_events_total{event_type="mem_ecc_uncorrected",neuron_device_index="0",cluster="c1"} 1)"));
  // 24 GiB of tensors and 3 GiB the runtime holds.
  EXPECT_THAT(text, HasSubstr(R"(neuron_runtime_memory_used_bytes{memory_location="neuron_device",runtime_tag="neuron-rtd",cluster="c1"} 28991029248)"));
  // What a device does not report is not served as 0.
  EXPECT_THAT(text, Not(HasSubstr("sram_ecc_corrected")));
  EXPECT_THAT(text, Not(HasSubstr(R"(neuron_device_index="1",category="runtime")")));
  EXPECT_THAT(text, Not(HasSubstr(R"(ecc_events_total{neuron_device_index="1")")));
}

TEST(ExporterFamiliesTest, ProgramsMemoryIsServedByPartWhereTheDriverTellsItApart) {
  DaemonSnapshot snapshot = Snapshot();
  snapshot.stats.devices[0].runtime_bytes = 1000;
  snapshot.stats.devices[0].programs = {.model_code = 300, .constants = 20, .scratchpad = 4};
  const std::string text = Render(snapshot, /*per_session=*/false, /*compat=*/true);
  EXPECT_THAT(text, HasSubstr(R"(neuron_device_memory_used_bytes{neuron_device_index="0",category="model_code",cluster="c1"} 300)"));
  EXPECT_THAT(text, HasSubstr(R"(neuron_device_memory_used_bytes{neuron_device_index="0",category="constants",cluster="c1"} 20)"));
  EXPECT_THAT(text, HasSubstr(R"(neuron_device_memory_used_bytes{neuron_device_index="0",category="scratchpad",cluster="c1"} 4)"));
  // neuron-monitor's device total counts them: 24 GiB of tensors + 1324.
  EXPECT_THAT(text, HasSubstr(R"(neuron_runtime_memory_used_bytes{memory_location="neuron_device",runtime_tag="neuron-rtd",cluster="c1"} 25769805100)"));
  EXPECT_THAT(text, Not(HasSubstr(R"(neuron_device_index="1",category="model_code")")));
}

TEST(ExporterFamiliesTest, NeuronMonitorsPerCoreMemoryIsServedWhereTheRuntimeAccountsIt) {
  DaemonSnapshot snapshot = Snapshot();
  EXPECT_THAT(Render(snapshot, /*per_session=*/false, /*compat=*/true),
              Not(HasSubstr("neuroncore_memory_usage")));
  snapshot.stats.devices[0].core_memory = {
      {.core = 0, .tensors = 5, .model_code = 4, .constants = 3, .scratchpad = 2, .runtime = 1},
      {.core = 1, .tensors = 50}};
  snapshot.core_holders[1] = {.pod = "train-0", .pod_namespace = "ml", .container = "worker"};
  const std::string text = Render(snapshot, /*per_session=*/false, /*compat=*/true);
  EXPECT_THAT(text, HasSubstr(R"(neuroncore_memory_usage_tensors{neuroncore="0",memory_location="None",runtime_tag="neuron-rtd",cluster="c1"} 5)"));
  EXPECT_THAT(text, HasSubstr(R"(neuroncore_memory_usage_model_code{neuroncore="0",memory_location="None",runtime_tag="neuron-rtd",cluster="c1"} 4)"));
  EXPECT_THAT(text, HasSubstr(R"(neuroncore_memory_usage_constants{neuroncore="0",memory_location="None",runtime_tag="neuron-rtd",cluster="c1"} 3)"));
  EXPECT_THAT(text, HasSubstr(R"(neuroncore_memory_usage_model_shared_scratchpad{neuroncore="0",memory_location="None",runtime_tag="neuron-rtd",cluster="c1"} 2)"));
  EXPECT_THAT(text, HasSubstr(R"(neuroncore_memory_usage_runtime_memory{neuroncore="0",memory_location="None",runtime_tag="neuron-rtd",cluster="c1"} 1)"));
  EXPECT_THAT(text, HasSubstr(R"(neuroncore_memory_usage_tensors{neuroncore="1",memory_location="None",runtime_tag="neuron-rtd",pod="train-0",namespace="ml",container="worker",cluster="c1"} 50)"));
  // Only in the compatibility set.
  EXPECT_THAT(Render(snapshot, /*per_session=*/false, /*compat=*/false),
              Not(HasSubstr("neuroncore_memory_usage")));
}

TEST(ExporterFamiliesTest, NeuronMonitorNamesMapLaunchesAndTheRuntimesCpu) {
  const std::string text = Render(Snapshot(), /*per_session=*/false, /*compat=*/true);
  EXPECT_THAT(text, HasSubstr(R"(execution_status_total{status_type="completed",runtime_tag="neuron-rtd",cluster="c1"} 140)"));
  EXPECT_THAT(text, HasSubstr(R"(execution_status_total{status_type="incorrect_input",runtime_tag="neuron-rtd",cluster="c1"} 2)"));
  EXPECT_THAT(text, HasSubstr(R"(execution_errors_total{error_type="hardware",runtime_tag="neuron-rtd",cluster="c1"} 1)"));
  // 2 s of user time over 10 s of 4 vCPUs.
  EXPECT_THAT(text, HasSubstr(R"(neuron_runtime_vcpu_usage_ratio{usage_type="user",runtime_tag="neuron-rtd",cluster="c1"} 0.05)"));
  // p50 of 160 times: the 80th is under 2^9 ns; p99 in the 2^30 bucket.
  EXPECT_THAT(text, HasSubstr(R"(execution_latency_seconds{percentile="p50",runtime_tag="neuron-rtd",cluster="c1"} 5.12e-07)"));
  EXPECT_THAT(text, HasSubstr(R"(execution_latency_seconds{percentile="p99",runtime_tag="neuron-rtd",cluster="c1"} 1.073741824)"));
  EXPECT_THAT(text, HasSubstr(R"(neuroncore_utilization_ratio{neuroncore="0",runtime_tag="neuron-rtd",cluster="c1"} 0.5)"));
}

TEST(ExporterConfigTest, ReadsTheExporterTableAndNamesWhatIsWrong) {
  neuron::testing::TempDir dir;
  const std::string path = dir.Join("exporter.toml");
  std::ofstream(path) << "[exporter]\naddress = \"unix:/run/x.sock\"\nlisten = \"[::1]:9000\"\n"
                         "neuron_monitor_compat = true\nper_session_metrics = true\n"
                         "daemon_timeout_ms = 2500\n"
                         "pod_resources_socket = \"/var/lib/kubelet/pod-resources/kubelet.sock\"\n"
                         "resource_name = \"example.com/nc\"\n"
                         "device_resource_name = \"example.com/nd\"\n"
                         "[exporter.labels]\ncluster = \"prod\"\n";
  absl::StatusOr<ExporterOptions> options = LoadExporterConfig(path, {});
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->address, "unix:/run/x.sock");
  EXPECT_TRUE(options->neuron_monitor_compat);
  EXPECT_TRUE(options->per_session);
  EXPECT_EQ(options->daemon_timeout, absl::Milliseconds(2500));
  EXPECT_EQ(options->pod_resources_socket, "/var/lib/kubelet/pod-resources/kubelet.sock");
  EXPECT_EQ(options->resource_name, "example.com/nc");
  EXPECT_EQ(options->device_resource_name, "example.com/nd");
  EXPECT_EQ(options->labels, (Labels{{"cluster", "prod"}}));
  absl::StatusOr<ListenAddress> listen = ParseListenAddress(options->listen);
  ASSERT_TRUE(listen.ok());
  EXPECT_EQ(listen->host, "::1");
  EXPECT_EQ(listen->port, 9000);

  std::ofstream(path) << "[exporter]\nlisten_on = \"x\"\n";
  EXPECT_THAT(LoadExporterConfig(path, {}).status().message(), HasSubstr("listen_on"));
  std::ofstream(path) << "[exporter]\nper_session_metrics = \"yes\"\n";
  EXPECT_THAT(LoadExporterConfig(path, {}).status().message(),
              HasSubstr("per_session_metrics: expected true or false"));
  std::ofstream(path) << "[exporter]\nlisten = \"localhost\"\n";
  EXPECT_THAT(LoadExporterConfig(path, {}).status().message(), HasSubstr("not HOST:PORT"));
  std::ofstream(path) << "[exporter]\nresource_name = \"\"\n";
  EXPECT_THAT(LoadExporterConfig(path, {}).status().message(), HasSubstr("resource_name: is empty"));
  std::ofstream(path) << "[exporter\n";
  EXPECT_THAT(LoadExporterConfig(path, {}).status().message(), HasSubstr(path + ":1:"));
  std::ofstream(path) << "[daemon]\nx = 1\n";
  EXPECT_THAT(LoadExporterConfig(path, {}).status().message(), HasSubstr("unknown table [daemon]"));
}

TEST(ExporterConfigTest, TheShippedConfigLoadsWithTheDefaults) {
  absl::StatusOr<ExporterOptions> shipped =
      LoadExporterConfig(std::string(NEURON_SOURCE_DIR) + "/deploy/neuron-rtd-exporter.toml", {});
  ASSERT_TRUE(shipped.ok()) << shipped.status();
  const ExporterOptions defaults;
  EXPECT_EQ(shipped->listen, defaults.listen);
  EXPECT_EQ(shipped->pod_resources_socket, defaults.pod_resources_socket);
  EXPECT_EQ(shipped->resource_name, defaults.resource_name);
  EXPECT_EQ(shipped->device_resource_name, defaults.device_resource_name);
  EXPECT_EQ(shipped->daemon_timeout, defaults.daemon_timeout);
}

TEST(ExporterConfigTest, ConstantLabelsMustBeValidAndNotTheExportersOwn) {
  Labels labels;
  EXPECT_TRUE(AddConstantLabel("region=us-east-2", labels).ok());
  EXPECT_TRUE(AddConstantLabel("empty=", labels).ok());
  EXPECT_EQ(labels, (Labels{{"region", "us-east-2"}, {"empty", ""}}));
  EXPECT_THAT(AddConstantLabel("region=x", labels).message(), HasSubstr("given twice"));
  EXPECT_THAT(AddConstantLabel("neuroncore=1", labels).message(), HasSubstr("own series"));
  EXPECT_THAT(AddConstantLabel("pod=x", labels).message(), HasSubstr("own series"));
  EXPECT_THAT(AddConstantLabel("1abc=1", labels).message(), HasSubstr("not a Prometheus label"));
  EXPECT_THAT(AddConstantLabel("__name__=1", labels).message(), HasSubstr("not a Prometheus"));
  EXPECT_THAT(AddConstantLabel("novalue", labels).message(), HasSubstr("NAME=VALUE"));
  EXPECT_FALSE(ParseListenAddress("host:70000").ok());
  EXPECT_FALSE(ParseListenAddress(":80").ok());
}

TEST(ExporterTest, AnUnreachableDaemonIsServedAsDownAndUnhealthy) {
  neuron::testing::TempDir dir;
  Exporter exporter({.address = "unix:" + dir.Join("none.sock")});
  const std::string first = exporter.Scrape();
  EXPECT_THAT(first, HasSubstr("neuron_rtd_daemon_up 0"));
  EXPECT_THAT(first, HasSubstr("neuron_rtd_exporter_scrape_errors_total 1"));
  EXPECT_THAT(first, Not(HasSubstr("neuron_core_")));
  EXPECT_THAT(exporter.Scrape(), HasSubstr("neuron_rtd_exporter_scrape_errors_total 2"));
  absl::Status health = exporter.Health();
  EXPECT_EQ(health.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(health.message(), HasSubstr("none.sock"));
}

}  // namespace
}  // namespace neuron_exporter
