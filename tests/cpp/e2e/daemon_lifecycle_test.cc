// How neuron-rtd starts and stops: signals, stale sockets, a second daemon,
// configuration errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>

#include "neuronrt/client.h"
#include "neuronrt/session.h"
#include "testing/subprocess.h"
#include "testing/temp_dir.h"

namespace neuron {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

bool Exists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

absl::StatusOr<neuronrt::HealthInfo> Health(const std::string& socket) {
  absl::StatusOr<std::unique_ptr<neuronrt::Client>> client =
      neuronrt::Client::Connect({.address = "unix:" + socket});
  if (!client.ok()) return client.status();
  return (*client)->Health();
}

class DaemonLifecycleTest : public ::testing::Test {
 protected:
  testing::TempDir dir_;
  const std::string socket_ = dir_.Join("rtd.sock");
};

TEST_F(DaemonLifecycleTest, SigtermStopsCleanlyAndRemovesTheSocket) {
  auto daemon = testing::StartDaemon({"--socket", socket_});
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  ASSERT_TRUE(Health(socket_).ok());
  (*daemon)->Signal(SIGTERM);
  absl::StatusOr<int> code = (*daemon)->Wait(absl::Seconds(10));
  ASSERT_TRUE(code.ok()) << code.status();
  EXPECT_EQ(*code, 0) << (*daemon)->Stderr();
  EXPECT_FALSE(Exists(socket_));
  EXPECT_THAT((*daemon)->Stderr(), AllOf(HasSubstr("received SIGTERM"), HasSubstr("stopped")));
}

TEST_F(DaemonLifecycleTest, SigintStopsCleanly) {
  auto daemon = testing::StartDaemon({"--socket", socket_});
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  (*daemon)->Signal(SIGINT);
  EXPECT_EQ(*(*daemon)->Wait(absl::Seconds(10)), 0);
  EXPECT_FALSE(Exists(socket_));
}

TEST_F(DaemonLifecycleTest, IdleExitStopsADaemonWithoutSessionsButNotOneInUse) {
  auto daemon = testing::StartDaemon({"--socket", socket_, "--idle-exit", "1"});
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  {
    absl::StatusOr<std::unique_ptr<neuronrt::Session>> session =
        neuronrt::Session::Open({.client = {.address = "unix:" + socket_}});
    ASSERT_TRUE(session.ok()) << session.status();
    // A session keeps the daemon: it is still there after twice the timeout.
    EXPECT_FALSE((*daemon)->Wait(absl::Seconds(2)).ok());
    ASSERT_TRUE(Health(socket_).ok());
  }
  absl::StatusOr<int> code = (*daemon)->Wait(absl::Seconds(10));
  ASSERT_TRUE(code.ok()) << code.status();
  EXPECT_EQ(*code, 0) << (*daemon)->Stderr();
  EXPECT_FALSE(Exists(socket_));
  EXPECT_THAT((*daemon)->Stderr(), HasSubstr("idle for 1 s, stopping"));
}

TEST_F(DaemonLifecycleTest, IdleExitRejectsANegativeValue) {
  auto daemon = testing::StartDaemon({"--socket", socket_, "--idle-exit", "-1"});
  EXPECT_FALSE(daemon.ok());
}

TEST_F(DaemonLifecycleTest, ReplacesTheStaleSocketOfAKilledDaemon) {
  auto first = testing::StartDaemon({"--socket", socket_});
  ASSERT_TRUE(first.ok()) << first.status();
  (*first)->Signal(SIGKILL);
  ASSERT_TRUE((*first)->Wait().ok());
  ASSERT_TRUE(Exists(socket_)) << "a killed daemon leaves its socket file";

  auto second = testing::StartDaemon({"--socket", socket_});
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_THAT((*second)->Stderr(), HasSubstr("removed stale socket"));
  absl::StatusOr<neuronrt::HealthInfo> health = Health(socket_);
  ASSERT_TRUE(health.ok()) << health.status();
  EXPECT_EQ(health->daemon_pid, (*second)->pid());
}

TEST_F(DaemonLifecycleTest, SecondDaemonOnTheSameSocketIsRefused) {
  auto first = testing::StartDaemon({"--socket", socket_});
  ASSERT_TRUE(first.ok()) << first.status();
  auto second =
      testing::Subprocess::Spawn(testing::DaemonArgv({"--socket", socket_}));
  ASSERT_TRUE(second.ok());
  absl::StatusOr<int> code = (*second)->Wait();
  ASSERT_TRUE(code.ok());
  EXPECT_EQ(*code, 1);
  EXPECT_THAT((*second)->Stderr(),
              AllOf(HasSubstr("already serving unix:" + socket_),
                    HasSubstr("pid " + std::to_string((*first)->pid()))));
  absl::StatusOr<neuronrt::HealthInfo> health = Health(socket_);
  ASSERT_TRUE(health.ok()) << health.status();
  EXPECT_EQ(health->daemon_pid, (*first)->pid());
}

// Processes racing to start a daemon start several; the losers must exit at
// once, not after probing interpreters and building a device they never use.
TEST_F(DaemonLifecycleTest, ASecondDaemonChecksTheSocketBeforeItBuildsADevice) {
  auto first = testing::StartDaemon({"--socket", socket_});
  ASSERT_TRUE(first.ok()) << first.status();
  auto second = testing::Subprocess::Spawn(testing::DaemonArgv(
      {"--socket", socket_, "--device-backend", "nrt", "--nrt-library", "/nonexistent/libnrt.so.1"}));
  ASSERT_TRUE(second.ok());
  absl::StatusOr<int> code = (*second)->Wait();
  ASSERT_TRUE(code.ok());
  EXPECT_EQ(*code, 1);
  EXPECT_THAT((*second)->Stderr(), HasSubstr("already serving unix:" + socket_));
  EXPECT_THAT((*second)->Stderr(), Not(HasSubstr("libnrt")));
}

TEST_F(DaemonLifecycleTest, DaemonsStartingAtOnceElectExactlyOne) {
  std::vector<std::unique_ptr<testing::Subprocess>> daemons;
  for (int i = 0; i < 4; ++i) {
    auto daemon = testing::Subprocess::Spawn(testing::DaemonArgv({"--socket", socket_}));
    ASSERT_TRUE(daemon.ok());
    daemons.push_back(*std::move(daemon));
  }
  int ready = 0;
  pid_t winner = 0;
  for (auto& daemon : daemons) {
    absl::Status status = daemon->WaitReady();
    if (status.ok()) {
      ++ready;
      winner = daemon->pid();
    } else {
      EXPECT_THAT(status.message(), HasSubstr("already serving")) << status;
    }
  }
  EXPECT_EQ(ready, 1);
  absl::StatusOr<neuronrt::HealthInfo> health = Health(socket_);
  ASSERT_TRUE(health.ok()) << health.status();
  EXPECT_EQ(health->daemon_pid, winner);
}

TEST_F(DaemonLifecycleTest, UnknownConfigKeyStopsTheDaemonNamingKeyAndFile) {
  const std::string config = dir_.WriteFile("bad.toml", "[sim]\npreset = \"dev\"\nchips = 4\n");
  testing::CommandResult result =
      testing::RunCommand({testing::NeuronRtdBinary(), "--config", config, "--socket", socket_});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_THAT(result.err, AllOf(HasSubstr(config + ":3"), HasSubstr("unknown key 'sim.chips'")));
  EXPECT_FALSE(Exists(socket_));
}

TEST_F(DaemonLifecycleTest, BadConfigValueStopsTheDaemonNamingTheValue) {
  const std::string config = dir_.WriteFile("bad.toml", "[device]\nlogical_nc_config = 4\n");
  testing::CommandResult result =
      testing::RunCommand({testing::NeuronRtdBinary(), "--config", config, "--socket", socket_});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_THAT(result.err, AllOf(HasSubstr(config + ":2"), HasSubstr("invalid value 4"),
                                HasSubstr("'device.logical_nc_config'")));
}

TEST_F(DaemonLifecycleTest, MissingConfigFileIsAnError) {
  testing::CommandResult result = testing::RunCommand(
      {testing::NeuronRtdBinary(), "--config", dir_.Join("absent.toml"), "--socket", socket_});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_THAT(result.err, HasSubstr("absent.toml does not exist"));
}

TEST_F(DaemonLifecycleTest, BadFlagValueIsAnError) {
  testing::CommandResult result = testing::RunCommand(
      testing::DaemonArgv({"--sim-preset", "trn1", "--socket", socket_}));
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_THAT(result.err, AllOf(HasSubstr("\"trn1\""), HasSubstr("--sim-preset")));
}

TEST_F(DaemonLifecycleTest, TheSimBackendNeedsItsPluginAndSaysWhereItLooked) {
  const std::string absent = dir_.Join("lib/neuron-rtd/libneuron_rtd_sim.so");
  testing::CommandResult missing = testing::RunCommand(
      testing::DaemonArgv({"--sim-plugin", absent, "--socket", socket_}));
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_THAT(missing.err, AllOf(HasSubstr("cannot load the simulated backend's plugin"),
                                 HasSubstr(absent), HasSubstr("sim_plugin")));
  // A shared library that is not the plugin.
  testing::CommandResult foreign = testing::RunCommand(
      testing::DaemonArgv({"--sim-plugin", NEURON_FAKE_NRT_LIBRARY, "--socket", socket_}));
  EXPECT_NE(foreign.exit_code, 0);
  EXPECT_THAT(foreign.err, HasSubstr("is not neuron-rtd's simulated backend plugin"));
}

TEST_F(DaemonLifecycleTest, ConfigFileIsUsedAndFlagsOverrideIt) {
  const std::string config = dir_.WriteFile(
      "rtd.toml", "[server]\nsocket = \"" + socket_ + "\"\n[sim]\npreset = \"trn3\"\n");
  {
    auto daemon = testing::StartDaemon({"--config", config});
    ASSERT_TRUE(daemon.ok()) << daemon.status();
    auto devices = (*neuronrt::Client::Connect({.address = "unix:" + socket_}))->ListDevices();
    ASSERT_TRUE(devices.ok());
    EXPECT_EQ((*devices)[0].architecture, "trainium3");
  }
  auto daemon = testing::StartDaemon(
      {"--config", config, "--sim-preset", "trn2.3xlarge", "--logical-nc-config", "1"});
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  auto devices = (*neuronrt::Client::Connect({.address = "unix:" + socket_}))->ListDevices();
  ASSERT_TRUE(devices.ok());
  EXPECT_EQ((*devices)[0].instance_type, "trn2.3xlarge");
  EXPECT_EQ((*devices)[0].cores.size(), 8u);
}

TEST_F(DaemonLifecycleTest, UnusableSocketDirectoryIsAClearError) {
  testing::CommandResult result = testing::RunCommand(
      testing::DaemonArgv({"--socket", "/proc/self/neuron-rtd.sock"}));
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.err, HasSubstr("/proc/self/neuron-rtd.sock"));
}

TEST_F(DaemonLifecycleTest, VersionFlag) {
  testing::CommandResult result = testing::RunCommand({testing::NeuronRtdBinary(), "--version"});
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_THAT(result.out, HasSubstr("neuron-rtd "));
}

}  // namespace
}  // namespace neuron
