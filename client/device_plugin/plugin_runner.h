// neuron-rtd-device-plugin's life with the kubelet: serve the DevicePlugin
// service on a socket in the kubelet's device-plugin directory, register,
// register again when the kubelet restarts (it deletes every socket there),
// keep the devices' health current, and delete the grants of pods that are
// gone (the kubelet never tells a plugin; its pod-resources API shows what
// is in use).
#ifndef NEURON_RTD_DEVICE_PLUGIN_PLUGIN_RUNNER_H_
#define NEURON_RTD_DEVICE_PLUGIN_PLUGIN_RUNNER_H_

#include <sys/types.h>

#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "client/device_plugin/device_plugin_service.h"
#include "client/k8s/core_device_ids.h"
#include "grpcpp/server.h"
#include "neuronrt/client.h"

namespace neuron_device_plugin {

struct PluginOptions {
  std::string kubelet_dir = "/var/lib/kubelet/device-plugins";
  // The plugin's socket, a file name in kubelet_dir.
  std::string endpoint = "neuron-rtd-neuroncore.sock";
  std::string resource_name = neuron_k8s::kDefaultCoreResourceName;
  // The kubelet's pod-resources socket; empty: no grant is ever deleted.
  std::string pod_resources_socket = "/var/lib/kubelet/pod-resources/kubelet.sock";
  // How often health, registration and grants are looked at.
  absl::Duration poll_interval = absl::Seconds(5);
  // A grant no pod uses is deleted once it is this old: Allocate creates it
  // before the kubelet lists the pod.
  absl::Duration gc_grace = absl::Seconds(60);
  ServiceOptions service;
};

// Thread-safety: Run on one thread; RequestStop from any (a signal thread).
class PluginRunner {
 public:
  PluginRunner(const neuronrt::Client& daemon, PluginOptions options);
  ~PluginRunner();

  // Until RequestStop; an error when the plugin's socket cannot be served.
  absl::Status Run();
  void RequestStop();

 private:
  absl::Status Serve();
  void StopServing();
  absl::Status Register();
  // Whether the kubelet restarted since the last registration: our socket
  // is gone, or kubelet.sock is another file.
  bool KubeletRestarted() const;
  // Deletes the plugin's grants that no pod uses.
  void CollectGrants();

  const neuronrt::Client& daemon_;
  const PluginOptions options_;
  const std::string socket_path_;
  const std::string kubelet_socket_;
  std::unique_ptr<DevicePluginService> service_;
  std::unique_ptr<grpc::Server> server_;
  ino_t registered_kubelet_inode_ = 0;
  bool registered_ = false;
  bool register_failing_ = false;
  absl::Mutex mutex_;
  bool stop_ ABSL_GUARDED_BY(mutex_) = false;
};

}  // namespace neuron_device_plugin

#endif  // NEURON_RTD_DEVICE_PLUGIN_PLUGIN_RUNNER_H_
