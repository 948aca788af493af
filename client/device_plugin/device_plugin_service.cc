#include "client/device_plugin/device_plugin_service.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "client/device_plugin/allocation.h"
#include "google/protobuf/util/message_differencer.h"

namespace neuron_device_plugin {
namespace {

// How often a ListAndWatch stream looks for a cancelled kubelet.
constexpr absl::Duration kWatchCheck = absl::Seconds(1);

grpc::Status ToGrpc(const absl::Status& status) {
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

}  // namespace

DevicePluginService::DevicePluginService(const neuronrt::Client& daemon,
                                         neuron_k8s::Resource resource, ServiceOptions options)
    : daemon_(daemon), resource_(std::move(resource)), options_(std::move(options)) {}

void DevicePluginService::Update(const DaemonView& view) {
  v1beta1::ListAndWatchResponse listed = ListedDevices(resource_.unit, view);
  absl::MutexLock lock(&mutex_);
  topology_ = view.devices;
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

absl::StatusOr<std::vector<std::string>> DevicePluginService::Preferred(
    const v1beta1::ContainerPreferredAllocationRequest& container) {
  std::vector<neuronrt::DeviceInfo> topology;
  {
    absl::MutexLock lock(&mutex_);
    topology = topology_;
  }
  absl::StatusOr<std::vector<uint32_t>> available = neuron_k8s::IndicesOfDeviceIds(
      resource_.unit,
      {container.available_deviceids().begin(), container.available_deviceids().end()});
  if (!available.ok()) return available.status();
  absl::StatusOr<std::vector<uint32_t>> must = neuron_k8s::IndicesOfDeviceIds(
      resource_.unit,
      {container.must_include_deviceids().begin(), container.must_include_deviceids().end()});
  if (!must.ok()) return must.status();
  if (container.allocation_size() < 0 ||
      static_cast<size_t>(container.allocation_size()) > available->size() + must->size()) {
    return absl::InvalidArgumentError(absl::StrFormat("allocation size %d of %d available devices",
                                                      container.allocation_size(),
                                                      available->size()));
  }
  const size_t size = static_cast<size_t>(container.allocation_size());
  const std::vector<uint32_t> chosen = resource_.unit == neuron_k8s::Unit::kCore
                                           ? PreferredCores(topology, *available, *must, size)
                                           : PreferredDevices(topology, *available, *must, size);
  std::vector<std::string> ids;
  for (uint32_t index : chosen) ids.push_back(neuron_k8s::DeviceId(resource_.unit, index));
  return ids;
}

grpc::Status DevicePluginService::GetPreferredAllocation(
    grpc::ServerContext*, const v1beta1::PreferredAllocationRequest* request,
    v1beta1::PreferredAllocationResponse* response) {
  for (const v1beta1::ContainerPreferredAllocationRequest& container :
       request->container_requests()) {
    absl::StatusOr<std::vector<std::string>> ids = Preferred(container);
    if (!ids.ok()) return ToGrpc(ids.status());
    v1beta1::ContainerPreferredAllocationResponse* out = response->add_container_responses();
    for (const std::string& id : *ids) out->add_deviceids(id);
  }
  return grpc::Status::OK;
}

absl::StatusOr<neuronrt::GrantInfo> DevicePluginService::EnsureGrant(
    const google::protobuf::RepeatedPtrField<std::string>& device_ids) {
  absl::StatusOr<std::vector<uint32_t>> indices =
      neuron_k8s::IndicesOfDeviceIds(resource_.unit, {device_ids.begin(), device_ids.end()});
  if (!indices.ok()) return indices.status();
  if (indices->empty()) return absl::InvalidArgumentError("no devices to allocate");
  std::vector<neuronrt::DeviceInfo> topology;
  {
    absl::MutexLock lock(&mutex_);
    topology = topology_;
  }
  absl::StatusOr<std::vector<uint32_t>> cores =
      resource_.unit == neuron_k8s::Unit::kCore ? *indices
                                                : neuron_k8s::CoresOfDevices(topology, *indices);
  if (!cores.ok()) return cores.status();
  absl::StatusOr<neuronrt::GrantInfo> grant =
      daemon_.CreateGrant(GrantIdFor(resource_.unit, *indices), *cores,
                          HbmQuotaFor(topology, *cores), options_.grant_label);
  if (grant.ok()) options_.on_grant();
  return grant;
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
