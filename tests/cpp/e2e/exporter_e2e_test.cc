// neuron-rtd-exporter against a live daemon: what sessions do shows up in
// the scrape, the exposition passes promtool, the daemon going away and
// coming back is served as daemon_up 0 then 1, per-core series carry the pod
// a fake kubelet says holds the core, and the shipped alert rules and
// Grafana dashboard use only metrics a scrape has.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "e2e/data_plane_fixture.h"
#include "httplib.h"
#include "nlohmann/json.hpp"
#include "testing/fake_pod_resources.h"
#include "testing/subprocess.h"

namespace neuron {
namespace {

using ::testing::HasSubstr;

// Sample lines by series ("name{labels}") and the metric names a scrape has.
struct Scrape {
  std::map<std::string, double> samples;
  std::set<std::string> names;
  std::set<std::string> label_names;
  std::string text;

  double Value(const std::string& series) const {
    auto found = samples.find(series);
    EXPECT_NE(found, samples.end()) << series << " is not in the scrape:\n" << text;
    return found == samples.end() ? -1 : found->second;
  }
};

// The label names of a series "name{a="x",b="y"}" (values may hold any
// escaped character).
std::vector<std::string> LabelNames(const std::string& series) {
  std::vector<std::string> names;
  size_t at = series.find('{');
  if (at == std::string::npos) return names;
  while (++at < series.size() && series[at] != '}') {
    const size_t equals = series.find('=', at);
    if (equals == std::string::npos) break;
    names.push_back(series.substr(at, equals - at));
    at = equals + 2;  // past `="`
    while (at < series.size() && series[at] != '"') at += series[at] == '\\' ? 2 : 1;
    ++at;  // past the closing quote, onto `,` or `}`
    if (at >= series.size() || series[at] == '}') break;
  }
  return names;
}

Scrape Parse(std::string text) {
  Scrape scrape;
  for (const std::string& line :
       std::vector<std::string>(absl::StrSplit(text, '\n', absl::SkipEmpty()))) {
    if (line.starts_with("#")) continue;
    const size_t space = line.rfind(' ');
    const std::string series = line.substr(0, space);
    scrape.samples[series] = std::stod(line.substr(space + 1));
    scrape.names.insert(series.substr(0, series.find('{')));
    for (std::string& name : LabelNames(series)) scrape.label_names.insert(std::move(name));
  }
  scrape.text = std::move(text);
  return scrape;
}

// promtool, when the test run has one (deploy/dev.sh test sets
// NEURON_PROMTOOL to the binary it took from Debian's prometheus package).
std::optional<std::string> Promtool() {
  const char* promtool = std::getenv("NEURON_PROMTOOL");
  if (promtool == nullptr || *promtool == '\0') {
    std::cerr << "NEURON_PROMTOOL is not set: promtool does not check this test's files\n";
    return std::nullopt;
  }
  return promtool;
}

class ExporterTest : public DataPlaneTest {
 protected:
  void SetUp() override {
    DataPlaneTest::SetUp();
    StartExporter({"--per-session-metrics", "--neuron-monitor-compat", "--label", "cluster=e2e"});
  }

  void StartExporter(std::vector<std::string> flags) {
    std::vector<std::string> argv = {NEURON_RTD_EXPORTER_BINARY, "--address", address(),
                                     "--listen", "127.0.0.1:0"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    auto exporter = testing::Subprocess::Spawn(argv);
    ASSERT_TRUE(exporter.ok()) << exporter.status();
    exporter_ = *std::move(exporter);
    ASSERT_TRUE(exporter_->WaitReady().ok()) << exporter_->Stderr();
    // "neuron-rtd-exporter: serving http://127.0.0.1:PORT/metrics"
    const std::string out = exporter_->Stdout();
    const size_t host = out.find("127.0.0.1:");
    ASSERT_NE(host, std::string::npos) << out;
    port_ = std::atoi(out.c_str() + host + std::strlen("127.0.0.1:"));
    ASSERT_GT(port_, 0) << out;
  }

  httplib::Result Get(const std::string& path) {
    httplib::Client http("127.0.0.1", port_);
    return http.Get(path);
  }

  Scrape ScrapeMetrics() {
    httplib::Result response = Get("/metrics");
    EXPECT_TRUE(response) << "no answer from the exporter";
    if (!response) return {};
    EXPECT_EQ(response->status, 200);
    EXPECT_THAT(response->get_header_value("Content-Type"), HasSubstr("version=0.0.4"));
    return Parse(response->body);
  }

  std::unique_ptr<testing::Subprocess> exporter_;
  int port_ = 0;
};

TEST_F(ExporterTest, WhatSessionsDoIsInTheScrapeAndTheExpositionIsValid) {
  auto session = Open("exported");
  auto stream = *session->CreateStream(1);
  auto buffer = *session->Allocate(1, kMiB);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(stream->Fill(buffer.device_address, 64, i, 1).ok());
  ASSERT_TRUE(stream->Fill(buffer.device_address + kMiB, 8, 0, 1).ok());  // out of bounds
  EXPECT_FALSE(stream->Synchronize().ok());

  const Scrape scrape = ScrapeMetrics();
  const std::string core1 = R"(neuroncore="1",neuron_device_index="0")";
  EXPECT_EQ(scrape.Value("neuron_rtd_daemon_up{cluster=\"e2e\"}"), 1);
  EXPECT_EQ(scrape.Value("neuron_rtd_sessions{cluster=\"e2e\"}"), 1);
  EXPECT_EQ(scrape.Value("neuron_core_commands_total{" + core1 +
                         R"(,kind="fill",outcome="completed",cluster="e2e"})"),
            3);
  EXPECT_EQ(scrape.Value("neuron_core_commands_total{" + core1 +
                         R"(,kind="fill",outcome="failed",cluster="e2e"})"),
            1);
  EXPECT_EQ(scrape.Value("neuron_core_execution_duration_seconds_count{" + core1 +
                         R"(,cluster="e2e"})"),
            4);
  EXPECT_EQ(scrape.Value("neuron_core_execution_duration_seconds_bucket{" + core1 +
                         R"(,cluster="e2e",le="+Inf"})"),
            4);
  EXPECT_EQ(scrape.Value(R"(neuron_device_memory_used_bytes{neuron_device_index="0",category="tensors",cluster="e2e"})"),
            kMiB);
  // The simulator: nothing else in HBM, and no ECC event ever.
  EXPECT_EQ(scrape.Value(R"(neuron_device_memory_used_bytes{neuron_device_index="0",category="runtime",cluster="e2e"})"),
            0);
  EXPECT_EQ(scrape.Value(R"(neuron_device_hw_ecc_events_total{neuron_device_index="0",event_type="mem_ecc_uncorrected",cluster="e2e"})"),
            0);
  EXPECT_EQ(scrape.Value(R"(hardware_ecc_events_total{event_type="sram_ecc_corrected",neuron_device_index="0",cluster="e2e"})"),
            0);
  const std::string session_labels =
      "session_id=\"" + std::to_string(session->id()) + "\",pid=\"" + std::to_string(getpid()) +
      "\",uid=\"" + std::to_string(getuid()) + "\",client=\"exported\"";
  EXPECT_EQ(scrape.Value("neuron_rtd_session_memory_used_bytes{" + session_labels +
                         ",cluster=\"e2e\"}"),
            kMiB);
  EXPECT_TRUE(scrape.names.contains("execution_status_total"));
  EXPECT_TRUE(scrape.names.contains("neuroncore_utilization_ratio"));

  if (std::optional<std::string> promtool = Promtool()) {
    testing::TempDir dir;
    const std::string path = dir.Join("scrape.txt");
    std::ofstream(path) << scrape.text;
    // promtool reads the exposition on its stdin.
    testing::CommandResult checked =
        testing::RunCommand({"/bin/sh", "-c", *promtool + " check metrics < " + path});
    EXPECT_EQ(checked.exit_code, 0) << checked.out << checked.err;
  }
}

TEST_F(ExporterTest, TheDaemonGoingAwayIsServedAsDownUntilItComesBack) {
  EXPECT_EQ(Get("/healthz")->status, 200);
  daemon_.reset();  // SIGKILL
  Scrape down = ScrapeMetrics();
  EXPECT_EQ(down.Value("neuron_rtd_daemon_up{cluster=\"e2e\"}"), 0);
  EXPECT_FALSE(down.names.contains("neuron_core_commands_total"));
  EXPECT_GE(down.Value("neuron_rtd_exporter_scrape_errors_total{cluster=\"e2e\"}"), 1);
  httplib::Result unhealthy = Get("/healthz");
  ASSERT_TRUE(unhealthy);
  EXPECT_EQ(unhealthy->status, 503);
  EXPECT_THAT(unhealthy->body, HasSubstr("rtd.sock"));

  StartDaemon({});
  EXPECT_EQ(ScrapeMetrics().Value("neuron_rtd_daemon_up{cluster=\"e2e\"}"), 1);
  EXPECT_EQ(Get("/healthz")->status, 200);
  ASSERT_TRUE(Admin()->Drain(true).ok());
  EXPECT_EQ(Get("/healthz")->status, 503);
  EXPECT_EQ(ScrapeMetrics().Value(R"(neuron_rtd_state{state="draining",cluster="e2e"})"), 1);
}

TEST_F(ExporterTest, BadFlagsAndATakenPortAreRefusedByNameAndSigtermStopsIt) {
  testing::CommandResult bad_label = testing::RunCommand(
      {NEURON_RTD_EXPORTER_BINARY, "--address", address(), "--label", "neuroncore=1"});
  EXPECT_EQ(bad_label.exit_code, 2);
  EXPECT_THAT(bad_label.err, HasSubstr("label 'neuroncore'"));
  testing::CommandResult bad_listen = testing::RunCommand(
      {NEURON_RTD_EXPORTER_BINARY, "--address", address(), "--listen", "nowhere"});
  EXPECT_EQ(bad_listen.exit_code, 2);
  EXPECT_THAT(bad_listen.err, HasSubstr("not HOST:PORT"));
  testing::CommandResult taken =
      testing::RunCommand({NEURON_RTD_EXPORTER_BINARY, "--address", address(), "--listen",
                           "127.0.0.1:" + std::to_string(port_)});
  EXPECT_EQ(taken.exit_code, 2);
  EXPECT_THAT(taken.err, HasSubstr("cannot listen on 127.0.0.1:" + std::to_string(port_)));

  exporter_->Signal(SIGTERM);
  absl::StatusOr<int> exited = exporter_->Wait();
  ASSERT_TRUE(exited.ok()) << exited.status();
  EXPECT_EQ(*exited, 0);
}

TEST_F(ExporterTest, PerCoreSeriesCarryThePodTheKubeletSaysHoldsTheCore) {
  const std::string socket = dir_.Join("pod-resources.sock");
  std::unique_ptr<testing::FakePodResources> kubelet = testing::FakePodResources::Serve(socket);
  ASSERT_NE(kubelet, nullptr);
  kubelet->SetContainers({{.pod = "train-0", .pod_namespace = "ml", .container = "worker",
                           .device_ids = {"nc-1"}},
                          // Another plugin's resource and IDs that are not ours: not our cores.
                          {.pod = "other", .resource_name = "example.com/gpu",
                           .device_ids = {"nc-0"}},
                          {.pod = "odd", .device_ids = {"gpu-0"}}});
  exporter_->Signal(SIGTERM);
  ASSERT_TRUE(exporter_->Wait().ok());
  StartExporter({"--pod-resources-socket", socket});

  const std::string core1 =
      R"(neuroncore="1",neuron_device_index="0",pod="train-0",namespace="ml",container="worker")";
  Scrape scrape = ScrapeMetrics();
  EXPECT_EQ(scrape.Value("neuron_core_healthy{" + core1 + "}"), 1);
  EXPECT_EQ(scrape.Value(R"(neuron_core_healthy{neuroncore="0",neuron_device_index="0"})"), 1);
  EXPECT_EQ(scrape.Value("neuron_rtd_exporter_pod_resources_errors_total"), 0);
  EXPECT_THAT(scrape.text, ::testing::Not(HasSubstr("other")));

  // The pod moves to core 0.
  kubelet->SetContainers({{.pod = "train-1", .pod_namespace = "ml", .container = "worker",
                           .device_ids = {"nc-0"}}});
  scrape = ScrapeMetrics();
  EXPECT_EQ(scrape.Value(R"(neuron_core_healthy{neuroncore="0",neuron_device_index="0",pod="train-1",namespace="ml",container="worker"})"),
            1);
  EXPECT_EQ(scrape.Value(R"(neuron_core_healthy{neuroncore="1",neuron_device_index="0"})"), 1);

  // The kubelet going away: the last answer stands, and the failure counts.
  kubelet->Stop();
  scrape = ScrapeMetrics();
  EXPECT_EQ(scrape.Value(R"(neuron_core_healthy{neuroncore="0",neuron_device_index="0",pod="train-1",namespace="ml",container="worker"})"),
            1);
  EXPECT_GE(scrape.Value("neuron_rtd_exporter_pod_resources_errors_total"), 1);
  EXPECT_EQ(scrape.Value("neuron_rtd_daemon_up"), 1);
}

TEST_F(ExporterTest, APodHoldingAWholeDeviceLabelsEveryCoreOfIt) {
  const std::string socket = dir_.Join("pod-resources.sock");
  std::unique_ptr<testing::FakePodResources> kubelet = testing::FakePodResources::Serve(socket);
  ASSERT_NE(kubelet, nullptr);
  kubelet->SetContainers({{.pod = "train-0", .pod_namespace = "ml", .container = "worker",
                           .resource_name = "aws.amazon.com/neuron", .device_ids = {"nd-0"}},
                          // A device this host does not have.
                          {.pod = "elsewhere", .resource_name = "aws.amazon.com/neuron",
                           .device_ids = {"nd-7"}}});
  exporter_->Signal(SIGTERM);
  ASSERT_TRUE(exporter_->Wait().ok());
  StartExporter({"--pod-resources-socket", socket});
  Scrape scrape = ScrapeMetrics();
  EXPECT_EQ(scrape.Value(R"(neuron_core_healthy{neuroncore="0",neuron_device_index="0"})"), 1)
      << "without --device-resource-name the exporter does not know the resource";

  exporter_->Signal(SIGTERM);
  ASSERT_TRUE(exporter_->Wait().ok());
  StartExporter({"--pod-resources-socket", socket, "--device-resource-name",
                 "aws.amazon.com/neuron"});
  scrape = ScrapeMetrics();
  for (const char* core : {"0", "1"}) {
    EXPECT_EQ(scrape.Value(absl::StrFormat(
                  R"(neuron_core_healthy{neuroncore="%s",neuron_device_index="0",pod="train-0",namespace="ml",container="worker"})",
                  core)),
              1)
        << core;
  }
  EXPECT_THAT(scrape.text, ::testing::Not(HasSubstr("elsewhere")));
}

// The metric names PromQL expressions use (histogram series by their
// family).
std::set<std::string> MetricNamesIn(const std::string& text) {
  std::set<std::string> names;
  auto word_char = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (size_t at = 0; at < text.size();) {
    if (!word_char(text[at])) {
      ++at;
      continue;
    }
    size_t end = at;
    while (end < text.size() && word_char(text[end])) ++end;
    std::string word = text.substr(at, end - at);
    at = end;
    if (!word.starts_with("neuron_") && !word.starts_with("neuroncore_") &&
        !word.starts_with("execution_")) {
      continue;
    }
    for (const char* suffix : {"_bucket", "_count", "_sum"}) {
      if (word.ends_with(suffix) && word.starts_with("neuron_core_execution_duration")) {
        word.resize(word.size() - std::string_view(suffix).size());
      }
    }
    names.insert(word);
  }
  return names;
}

std::string ReadSource(const std::string& relative) {
  std::ifstream file(std::string(NEURON_SOURCE_DIR) + "/" + relative);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

TEST_F(ExporterTest, TheShippedRulesAndDashboardUseOnlyMetricsTheExporterServes) {
  const Scrape scrape = ScrapeMetrics();
  const std::string rules = ReadSource("deploy/prometheus/neuron-rtd.rules.yml");
  ASSERT_FALSE(rules.empty());
  const nlohmann::json dashboard =
      nlohmann::json::parse(ReadSource("deploy/grafana/neuron-rtd.json"));
  std::string queries;
  for (const nlohmann::json& panel : dashboard["panels"]) {
    for (const nlohmann::json& target : panel.value("targets", nlohmann::json::array())) {
      queries += target["expr"].get<std::string>() + "\n";
    }
  }
  for (const nlohmann::json& variable : dashboard["templating"]["list"]) {
    queries += variable.value("definition", "") + "\n";
  }
  EXPECT_EQ(dashboard["uid"], "neuron-rtd");
  for (const std::string& name : MetricNamesIn(rules + queries)) {
    if (scrape.label_names.contains(name)) continue;  // in a `by (...)`
    EXPECT_TRUE(scrape.names.contains(name) ||
                scrape.names.contains(name + "_bucket"))
        << name << " is used by the rules or the dashboard, and no scrape has it";
  }
  if (std::optional<std::string> promtool = Promtool()) {
    testing::CommandResult checked = testing::RunCommand(
        {*promtool, "check", "rules",
         std::string(NEURON_SOURCE_DIR) + "/deploy/prometheus/neuron-rtd.rules.yml"});
    EXPECT_EQ(checked.exit_code, 0) << checked.out << checked.err;
  }
}

}  // namespace
}  // namespace neuron
