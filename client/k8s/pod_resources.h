// Which pod holds which of the plugin's devices, as the kubelet's
// pod-resources API (v1, PodResourcesLister.List on
// /var/lib/kubelet/pod-resources/kubelet.sock) shows it: the device plugin
// deletes the grants of pods that are gone, the exporter labels per-core
// series with the pod that holds the core.
#ifndef NEURON_RTD_K8S_POD_RESOURCES_H_
#define NEURON_RTD_K8S_POD_RESOURCES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "client/k8s/device_ids.h"

namespace neuron_k8s {

// One container's devices of one resource.
struct ContainerDevices {
  std::string pod;
  std::string pod_namespace;
  std::string container;
  Resource resource;
  // Core or device indices (as resource.unit says): sorted, without
  // duplicates, never empty.
  std::vector<uint32_t> indices;
};

// Every container holding devices of `resources`, in the kubelet's order,
// one entry per container and resource. Device IDs that are not ours
// ("nc-<core>", "nd-<device>") are skipped: only our plugin serves these
// resources, so they cannot name our hardware. UNAVAILABLE (naming the
// socket) when the kubelet cannot be asked, DEADLINE_EXCEEDED past
// `deadline`. Blocks the calling thread up to `deadline`.
absl::StatusOr<std::vector<ContainerDevices>> ListContainerDevices(
    const std::string& socket_path, const std::vector<Resource>& resources,
    absl::Duration deadline);

}  // namespace neuron_k8s

#endif  // NEURON_RTD_K8S_POD_RESOURCES_H_
