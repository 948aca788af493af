// neuron-rtd-device-plugin's life with the kubelet: serve a DevicePlugin
// service per resource on a socket in the kubelet's device-plugin
// directory, register each, register again when the kubelet restarts (it
// deletes every socket there), keep the devices' health current, and delete
// the grants of pods that are gone (the kubelet never tells a plugin; its
// pod-resources API shows what is in use).
#ifndef NEURON_RTD_DEVICE_PLUGIN_PLUGIN_RUNNER_H_
#define NEURON_RTD_DEVICE_PLUGIN_PLUGIN_RUNNER_H_

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "client/device_plugin/device_health.h"
#include "client/device_plugin/device_plugin_service.h"
#include "client/k8s/device_ids.h"
#include "grpcpp/server.h"
#include "neuronrt/client.h"

namespace neuron_device_plugin {

// A resource the plugin advertises, and its socket (a file name in the
// kubelet's directory).
struct ServedResource {
  neuron_k8s::Resource resource;
  std::string endpoint;
};

struct PluginOptions {
  std::string kubelet_dir = "/var/lib/kubelet/device-plugins";
  // Each with an endpoint of its own; at most one of each unit (two names
  // for the same devices would be two pools the kubelet books apart).
  std::vector<ServedResource> resources = {
      {.resource = {.name = neuron_k8s::kDefaultCoreResourceName, .unit = neuron_k8s::Unit::kCore},
       .endpoint = "neuron-rtd-neuroncore.sock"}};
  // The kubelet's pod-resources socket; empty: no grant is ever deleted.
  std::string pod_resources_socket = "/var/lib/kubelet/pod-resources/kubelet.sock";
  // How often health, registration and grants are looked at.
  absl::Duration poll_interval = absl::Seconds(5);
  // A grant no pod uses is deleted once it is this old: Allocate creates it
  // before the kubelet lists the pod.
  absl::Duration gc_grace = absl::Seconds(60);
  ServiceOptions service;
};

// INVALID_ARGUMENT when `options` cannot be served: no resource, two of one
// unit, a name or endpoint used twice, an endpoint that is not a file name.
absl::Status ValidatePluginOptions(const PluginOptions& options);

// Thread-safety: Run on one thread; RequestStop from any (a signal thread).
class PluginRunner {
 public:
  PluginRunner(const neuronrt::Client& daemon, PluginOptions options);
  ~PluginRunner();

  // Until RequestStop; an error when a resource's socket cannot be served.
  absl::Status Run();
  void RequestStop();
  // Looks at the daemon (and updates every resource's devices) now rather
  // than at the next poll.
  void RequestLook();

 private:
  // One resource's service, socket and registration.
  struct Endpoint {
    ServedResource served;
    std::string socket_path;
    std::unique_ptr<DevicePluginService> service;
    std::unique_ptr<grpc::Server> server;
    ino_t registered_kubelet_inode = 0;
    bool registered = false;
    bool register_failing = false;
  };

  absl::Status Serve(Endpoint& endpoint);
  void StopServing(Endpoint& endpoint);
  absl::Status Register(Endpoint& endpoint);
  // Whether the kubelet restarted since the endpoint registered: its socket
  // is gone, or kubelet.sock is another file.
  bool KubeletRestarted(const Endpoint& endpoint) const;
  // Asks the daemon for its health, devices and the plugin's grants; the
  // last topology stands when it cannot be reached.
  void LookAtDaemon();
  // Deletes the plugin's grants that no pod uses.
  void CollectGrants();

  const neuronrt::Client& daemon_;
  const PluginOptions options_;
  const std::string kubelet_socket_;
  std::vector<Endpoint> endpoints_;
  DaemonView view_;
  // The plugin's grants at the last look; empty when it failed.
  std::vector<neuronrt::GrantInfo> grants_;
  absl::Mutex mutex_;
  bool stop_ ABSL_GUARDED_BY(mutex_) = false;
  bool look_requested_ ABSL_GUARDED_BY(mutex_) = false;
};

}  // namespace neuron_device_plugin

#endif  // NEURON_RTD_DEVICE_PLUGIN_PLUGIN_RUNNER_H_
