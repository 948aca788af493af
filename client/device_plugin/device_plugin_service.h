// The kubelet's DevicePlugin service for one resource: one device per
// logical core ("nc-<core>") or per Neuron device ("nd-<device>"), their
// health from neuron-rtd, and allocations served as grants (a socket
// directory with the cores and an HBM quota, mounted read-only into the
// container).
#ifndef NEURON_RTD_DEVICE_PLUGIN_DEVICE_PLUGIN_SERVICE_H_
#define NEURON_RTD_DEVICE_PLUGIN_DEVICE_PLUGIN_SERVICE_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "client/device_plugin/device_health.h"
#include "client/k8s/device_ids.h"
#include "k8s/deviceplugin/v1beta1/api.grpc.pb.h"
#include "neuronrt/client.h"

namespace neuron_device_plugin {

struct ServiceOptions {
  // Where the grant's directory appears in the container.
  std::string container_path = "/run/neuron-rtd";
  // The label of the grants the plugin makes: the ones it may delete.
  std::string grant_label = "neuron-rtd-device-plugin";
  // Called (on a gRPC thread) after Allocate or PreStartContainer made or
  // found a grant: the other resource must stop offering its cores at once,
  // not at the next poll.
  std::function<void()> on_grant = [] {};
};

// Thread-safety: the RPCs run on gRPC's threads; Update and Stop from any.
// Lifetime: the daemon's client outlives the service.
class DevicePluginService final : public v1beta1::DevicePlugin::Service {
 public:
  DevicePluginService(const neuronrt::Client& daemon, neuron_k8s::Resource resource,
                      ServiceOptions options);

  // The devices and their health as `view` shows them (ListedDevices);
  // ListAndWatch streams send the list again when it changed.
  void Update(const DaemonView& view);
  // Ends the ListAndWatch streams (the plugin stopping or re-registering).
  void Stop();

  grpc::Status GetDevicePluginOptions(grpc::ServerContext* context, const v1beta1::Empty* request,
                                      v1beta1::DevicePluginOptions* response) override;
  grpc::Status ListAndWatch(grpc::ServerContext* context, const v1beta1::Empty* request,
                            grpc::ServerWriter<v1beta1::ListAndWatchResponse>* writer) override;
  grpc::Status GetPreferredAllocation(grpc::ServerContext* context,
                                      const v1beta1::PreferredAllocationRequest* request,
                                      v1beta1::PreferredAllocationResponse* response) override;
  grpc::Status Allocate(grpc::ServerContext* context, const v1beta1::AllocateRequest* request,
                        v1beta1::AllocateResponse* response) override;
  grpc::Status PreStartContainer(grpc::ServerContext* context,
                                 const v1beta1::PreStartContainerRequest* request,
                                 v1beta1::PreStartContainerResponse* response) override;

 private:
  // The grant that serves these device IDs, created if it is not there.
  absl::StatusOr<neuronrt::GrantInfo> EnsureGrant(
      const google::protobuf::RepeatedPtrField<std::string>& device_ids);
  // The preferred device IDs for one container.
  absl::StatusOr<std::vector<std::string>> Preferred(
      const v1beta1::ContainerPreferredAllocationRequest& container);

  const neuronrt::Client& daemon_;
  const neuron_k8s::Resource resource_;
  const ServiceOptions options_;
  absl::Mutex mutex_;
  std::vector<neuronrt::DeviceInfo> topology_ ABSL_GUARDED_BY(mutex_);
  v1beta1::ListAndWatchResponse devices_ ABSL_GUARDED_BY(mutex_);
  uint64_t generation_ ABSL_GUARDED_BY(mutex_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mutex_) = false;
};

}  // namespace neuron_device_plugin

#endif  // NEURON_RTD_DEVICE_PLUGIN_DEVICE_PLUGIN_SERVICE_H_
