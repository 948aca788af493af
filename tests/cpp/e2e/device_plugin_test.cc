// neuron-rtd-device-plugin against a fake kubelet: a GoogleTest fixture that
// serves the kubelet's Registration and PodResourcesLister APIs in a
// temporary directory and drives the plugin the way the kubelet does:
// registration, ListAndWatch, preferred allocation, Allocate and
// PreStartContainer (grants in the daemon), the grants of pods that are gone
// deleted, re-registration after a kubelet restart, health across a daemon
// restart, and whole devices next to cores.
#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <set>
#include <functional>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "e2e/data_plane_fixture.h"
#include "k8s/deviceplugin/v1beta1/api.grpc.pb.h"
#include "neuronrt/client.h"
#include "neuronrt/session.h"
#include "testing/fake_pod_resources.h"
#include "testing/subprocess.h"

namespace neuron {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kResource[] = "aws.amazon.com/neuroncore";
constexpr char kEndpoint[] = "neuron-rtd-neuroncore.sock";

class FakeKubelet final : public v1beta1::Registration::Service {
 public:
  grpc::Status Register(grpc::ServerContext*, const v1beta1::RegisterRequest* request,
                        v1beta1::Empty*) override {
    absl::MutexLock lock(&mutex_);
    registrations_.push_back(*request);
    return grpc::Status::OK;
  }

  // Waits until `count` registrations arrived; the last one.
  v1beta1::RegisterRequest AwaitRegistration(size_t count) {
    absl::MutexLock lock(&mutex_);
    auto arrived = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) {
      return registrations_.size() >= count;
    };
    EXPECT_TRUE(mutex_.AwaitWithTimeout(absl::Condition(&arrived), absl::Seconds(30)))
        << registrations_.size() << " registration(s)";
    return registrations_.empty() ? v1beta1::RegisterRequest() : registrations_.back();
  }

  std::vector<v1beta1::RegisterRequest> Registrations() {
    absl::MutexLock lock(&mutex_);
    return registrations_;
  }

 private:
  absl::Mutex mutex_;
  std::vector<v1beta1::RegisterRequest> registrations_ ABSL_GUARDED_BY(mutex_);
};

class DevicePluginTest : public DataPlaneTest {
 protected:
  virtual std::vector<std::string> DaemonArgs() const { return {}; }
  virtual std::vector<std::string> ExtraPluginArgs() const { return {}; }
  virtual std::string PollIntervalMs() const { return "50"; }

  void SetUp() override {
    StartDaemon(DaemonArgs());
    kubelet_dir_ = dir_.Join("device-plugins");
    ASSERT_EQ(::mkdir(kubelet_dir_.c_str(), 0750), 0);
    pod_resources_ = dir_.Join("pod-resources.sock");
    StartKubelet();
    pods_ = testing::FakePodResources::Serve(pod_resources_);
    ASSERT_NE(pods_, nullptr);
    std::vector<std::string> argv = {
        NEURON_RTD_DEVICE_PLUGIN_BINARY, "--address", address(), "--kubelet-dir", kubelet_dir_,
        "--pod-resources-socket", pod_resources_, "--poll-interval-ms", PollIntervalMs(),
        "--gc-grace-ms", "0"};
    for (const std::string& arg : ExtraPluginArgs()) argv.push_back(arg);
    auto plugin = testing::Subprocess::Spawn(argv);
    ASSERT_TRUE(plugin.ok()) << plugin.status();
    plugin_ = *std::move(plugin);
  }

  void TearDown() override {
    if (plugin_ != nullptr) {
      plugin_->Signal(SIGTERM);
      absl::StatusOr<int> exited = plugin_->Wait();
      EXPECT_TRUE(exited.ok() && *exited == 0) << plugin_->Stderr();
    }
    if (kubelet_server_ != nullptr) kubelet_server_->Shutdown();
    if (pods_ != nullptr) pods_->Stop();
  }

  // The kubelet (re)starting: it deletes every socket of the directory.
  void StartKubelet() {
    if (kubelet_server_ != nullptr) kubelet_server_->Shutdown();
    for (const auto& entry : std::filesystem::directory_iterator(kubelet_dir_)) {
      if (entry.is_socket()) std::filesystem::remove(entry.path());
    }
    grpc::ServerBuilder builder;
    builder.AddListeningPort("unix:" + kubelet_dir_ + "/kubelet.sock",
                             grpc::InsecureServerCredentials());
    builder.RegisterService(&kubelet_);
    kubelet_server_ = builder.BuildAndStart();
    ASSERT_NE(kubelet_server_, nullptr);
  }

  std::unique_ptr<v1beta1::DevicePlugin::Stub> Plugin(const std::string& endpoint = kEndpoint) {
    return v1beta1::DevicePlugin::NewStub(grpc::CreateChannel(
        "unix:" + kubelet_dir_ + "/" + endpoint, grpc::InsecureChannelCredentials()));
  }

  std::vector<std::string> GrantIds() {
    std::vector<std::string> ids;
    auto grants = Admin()->ListGrants();
    EXPECT_TRUE(grants.ok()) << grants.status();
    if (grants.ok()) {
      for (const neuronrt::GrantInfo& grant : *grants) ids.push_back(grant.grant_id);
    }
    return ids;
  }

  // Polls the daemon until its grants are `expected`; the plugin acts on
  // its own schedule, the condition ends the wait.
  bool AwaitGrants(const std::vector<std::string>& expected) {
    for (const absl::Time until = absl::Now() + absl::Seconds(30); absl::Now() < until;) {
      if (GrantIds() == expected) return true;
      absl::SleepFor(absl::Milliseconds(20));
    }
    return false;
  }

  // One container holding `ids` of the resource served at `endpoint`.
  v1beta1::AllocateResponse Allocate(const std::vector<std::string>& ids,
                                     const std::string& endpoint = kEndpoint) {
    v1beta1::AllocateRequest request;
    v1beta1::ContainerAllocateRequest* container = request.add_container_requests();
    for (const std::string& id : ids) container->add_devices_ids(id);
    grpc::ClientContext context;
    v1beta1::AllocateResponse response;
    const grpc::Status status = Plugin(endpoint)->Allocate(&context, request, &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return response;
  }

  std::string kubelet_dir_;
  std::string pod_resources_;
  FakeKubelet kubelet_;
  std::unique_ptr<grpc::Server> kubelet_server_;
  std::unique_ptr<testing::FakePodResources> pods_;
  std::unique_ptr<testing::Subprocess> plugin_;
};

TEST_F(DevicePluginTest, RegistersListsAllocatesAsGrantsAndReleasesThemWhenThePodIsGone) {
  const v1beta1::RegisterRequest registered = kubelet_.AwaitRegistration(1);
  EXPECT_EQ(registered.version(), "v1beta1");
  EXPECT_EQ(registered.endpoint(), kEndpoint);
  EXPECT_EQ(registered.resource_name(), kResource);
  EXPECT_TRUE(registered.options().pre_start_required());
  EXPECT_TRUE(registered.options().get_preferred_allocation_available());

  {
    grpc::ClientContext context;
    v1beta1::DevicePluginOptions options;
    ASSERT_TRUE(Plugin()->GetDevicePluginOptions(&context, v1beta1::Empty(), &options).ok());
    EXPECT_TRUE(options.pre_start_required());
  }
  {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    auto stream = Plugin()->ListAndWatch(&context, v1beta1::Empty());
    v1beta1::ListAndWatchResponse devices;
    ASSERT_TRUE(stream->Read(&devices));
    ASSERT_EQ(devices.devices_size(), 2);
    EXPECT_EQ(devices.devices(0).id(), "nc-0");
    EXPECT_EQ(devices.devices(1).id(), "nc-1");
    EXPECT_EQ(devices.devices(0).health(), "Healthy");
    context.TryCancel();
  }
  {
    v1beta1::PreferredAllocationRequest request;
    auto* container = request.add_container_requests();
    container->add_available_deviceids("nc-1");
    container->add_available_deviceids("nc-0");
    container->set_allocation_size(1);
    grpc::ClientContext context;
    v1beta1::PreferredAllocationResponse preferred;
    ASSERT_TRUE(Plugin()->GetPreferredAllocation(&context, request, &preferred).ok());
    EXPECT_THAT(preferred.container_responses(0).deviceids(), ElementsAre("nc-0"));
  }

  // The kubelet lists the pod of nc-1 (the plugin deletes a grant no pod
  // holds, here with no grace period).
  pods_->SetContainers({{.pod = "pod-0", .device_ids = {"nc-1"}}});
  const v1beta1::AllocateResponse allocated = Allocate({"nc-1"});
  ASSERT_EQ(allocated.container_responses_size(), 1);
  const v1beta1::ContainerAllocateResponse& container = allocated.container_responses(0);
  EXPECT_EQ(container.envs().at("NEURON_RTD_ADDRESS"), "unix:/run/neuron-rtd/neuron-rtd.sock");
  EXPECT_EQ(container.envs().at("NEURON_RT_VISIBLE_CORES"), "1");
  ASSERT_EQ(container.mounts_size(), 1);
  EXPECT_EQ(container.mounts(0).host_path(), dir_.Join("grants/nc1"));
  EXPECT_EQ(container.mounts(0).container_path(), "/run/neuron-rtd");
  EXPECT_TRUE(container.mounts(0).read_only());
  EXPECT_EQ(container.devices_size(), 0) << "no device node: only the daemon touches hardware";
  auto grants = Admin()->ListGrants();
  ASSERT_TRUE(grants.ok());
  ASSERT_EQ(grants->size(), 1u);
  EXPECT_THAT(grants->front().cores, ElementsAre(1u));
  EXPECT_EQ(grants->front().hbm_quota_bytes, (uint64_t{4} << 30) / 2) << "core 1's share";
  auto session = neuronrt::Session::Open(
      {.client = {.address = "unix:" + container.mounts(0).host_path() + "/neuron-rtd.sock"}});
  ASSERT_TRUE(session.ok()) << session.status();
  EXPECT_THAT((*session)->cores(), ElementsAre(1u));

  // nc-0's grant, which no pod holds, goes; nc-1's stays.
  Allocate({"nc-0"});
  EXPECT_TRUE(AwaitGrants({"nc1"}));
  // The pod is gone: so is its grant, and the session it had.
  pods_->SetContainers({});
  EXPECT_TRUE(AwaitGrants({}));
  absl::Status ended = (*session)->Allocate(1, kMiB).status();
  EXPECT_EQ(ended.code(), absl::StatusCode::kAborted) << ended;
}

TEST_F(DevicePluginTest, ItRegistersAgainWhenTheKubeletRestarts) {
  kubelet_.AwaitRegistration(1);
  StartKubelet();
  const v1beta1::RegisterRequest again = kubelet_.AwaitRegistration(2);
  EXPECT_EQ(again.endpoint(), kEndpoint);
  // Served again under the same name.
  grpc::ClientContext context;
  v1beta1::DevicePluginOptions options;
  EXPECT_TRUE(Plugin()->GetDevicePluginOptions(&context, v1beta1::Empty(), &options).ok());
}

TEST_F(DevicePluginTest, CoresTurnUnhealthyWhileTheDaemonIsDownAndPreStartRestoresTheGrant) {
  kubelet_.AwaitRegistration(1);
  pods_->SetContainers({{.pod = "pod-0", .device_ids = {"nc-0"}}});
  Allocate({"nc-0"});
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  auto stream = Plugin()->ListAndWatch(&context, v1beta1::Empty());
  v1beta1::ListAndWatchResponse devices;
  ASSERT_TRUE(stream->Read(&devices));
  EXPECT_EQ(devices.devices(0).health(), "Healthy");

  daemon_.reset();  // SIGKILL: its grants are gone with it
  ASSERT_TRUE(stream->Read(&devices));
  ASSERT_EQ(devices.devices_size(), 2);
  EXPECT_EQ(devices.devices(0).health(), "Unhealthy");
  EXPECT_EQ(devices.devices(1).health(), "Unhealthy");

  StartDaemon({});
  ASSERT_TRUE(stream->Read(&devices));
  EXPECT_EQ(devices.devices(0).health(), "Healthy");
  context.TryCancel();
  EXPECT_TRUE(GrantIds().empty());
  // A container of the pod restarting: the kubelet reuses Allocate's answer
  // and calls PreStartContainer, which makes the grant again.
  v1beta1::PreStartContainerRequest prestart;
  prestart.add_devices_ids("nc-0");
  grpc::ClientContext prestart_context;
  v1beta1::PreStartContainerResponse started;
  const grpc::Status status = Plugin()->PreStartContainer(&prestart_context, prestart, &started);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(GrantIds(), std::vector<std::string>{"nc0"});
}

TEST_F(DevicePluginTest, ForeignDeviceIdsAreRefused) {
  kubelet_.AwaitRegistration(1);
  v1beta1::AllocateRequest request;
  request.add_container_requests()->add_devices_ids("gpu-0");
  grpc::ClientContext context;
  v1beta1::AllocateResponse response;
  const grpc::Status status = Plugin()->Allocate(&context, request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("\"gpu-0\" is not one of"));
  EXPECT_TRUE(GrantIds().empty());
}

constexpr char kDeviceResource[] = "aws.amazon.com/neuron";
constexpr char kDeviceEndpoint[] = "neuron-rtd-neuron.sock";

// The health of each listed device, by ID.
std::map<std::string, std::string> HealthOf(const v1beta1::ListAndWatchResponse& listed) {
  std::map<std::string, std::string> health;
  for (const v1beta1::Device& device : listed.devices()) health[device.id()] = device.health();
  return health;
}

// Reads updates until one satisfies `wanted` (the plugin sends one per
// change it sees); false when the stream ends first.
bool ReadUntil(grpc::ClientReader<v1beta1::ListAndWatchResponse>& stream,
               const std::function<bool(const std::map<std::string, std::string>&)>& wanted) {
  v1beta1::ListAndWatchResponse listed;
  while (stream.Read(&listed)) {
    if (wanted(HealthOf(listed))) return true;
  }
  return false;
}

// trn2.48xlarge: 16 devices of 4 cores (LNC=2) in a 4x4 torus, with
// aws.amazon.com/neuron served beside aws.amazon.com/neuroncore.
class DeviceResourceTest : public DevicePluginTest {
 protected:
  std::vector<std::string> DaemonArgs() const override {
    return {"--sim-preset", "trn2.48xlarge"};
  }
  std::vector<std::string> ExtraPluginArgs() const override {
    return {"--device-resource-name", kDeviceResource};
  }
};

TEST_F(DeviceResourceTest, WholeDevicesAreGrantedAndWhatEitherResourceHoldsTheOtherShowsUnhealthy) {
  kubelet_.AwaitRegistration(2);
  std::map<std::string, std::string> endpoints;
  for (const v1beta1::RegisterRequest& request : kubelet_.Registrations()) {
    endpoints[request.resource_name()] = request.endpoint();
  }
  EXPECT_EQ(endpoints, (std::map<std::string, std::string>{{kResource, kEndpoint},
                                                            {kDeviceResource, kDeviceEndpoint}}));

  grpc::ClientContext device_context;
  device_context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  auto devices = Plugin(kDeviceEndpoint)->ListAndWatch(&device_context, v1beta1::Empty());
  grpc::ClientContext core_context;
  core_context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  auto cores = Plugin()->ListAndWatch(&core_context, v1beta1::Empty());
  v1beta1::ListAndWatchResponse listed;
  ASSERT_TRUE(devices->Read(&listed));
  ASSERT_EQ(listed.devices_size(), 16);
  EXPECT_EQ(listed.devices(15).id(), "nd-15");
  EXPECT_EQ(listed.devices(15).health(), "Healthy");
  ASSERT_TRUE(cores->Read(&listed));
  EXPECT_EQ(listed.devices_size(), 64);

  {
    // Device 1's neighbours are 0, 2, 5 and 13; 3 is not linked to 1.
    v1beta1::PreferredAllocationRequest request;
    auto* container = request.add_container_requests();
    for (const char* id : {"nd-3", "nd-5", "nd-9"}) container->add_available_deviceids(id);
    container->add_must_include_deviceids("nd-1");
    container->set_allocation_size(2);
    grpc::ClientContext context;
    v1beta1::PreferredAllocationResponse preferred;
    ASSERT_TRUE(Plugin(kDeviceEndpoint)->GetPreferredAllocation(&context, request, &preferred).ok());
    EXPECT_THAT(preferred.container_responses(0).deviceids(), ElementsAre("nd-1", "nd-5"));
  }

  // A pod of device 1: its four cores, the device's HBM, its own grant.
  pods_->SetContainers(
      {{.pod = "pod-device", .resource_name = kDeviceResource, .device_ids = {"nd-1"}}});
  const v1beta1::AllocateResponse allocated = Allocate({"nd-1"}, kDeviceEndpoint);
  ASSERT_EQ(allocated.container_responses_size(), 1);
  const v1beta1::ContainerAllocateResponse& container = allocated.container_responses(0);
  EXPECT_EQ(container.envs().at("NEURON_RT_VISIBLE_CORES"), "4-7");
  EXPECT_EQ(container.envs().at("NEURON_RTD_GRANT"), "nd1");
  ASSERT_EQ(container.mounts_size(), 1);
  EXPECT_EQ(container.mounts(0).host_path(), dir_.Join("grants/nd1"));
  auto grants = Admin()->ListGrants();
  ASSERT_TRUE(grants.ok());
  ASSERT_EQ(grants->size(), 1u);
  EXPECT_THAT(grants->front().cores, ElementsAre(4u, 5u, 6u, 7u));
  EXPECT_EQ(grants->front().hbm_quota_bytes, uint64_t{96} << 30) << "the whole device's HBM";
  auto session = neuronrt::Session::Open(
      {.client = {.address = "unix:" + container.mounts(0).host_path() + "/neuron-rtd.sock"}});
  ASSERT_TRUE(session.ok()) << session.status();
  EXPECT_THAT((*session)->cores(), ElementsAre(4u, 5u, 6u, 7u));

  // The core resource stops offering the device's cores...
  EXPECT_TRUE(ReadUntil(*cores, [](const auto& health) {
    return health.at("nc-4") == "Unhealthy" && health.at("nc-7") == "Unhealthy" &&
           health.at("nc-3") == "Healthy" && health.at("nc-8") == "Healthy";
  }));
  // ... and a core granted as a core takes its whole device out of the
  // device resource.
  pods_->SetContainers(
      {{.pod = "pod-device", .resource_name = kDeviceResource, .device_ids = {"nd-1"}},
       {.pod = "pod-core", .device_ids = {"nc-9"}}});
  Allocate({"nc-9"});
  EXPECT_TRUE(ReadUntil(*devices, [](const auto& health) {
    return health.at("nd-2") == "Unhealthy" && health.at("nd-1") == "Healthy" &&
           health.at("nd-3") == "Healthy";
  })) << "device 1's own grant leaves it Healthy in its own resource";

  // The device's pod is gone: its grant goes and its cores come back.
  pods_->SetContainers({{.pod = "pod-core", .device_ids = {"nc-9"}}});
  EXPECT_TRUE(AwaitGrants({"nc9"}));
  EXPECT_TRUE(ReadUntil(*cores, [](const auto& health) { return health.at("nc-4") == "Healthy"; }));
  device_context.TryCancel();
  core_context.TryCancel();

  // A device this host does not have.
  v1beta1::AllocateRequest request;
  request.add_container_requests()->add_devices_ids("nd-16");
  grpc::ClientContext context;
  v1beta1::AllocateResponse response;
  const grpc::Status status = Plugin(kDeviceEndpoint)->Allocate(&context, request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("nd-16 is not one of this host's 16"));
}

TEST_F(DeviceResourceTest, BothResourcesRegisterAgainWhenTheKubeletRestarts) {
  kubelet_.AwaitRegistration(2);
  StartKubelet();
  kubelet_.AwaitRegistration(4);
  std::multiset<std::string> names;
  for (const v1beta1::RegisterRequest& request : kubelet_.Registrations()) {
    names.insert(request.resource_name());
  }
  EXPECT_EQ(names.count(kResource), 2u);
  EXPECT_EQ(names.count(kDeviceResource), 2u);
  grpc::ClientContext context;
  v1beta1::DevicePluginOptions options;
  EXPECT_TRUE(
      Plugin(kDeviceEndpoint)->GetDevicePluginOptions(&context, v1beta1::Empty(), &options).ok());
}

// Polls ten minutes apart: only a grant wakes the plugin before the test's
// deadline.
class DeviceResourceBetweenPollsTest : public DeviceResourceTest {
 protected:
  std::string PollIntervalMs() const override { return "600000"; }
};

TEST_F(DeviceResourceBetweenPollsTest, AGrantHidesItsCoresFromTheOtherResourceAtOnce) {
  kubelet_.AwaitRegistration(2);
  grpc::ClientContext core_context;
  core_context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  auto cores = Plugin()->ListAndWatch(&core_context, v1beta1::Empty());
  EXPECT_TRUE(ReadUntil(*cores, [](const auto& health) { return health.at("nc-4") == "Healthy"; }));
  pods_->SetContainers(
      {{.pod = "pod-device", .resource_name = kDeviceResource, .device_ids = {"nd-1"}}});
  Allocate({"nd-1"}, kDeviceEndpoint);
  EXPECT_TRUE(ReadUntil(*cores, [](const auto& health) {
    return health.at("nc-4") == "Unhealthy" && health.at("nc-7") == "Unhealthy";
  }));
  core_context.TryCancel();
}

TEST(DevicePluginFlagsTest, TwoResourcesOfOneSocketAreRefusedAtStart) {
  auto plugin = testing::Subprocess::Spawn(
      {NEURON_RTD_DEVICE_PLUGIN_BINARY, "--address", "unix:/nonexistent/rtd.sock",
       "--device-resource-name", kDeviceResource, "--device-endpoint", kEndpoint});
  ASSERT_TRUE(plugin.ok()) << plugin.status();
  absl::StatusOr<int> exited = (*plugin)->Wait();
  ASSERT_TRUE(exited.ok());
  EXPECT_EQ(*exited, 2);
  EXPECT_THAT((*plugin)->Stderr(), HasSubstr("is used by two resources"));
}

}  // namespace
}  // namespace neuron
