// Administering a daemon whose sessions are in use, through neuronctl:
// killing a session, statistics, draining, resetting a device, and other
// users refused all of these.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <pty.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "e2e/data_plane_fixture.h"
#include "e2e/raw_session.h"
#include "neuronrt/client.h"
#include "neuronrt/session.h"
#include "nlohmann/json.hpp"
#include "testing/subprocess.h"

namespace neuron {
namespace {

using ::testing::HasSubstr;

TEST_F(DataPlaneTest, NeuronctlKillEndsTheSessionAndItsClientSeesWhy) {
  auto session = Open("doomed");
  auto buffer = *session->Allocate(0, kMiB);
  auto stream = *session->CreateStream(0);
  testing::CommandResult killed = testing::RunCommand(
      {testing::NeuronctlBinary(), "--address", address(), "kill", std::to_string(session->id()),
       "--reason", "maintenance"});
  ASSERT_EQ(killed.exit_code, 0) << killed.err;
  absl::Status status = stream->Fill(buffer.device_address, 8, 0, 1).status();
  if (status.ok()) status = stream->Synchronize();
  EXPECT_EQ(status.code(), absl::StatusCode::kAborted) << status;
  EXPECT_THAT(status.message(), HasSubstr("was closed by neuron-rtd"));
  // A control call made afterwards says the same, then what the daemon
  // answered.
  absl::Status allocated = session->Allocate(0, kMiB).status();
  EXPECT_EQ(allocated.code(), absl::StatusCode::kAborted) << allocated;
  EXPECT_THAT(allocated.message(), HasSubstr("was closed by neuron-rtd"));
  EXPECT_THAT(allocated.message(), HasSubstr("no session"));
  EXPECT_EQ(HbmUsed(), 0u);
  testing::CommandResult again = testing::RunCommand(
      {testing::NeuronctlBinary(), "--address", address(), "kill", std::to_string(session->id())});
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_THAT(again.err, HasSubstr("no session"));
}

TEST_F(DataPlaneTest, StatsCountEveryCoresCommands) {
  auto session = Open();
  auto buffer = *session->Allocate(1, kMiB);
  auto stream = *session->CreateStream(1);
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(stream->Fill(buffer.device_address, 64, i, 1).ok());
  ASSERT_TRUE(stream->Fill(buffer.device_address + kMiB, 8, 0, 1).ok());
  EXPECT_FALSE(stream->Synchronize().ok());
  testing::CommandResult stats = testing::RunCommand(
      {testing::NeuronctlBinary(), "--address", address(), "stats", "--json"});
  ASSERT_EQ(stats.exit_code, 0) << stats.err;
  const nlohmann::json cores = nlohmann::json::parse(stats.out)["cores"];
  ASSERT_EQ(cores.size(), 2u);
  EXPECT_EQ(cores[0]["executions_completed"], 0);
  EXPECT_EQ(cores[1]["executions_completed"], 10);
  EXPECT_EQ(cores[1]["executions_failed"], 1);
  EXPECT_GT(cores[1]["latency_max_ns"].get<uint64_t>(), 0u);
  EXPECT_GE(cores[1]["latency_max_ns"].get<uint64_t>(), cores[1]["latency_p50_ns"].get<uint64_t>());
  EXPECT_EQ(cores[0]["recent_compute_utilization"], 0.0);
  // The session's MiB on device 0, which the sim knows to the byte.
  const nlohmann::json devices = nlohmann::json::parse(stats.out)["devices"];
  ASSERT_EQ(devices.size(), 1u);
  EXPECT_GE(devices[0]["tensors_bytes"].get<uint64_t>(), kMiB);
  EXPECT_EQ(devices[0]["runtime_bytes"], 0);
  EXPECT_EQ(devices[0]["ecc"]["mem_uncorrected"], 0);
  testing::CommandResult table =
      testing::RunCommand({testing::NeuronctlBinary(), "--address", address(), "stats"});
  EXPECT_THAT(table.out, HasSubstr("UTIL"));
  EXPECT_THAT(table.out, HasSubstr("NOW"));
  EXPECT_THAT(table.out, HasSubstr("TENSORS"));
}

TEST_F(DataPlaneTest, StatsCountSessionsByHowTheyEndedCommandsByKindAndTheDaemonProcess) {
  auto client = neuronrt::Client::Connect({.address = address()});
  ASSERT_TRUE(client.ok()) << client.status();
  auto closed = Open("closed");
  auto stream = *closed->CreateStream(0);
  auto buffer = *closed->Allocate(0, kMiB);
  std::vector<uint8_t> host(kMiB, 7);
  ASSERT_TRUE(stream->CopyToDevice(buffer.device_address, host.data(), host.size()).ok());
  ASSERT_TRUE(stream->Fill(buffer.device_address, 64, 1, 1).ok());
  ASSERT_TRUE(stream->Synchronize().ok());
  ASSERT_TRUE(closed->Close().ok());
  auto killed = Open("killed");
  ASSERT_TRUE((*client)->KillSession(killed->id(), "test").ok());
  {
    auto died = testing::RawSession::Open(address());
    ASSERT_TRUE(died.ok()) << died.status();
  }  // its connections end without CloseSession
  absl::StatusOr<neuronrt::Stats> stats;
  for (const absl::Time until = absl::Now() + absl::Seconds(30); absl::Now() < until;) {
    stats = (*client)->GetStats();
    ASSERT_TRUE(stats.ok()) << stats.status();
    if (stats->daemon.sessions_ended["client_died"] == 1) break;
    absl::SleepFor(absl::Milliseconds(5));
  }
  const neuronrt::DaemonStats& daemon = stats->daemon;
  EXPECT_EQ(daemon.sessions_opened, 3u);
  EXPECT_EQ(daemon.sessions_live, 0u);
  EXPECT_EQ(daemon.sessions_ended.at("closed"), 1u);
  EXPECT_EQ(daemon.sessions_ended.at("killed"), 1u);
  EXPECT_EQ(daemon.sessions_ended.at("client_died"), 1u);
  EXPECT_EQ(daemon.sessions_ended.at("device_reset"), 0u);
  EXPECT_EQ(daemon.state, "serving");
  EXPECT_EQ(daemon.backend, "sim");
  EXPECT_FALSE(daemon.version.empty());
  EXPECT_GT(daemon.resident_memory_bytes, 0u);
  EXPECT_GT(daemon.cpu_user_seconds + daemon.cpu_system_seconds, 0.0);
  EXPECT_GT(daemon.start_time_unix_ms, 0u);

  const neuronrt::CoreStats& core = stats->cores.at(0);
  const auto count = [&](std::string_view kind) -> uint64_t {
    for (const neuronrt::CommandCount& each : core.commands) {
      if (each.kind == kind && each.outcome == "completed") return each.count;
    }
    return 0;
  };
  EXPECT_EQ(count("copy"), 1u);
  EXPECT_EQ(count("fill"), 1u);
  EXPECT_GT(core.dma_busy_ns, 0u);
  EXPECT_EQ(core.compute_busy_ns + core.dma_busy_ns, core.busy_ns);
  ASSERT_EQ(core.execution_ns_log2_buckets.size(), 64u);
  uint64_t executions = 0;
  for (uint64_t bucket : core.execution_ns_log2_buckets) executions += bucket;
  EXPECT_EQ(executions, core.executions_completed + core.executions_failed);
  ASSERT_EQ(stats->devices.size(), 1u);
  EXPECT_GT(stats->devices[0].hbm_total_bytes, 0u);
  EXPECT_EQ(stats->devices[0].tensors_bytes, 0u);
}

TEST_F(DataPlaneTest, DrainRefusesNewSessionsAndKeepsRunningOnes) {
  auto running = Open("running");
  auto buffer = *running->Allocate(0, kMiB);
  auto stream = *running->CreateStream(0);
  testing::CommandResult drained =
      testing::RunCommand({testing::NeuronctlBinary(), "--address", address(), "drain"});
  ASSERT_EQ(drained.exit_code, 0) << drained.err;
  EXPECT_THAT(drained.out, HasSubstr("draining"));
  testing::CommandResult health =
      testing::RunCommand({testing::NeuronctlBinary(), "--address", address(), "health"});
  EXPECT_EQ(health.exit_code, 1) << "a draining daemon is not healthy for new work";
  EXPECT_THAT(health.out, HasSubstr("draining"));

  auto refused = neuronrt::Session::Open({.client = {.address = address()}});
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(refused.status().message(), HasSubstr("neuronctl drain --off"));
  ASSERT_TRUE(stream->Fill(buffer.device_address, kMiB, 1, 1).ok());
  EXPECT_TRUE(stream->Synchronize().ok());

  testing::CommandResult resumed = testing::RunCommand(
      {testing::NeuronctlBinary(), "--address", address(), "drain", "--off"});
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_TRUE(neuronrt::Session::Open({.client = {.address = address()}}).ok());
}

TEST_F(DataPlaneTest, ResetDeviceEndsItsSessions) {
  auto victim = Open("victim");
  auto buffer = *victim->Allocate(0, kMiB);
  auto stream = *victim->CreateStream(0);
  testing::CommandResult reset =
      testing::RunCommand({testing::NeuronctlBinary(), "--address", address(), "reset", "0"});
  ASSERT_EQ(reset.exit_code, 0) << reset.err;
  EXPECT_THAT(reset.out, HasSubstr("1 session(s) ended"));
  EXPECT_EQ(HbmUsed(), 0u);
  absl::Status status = stream->Fill(buffer.device_address, 8, 0, 1).status();
  if (status.ok()) status = stream->Synchronize();
  EXPECT_EQ(status.code(), absl::StatusCode::kAborted) << status;
  EXPECT_TRUE(Open("after")->Allocate(0, kMiB).ok());
  testing::CommandResult missing =
      testing::RunCommand({testing::NeuronctlBinary(), "--address", address(), "reset", "7"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_THAT(missing.err, HasSubstr("no device 7"));
}

TEST_F(DataPlaneTest, NeuronctlTopPrintsFramesWithEachSessionsRate) {
  auto session = Open("trainer");
  auto buffer = *session->Allocate(0, kMiB);
  auto stream = *session->CreateStream(0);
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(stream->Fill(buffer.device_address, 64, i, 1).ok());
  ASSERT_TRUE(stream->Synchronize().ok());
  testing::CommandResult batch = testing::RunCommand(
      {testing::NeuronctlBinary(), "--address", address(), "top", "-b", "-n", "2", "-d", "0.05"});
  ASSERT_EQ(batch.exit_code, 0) << batch.err;
  EXPECT_EQ(batch.out.find("\x1b"), std::string::npos) << "no terminal control in batch mode";
  const size_t first = batch.out.find("SESSION");
  ASSERT_NE(first, std::string::npos) << batch.out;
  EXPECT_NE(batch.out.find("SESSION", first + 1), std::string::npos) << "two frames";
  EXPECT_THAT(batch.out, HasSubstr("trainer"));
  EXPECT_THAT(batch.out, HasSubstr(std::to_string(::getpid())));

  testing::CommandResult json = testing::RunCommand(
      {testing::NeuronctlBinary(), "--address", address(), "top", "--json", "-n", "2", "-d",
       "0.05"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  std::vector<nlohmann::json> frames;
  for (absl::string_view line : absl::StrSplit(json.out, '\n', absl::SkipEmpty())) {
    frames.push_back(nlohmann::json::parse(line));
  }
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_TRUE(frames[0]["sessions"][0]["commands_per_s"].is_null());
  EXPECT_TRUE(frames[1]["sessions"][0]["commands_per_s"].is_number());
  EXPECT_EQ(frames[1]["sessions"][0]["session_id"], session->id());
  EXPECT_EQ(frames[1]["cores"].size(), 2u);
}

TEST_F(DataPlaneTest, NeuronctlTopOnATerminalQuitsOnQOrCtrlCAndRestoresTheTerminal) {
  for (const char key : {'q', '\x03'}) {
    int terminal = -1;
    const pid_t child = ::forkpty(&terminal, nullptr, nullptr, nullptr);
    ASSERT_GE(child, 0);
    if (child == 0) {
      const std::string binary = testing::NeuronctlBinary();
      const std::string at = address();
      ::execl(binary.c_str(), binary.c_str(), "--address", at.c_str(), "top", "-d", "0.05",
              static_cast<char*>(nullptr));
      ::_exit(127);
    }
    // Read until the first frame is drawn, then press the key.
    std::string screen;
    char chunk[4096];
    while (screen.find("(q to quit)") == std::string::npos) {
      const ssize_t n = ::read(terminal, chunk, sizeof(chunk));
      ASSERT_GT(n, 0) << screen;
      screen.append(chunk, static_cast<size_t>(n));
    }
    ASSERT_EQ(::write(terminal, &key, 1), 1);
    for (ssize_t n; (n = ::read(terminal, chunk, sizeof(chunk))) > 0;) {
      screen.append(chunk, static_cast<size_t>(n));
    }
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    ::close(terminal);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "key " << int{key};
    EXPECT_THAT(screen, HasSubstr("\x1b[?1049h")) << "the alternate screen";
    EXPECT_THAT(screen, HasSubstr("CORE"));
    EXPECT_THAT(screen, HasSubstr("\x1b[?25h\x1b[?1049l")) << "the terminal restored";
  }
}

TEST_F(DataPlaneTest, OtherUsersCannotKillDrainOrReset) {
  if (::geteuid() != 0 || ::access("/usr/bin/setpriv", X_OK) != 0) {
    GTEST_SKIP() << "needs root and setpriv to act as another user";
  }
  auto session = Open("root's");
  // Let another user reach the socket at all; the daemon's own checks are
  // what this test is about.
  ASSERT_EQ(::chmod(dir_.path().c_str(), 0755), 0);
  ASSERT_EQ(::chmod(socket_.c_str(), 0666), 0);
  auto as_nobody = [&](std::vector<std::string> args) {
    std::vector<std::string> argv = {"/usr/bin/setpriv", "--reuid=65534", "--regid=65534",
                                     "--clear-groups", testing::NeuronctlBinary(), "--address",
                                     address()};
    argv.insert(argv.end(), args.begin(), args.end());
    return testing::RunCommand(argv);
  };
  testing::CommandResult ps = as_nobody({"ps", "--json"});
  ASSERT_EQ(ps.exit_code, 0) << ps.err;
  testing::CommandResult kill = as_nobody({"kill", std::to_string(session->id())});
  EXPECT_EQ(kill.exit_code, 1);
  EXPECT_THAT(kill.err, HasSubstr("belongs to uid 0; uid 65534 may not use it"));
  testing::CommandResult drain = as_nobody({"drain"});
  EXPECT_EQ(drain.exit_code, 1);
  EXPECT_THAT(drain.err, HasSubstr("only root or uid 0 may drain"));
  testing::CommandResult reset = as_nobody({"reset", "0"});
  EXPECT_EQ(reset.exit_code, 1);
  EXPECT_THAT(reset.err, HasSubstr("may reset a device"));
  // The session survived all of it.
  auto stream = *session->CreateStream(0);
  EXPECT_TRUE(stream->Synchronize().ok());
}

}  // namespace
}  // namespace neuron
