// neuron-rtd as users meet it: a real daemon process on a temporary socket,
// queried through libneuronrt, raw gRPC and neuronctl.
#include <grpcpp/channel.h>
#include <grpcpp/client_context.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/security/credentials.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/strings/str_format.h"
#include "neuronrt/session.h"
#include "neuron/rtd/abi/command_ring.h"
#include "neuron/rtd/v1/admin.grpc.pb.h"
#include "neuron/rtd/v1/runtime.grpc.pb.h"
#include "neuronrt/client.h"
#include "nlohmann/json.hpp"
#include "testing/subprocess.h"
#include "testing/temp_dir.h"

namespace neuron {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr uint64_t kGiB = uint64_t{1} << 30;

class DaemonE2eTest : public ::testing::Test {
 protected:
  void StartDaemon(std::vector<std::string> args = {"--sim-preset", "trn2.48xlarge"}) {
    socket_ = dir_.Join("rtd.sock");
    args.insert(args.end(), {"--socket", socket_});
    absl::StatusOr<std::unique_ptr<testing::Subprocess>> daemon = testing::StartDaemon(args);
    ASSERT_TRUE(daemon.ok()) << daemon.status();
    daemon_ = *std::move(daemon);
  }

  std::string address() const { return "unix:" + socket_; }

  std::unique_ptr<neuronrt::Client> Connect() {
    absl::StatusOr<std::unique_ptr<neuronrt::Client>> client =
        neuronrt::Client::Connect({.address = address()});
    EXPECT_TRUE(client.ok()) << client.status();
    return client.ok() ? *std::move(client) : nullptr;
  }

  testing::CommandResult Neuronctl(std::vector<std::string> args,
                                   const testing::Environment& env = {}) {
    std::vector<std::string> argv = {testing::NeuronctlBinary()};
    argv.insert(argv.end(), args.begin(), args.end());
    testing::Environment full_env = env;
    full_env.emplace("NEURON_RTD_ADDRESS", std::nullopt);
    return testing::RunCommand(argv, full_env);
  }

  testing::TempDir dir_;
  std::string socket_;
  std::unique_ptr<testing::Subprocess> daemon_;
};

TEST_F(DaemonE2eTest, LibneuronrtListsTheSimulatedTrn2FortyEightXLarge) {
  StartDaemon();
  std::unique_ptr<neuronrt::Client> client = Connect();
  absl::StatusOr<std::vector<neuronrt::DeviceInfo>> devices = client->ListDevices();
  ASSERT_TRUE(devices.ok()) << devices.status();
  ASSERT_EQ(devices->size(), 16u);
  uint32_t next_core = 0;
  for (const neuronrt::DeviceInfo& device : *devices) {
    EXPECT_EQ(device.instance_type, "trn2.48xlarge");
    EXPECT_EQ(device.architecture, "trainium2");
    EXPECT_EQ(device.backend, "sim");
    EXPECT_EQ(device.logical_nc_config, 2u);
    EXPECT_EQ(device.hbm_total_bytes, 96 * kGiB);
    EXPECT_EQ(device.hbm_used_bytes, 0u);
    EXPECT_EQ(device.connected_devices.size(), 4u);
    ASSERT_EQ(device.cores.size(), 4u);
    for (uint32_t core : device.cores) EXPECT_EQ(core, next_core++);
  }
}

TEST_F(DaemonE2eTest, HealthIdentifiesTheCallerFromTheSocket) {
  StartDaemon({"--sim-preset", "trn2.3xlarge"});
  std::unique_ptr<neuronrt::Client> client = Connect();
  absl::StatusOr<neuronrt::HealthInfo> health = client->Health();
  ASSERT_TRUE(health.ok()) << health.status();
  EXPECT_TRUE(health->serving());
  EXPECT_EQ(health->daemon_pid, daemon_->pid());
  EXPECT_EQ(health->device_count, 1u);
  EXPECT_EQ(health->core_count, 4u);
  EXPECT_EQ(health->backend, "sim");
  EXPECT_EQ(health->caller.pid, ::getpid());
  EXPECT_EQ(health->caller.uid, ::geteuid());
}

TEST_F(DaemonE2eTest, RuntimeInfoCarriesTheRingAbiVersion) {
  StartDaemon();
  absl::StatusOr<neuronrt::RuntimeInfo> info = Connect()->GetRuntimeInfo();
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->abi_version_major, NEURON_RTD_ABI_VERSION_MAJOR);
  EXPECT_EQ(info->abi_version_minor, NEURON_RTD_ABI_VERSION_MINOR);
  EXPECT_FALSE(info->daemon_version.empty());
}

TEST_F(DaemonE2eTest, SocketIsPrivateToTheUser) {
  StartDaemon();
  struct stat info {};
  ASSERT_EQ(::stat(socket_.c_str(), &info), 0);
  EXPECT_TRUE(S_ISSOCK(info.st_mode));
  EXPECT_EQ(info.st_mode & 0777, 0600);
}

TEST_F(DaemonE2eTest, MethodsNotServedSayWhichMethod) {
  // A client newer than the daemon calls a method this daemon lacks.
  StartDaemon();
  auto channel = grpc::CreateChannel(address(), grpc::InsecureChannelCredentials());
  grpc::GenericStub stub(channel);
  grpc::ClientContext context;
  grpc::Slice empty_message("");
  grpc::ByteBuffer request(&empty_message, 1);
  grpc::ByteBuffer response;
  grpc::Status status;
  absl::Notification done;
  stub.UnaryCall(&context, "/neuron.rtd.v1.Runtime/SomeFutureMethod", grpc::StubOptions(),
                 &request, &response, [&](grpc::Status answer) {
                   status = std::move(answer);
                   done.Notify();
                 });
  done.WaitForNotification();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNIMPLEMENTED);
  EXPECT_THAT(status.error_message(),
              HasSubstr("the method called is not served by neuron-rtd"));
}

TEST_F(DaemonE2eTest, OversizedMessagesAreRefused) {
  const std::string config = dir_.WriteFile("rtd.toml", "[server]\nmax_message_bytes = 65536\n");
  StartDaemon({"--config", config});
  grpc::ChannelArguments arguments;
  arguments.SetMaxSendMessageSize(16 << 20);
  auto channel =
      grpc::CreateCustomChannel(address(), grpc::InsecureChannelCredentials(), arguments);
  auto runtime = rtd::v1::Runtime::NewStub(channel);
  rtd::v1::OpenSessionRequest request;
  request.set_client_name(std::string(200'000, 'x'));
  grpc::ClientContext context;
  rtd::v1::OpenSessionResponse response;
  grpc::Status status = runtime->OpenSession(&context, request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << status.error_message();

  // The daemon keeps serving.
  absl::StatusOr<neuronrt::HealthInfo> health = Connect()->Health();
  EXPECT_TRUE(health.ok()) << health.status();
}

TEST_F(DaemonE2eTest, AUsersWeightFromTheConfigurationAppliesToItsSessions) {
  const std::string config = dir_.WriteFile(
      "rtd.toml", absl::StrFormat("[scheduler]\ndefault_weight = 2\n"
                                  "[scheduler.user_weights]\n%d = 5\n", ::getuid()));
  StartDaemon({"--config", config});
  absl::StatusOr<std::unique_ptr<neuronrt::Session>> session =
      neuronrt::Session::Open({.client = {.address = address()}});
  ASSERT_TRUE(session.ok()) << session.status();
  auto weight_of_session = [&] {
    absl::StatusOr<std::vector<neuronrt::SessionInfo>> sessions = Connect()->ListSessions();
    EXPECT_TRUE(sessions.ok()) << sessions.status();
    return sessions.ok() && sessions->size() == 1 ? sessions->front().share_weight : 0u;
  };
  EXPECT_EQ(weight_of_session(), 5u);
  testing::CommandResult shared = Neuronctl(
      {"--address", address(), "share", absl::StrCat((*session)->id()), "7"});
  ASSERT_EQ(shared.exit_code, 0) << shared.err;
  EXPECT_EQ(weight_of_session(), 7u);
  EXPECT_EQ(Connect()->SetSessionWeight((*session)->id(), 0).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Connect()->SetSessionWeight((*session)->id() + 100, 3).code(),
            absl::StatusCode::kNotFound);
}

TEST_F(DaemonE2eTest, AnUnknownUserInUserWeightsStopsTheDaemonFromStarting) {
  const std::string config = dir_.WriteFile(
      "rtd.toml", "[scheduler.user_weights]\nno-such-user-here = 3\n");
  testing::CommandResult result = testing::RunCommand(
      testing::DaemonArgv({"--config", config, "--socket", dir_.Join("rtd.sock")}));
  EXPECT_NE(result.exit_code, 0);
  EXPECT_THAT(result.err, HasSubstr("no user 'no-such-user-here'"));
}

TEST_F(DaemonE2eTest, NeuronctlLsJsonShowsEveryDevice) {
  StartDaemon();
  testing::CommandResult result = Neuronctl({"--address", address(), "ls", "--json"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const nlohmann::json json = nlohmann::json::parse(result.out);
  ASSERT_EQ(json["devices"].size(), 16u);
  for (size_t i = 0; i < 16; ++i) {
    const nlohmann::json& device = json["devices"][i];
    EXPECT_EQ(device["index"], i);
    EXPECT_EQ(device["cores"], 4);
    EXPECT_EQ(device["hbm_total_bytes"], 96 * kGiB);
    EXPECT_EQ(device["hbm_used_bytes"], 0);
    EXPECT_EQ(device["instance_type"], "trn2.48xlarge");
  }
}

TEST_F(DaemonE2eTest, NeuronctlLsPrintsATable) {
  StartDaemon({"--sim-preset", "trn3"});
  testing::CommandResult result = Neuronctl({"--address", address(), "ls"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_THAT(result.out, AllOf(HasSubstr("DEVICE"), HasSubstr("INSTANCE TYPE"),
                                HasSubstr("trainium3"), HasSubstr("144 GiB"),
                                HasSubstr("4 (0-3)")));
}

TEST_F(DaemonE2eTest, NeuronctlHealthAndVersion) {
  StartDaemon();
  testing::CommandResult health = Neuronctl({"--address", address(), "health"});
  EXPECT_EQ(health.exit_code, 0) << health.err;
  EXPECT_THAT(health.out, HasSubstr("serving"));

  absl::StatusOr<std::unique_ptr<testing::Subprocess>> json_health = testing::Subprocess::Spawn(
      {testing::NeuronctlBinary(), "--address", address(), "health", "--json"});
  ASSERT_TRUE(json_health.ok());
  ASSERT_EQ(*(*json_health)->Wait(), 0);
  const nlohmann::json json = nlohmann::json::parse((*json_health)->Stdout());
  EXPECT_EQ(json["state"], "serving");
  EXPECT_EQ(json["caller"]["pid"], (*json_health)->pid()) << "SO_PEERCRED of neuronctl itself";

  testing::CommandResult version = Neuronctl({"--address", address(), "version"});
  EXPECT_EQ(version.exit_code, 0);
  EXPECT_THAT(version.out, AllOf(HasSubstr("neuronctl "), HasSubstr("neuron-rtd ")));
}

TEST_F(DaemonE2eTest, NeuronctlFollowsNeuronRtdAddress) {
  StartDaemon({"--sim-preset", "trn2.3xlarge"});
  testing::CommandResult result = testing::RunCommand(
      {testing::NeuronctlBinary(), "ls", "--json"}, {{"NEURON_RTD_ADDRESS", address()}});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(nlohmann::json::parse(result.out)["devices"].size(), 1u);
}

TEST_F(DaemonE2eTest, NeuronctlWithoutADaemonPrintsOneLineAndExitsTwo) {
  const std::string missing = "unix:" + dir_.Join("absent.sock");
  testing::CommandResult result = Neuronctl({"--address", missing, "ls"});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_EQ(result.out, "");
  EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << result.err;
  EXPECT_THAT(result.err, AllOf(HasSubstr(missing), HasSubstr("Start the daemon")));
}

TEST_F(DaemonE2eTest, NeuronctlAgainstADeadDaemonsSocketPrintsOneLine) {
  StartDaemon();
  daemon_->Signal(SIGKILL);
  ASSERT_TRUE(daemon_->Wait().ok());
  testing::CommandResult result = Neuronctl({"--address", address(), "health"});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << result.err;
  EXPECT_THAT(result.err, AllOf(HasSubstr("cannot reach neuron-rtd at " + address()),
                                Not(HasSubstr("grpc_"))));
}

TEST_F(DaemonE2eTest, NeuronctlRejectsAMalformedAddress) {
  testing::CommandResult result = Neuronctl({"--address", "localhost:1234", "ls"});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_THAT(result.err, HasSubstr("must have the form unix:/absolute/path"));
}

}  // namespace
}  // namespace neuron
