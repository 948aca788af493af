#include "client/device_plugin/device_plugin_service.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "client/device_plugin/allocation.h"
#include "client/k8s/core_device_ids.h"
#include "google/protobuf/util/message_differencer.h"

namespace neuron_device_plugin {
namespace {

constexpr char kHealthy[] = "Healthy";
constexpr char kUnhealthy[] = "Unhealthy";
// How often a ListAndWatch stream looks for a cancelled kubelet.
constexpr absl::Duration kWatchCheck = absl::Seconds(1);

grpc::Status ToGrpc(const absl::Status& status) {
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

}  // namespace

DevicePluginService::DevicePluginService(const neuronrt::Client& daemon, ServiceOptions options)
    : daemon_(daemon), options_(std::move(options)) {}

void DevicePluginService::Refresh() {
  absl::StatusOr<neuronrt::HealthInfo> health = daemon_.Health();
  absl::StatusOr<std::vector<neuronrt::DeviceInfo>> devices =
      health.ok() ? daemon_.ListDevices()
                  : absl::StatusOr<std::vector<neuronrt::DeviceInfo>>(health.status());
  absl::MutexLock lock(&mutex_);
  if (devices.ok()) topology_ = *devices;
  v1beta1::ListAndWatchResponse listed;
  for (const neuronrt::DeviceInfo& device : topology_) {
    for (uint32_t core : device.cores) {
      v1beta1::Device* entry = listed.add_devices();
      entry->set_id(neuron_k8s::CoreDeviceId(core));
      const bool healthy = devices.ok() && health->serving() && !device.core_faults.contains(core);
      entry->set_health(healthy ? kHealthy : kUnhealthy);
    }
  }
  if (google::protobuf::util::MessageDifferencer::Equals(listed, devices_)) return;
  devices_ = std::move(listed);
  ++generation_;
}

void DevicePluginService::Stop() {
  absl::MutexLock lock(&mutex_);
  stopping_ = true;
}

grpc::Status DevicePluginService::GetDevicePluginOptions(grpc::ServerContext*,
                                                         const v1beta1::Empty*,
                                                         v1beta1::DevicePluginOptions* response) {
  // PreStartContainer re-creates a grant before every container start: the
  // kubelet reuses Allocate's answer when a container restarts, also after
  // neuron-rtd restarted and lost its grants.
  response->set_pre_start_required(true);
  response->set_get_preferred_allocation_available(true);
  return grpc::Status::OK;
}

grpc::Status DevicePluginService::ListAndWatch(
    grpc::ServerContext* context, const v1beta1::Empty*,
    grpc::ServerWriter<v1beta1::ListAndWatchResponse>* writer) {
  uint64_t sent = 0;
  while (true) {
    v1beta1::ListAndWatchResponse update;
    {
      absl::MutexLock lock(&mutex_);
      auto changed = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) {
        return stopping_ || generation_ != sent;
      };
      mutex_.AwaitWithTimeout(absl::Condition(&changed), kWatchCheck);
      if (stopping_) return grpc::Status::OK;
      if (generation_ == sent) {
        if (context->IsCancelled()) return grpc::Status::CANCELLED;
        continue;
      }
      update = devices_;
      sent = generation_;
    }
    if (!writer->Write(update)) return grpc::Status::CANCELLED;
  }
}

grpc::Status DevicePluginService::GetPreferredAllocation(
    grpc::ServerContext*, const v1beta1::PreferredAllocationRequest* request,
    v1beta1::PreferredAllocationResponse* response) {
  std::vector<neuronrt::DeviceInfo> topology;
  {
    absl::MutexLock lock(&mutex_);
    topology = topology_;
  }
  for (const v1beta1::ContainerPreferredAllocationRequest& container :
       request->container_requests()) {
    absl::StatusOr<std::vector<uint32_t>> available = neuron_k8s::CoresOfDeviceIds(
        {container.available_deviceids().begin(), container.available_deviceids().end()});
    if (!available.ok()) return ToGrpc(available.status());
    absl::StatusOr<std::vector<uint32_t>> must = neuron_k8s::CoresOfDeviceIds(
        {container.must_include_deviceids().begin(), container.must_include_deviceids().end()});
    if (!must.ok()) return ToGrpc(must.status());
    if (container.allocation_size() < 0 ||
        static_cast<size_t>(container.allocation_size()) > available->size() + must->size()) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          absl::StrFormat("allocation size %d of %d available cores",
                                          container.allocation_size(), available->size()));
    }
    v1beta1::ContainerPreferredAllocationResponse* out = response->add_container_responses();
    for (uint32_t core : PreferredCores(topology, *available, *must,
                                        static_cast<size_t>(container.allocation_size()))) {
      out->add_deviceids(neuron_k8s::CoreDeviceId(core));
    }
  }
  return grpc::Status::OK;
}

absl::StatusOr<neuronrt::GrantInfo> DevicePluginService::EnsureGrant(
    const google::protobuf::RepeatedPtrField<std::string>& device_ids) {
  absl::StatusOr<std::vector<uint32_t>> cores =
      neuron_k8s::CoresOfDeviceIds({device_ids.begin(), device_ids.end()});
  if (!cores.ok()) return cores.status();
  if (cores->empty()) return absl::InvalidArgumentError("no devices to allocate");
  std::vector<neuronrt::DeviceInfo> topology;
  {
    absl::MutexLock lock(&mutex_);
    topology = topology_;
  }
  return daemon_.CreateGrant(GrantIdFor(*cores), *cores, HbmQuotaFor(topology, *cores),
                             options_.grant_label);
}

grpc::Status DevicePluginService::Allocate(grpc::ServerContext*,
                                           const v1beta1::AllocateRequest* request,
                                           v1beta1::AllocateResponse* response) {
  for (const v1beta1::ContainerAllocateRequest& container : request->container_requests()) {
    absl::StatusOr<neuronrt::GrantInfo> grant = EnsureGrant(container.devices_ids());
    if (!grant.ok()) return ToGrpc(grant.status());
    const ContainerGrant given = ContainerGrantFor(*grant, options_.container_path);
    v1beta1::ContainerAllocateResponse* out = response->add_container_responses();
    for (const auto& [name, value] : given.envs) (*out->mutable_envs())[name] = value;
    v1beta1::Mount* mount = out->add_mounts();
    mount->set_host_path(given.host_path);
    mount->set_container_path(given.container_path);
    mount->set_read_only(true);
  }
  return grpc::Status::OK;
}

grpc::Status DevicePluginService::PreStartContainer(
    grpc::ServerContext*, const v1beta1::PreStartContainerRequest* request,
    v1beta1::PreStartContainerResponse*) {
  absl::StatusOr<neuronrt::GrantInfo> grant = EnsureGrant(request->devices_ids());
  return grant.ok() ? grpc::Status::OK : ToGrpc(grant.status());
}

}  // namespace neuron_device_plugin
