// Which pod holds which cores, as the kubelet's pod-resources API (v1,
// PodResourcesLister.List on /var/lib/kubelet/pod-resources/kubelet.sock)
// shows it: the device plugin deletes the grants of pods that are gone, the
// exporter labels per-core series with the pod that holds the core.
#ifndef NEURON_RTD_K8S_POD_RESOURCES_H_
#define NEURON_RTD_K8S_POD_RESOURCES_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace neuron_k8s {

// One container's cores of one resource.
struct ContainerCores {
  std::string pod;
  std::string pod_namespace;
  std::string container;
  // Sorted, without duplicates; never empty.
  std::vector<uint32_t> cores;
};

// Every container holding devices of `resource_name`, in the kubelet's
// order. Device IDs that are not ours ("nc-<core>") are skipped: only our
// plugin serves the resource, so they cannot name our cores. UNAVAILABLE
// (naming the socket) when the kubelet cannot be asked, DEADLINE_EXCEEDED
// past `deadline`. Blocks the calling thread up to `deadline`.
absl::StatusOr<std::vector<ContainerCores>> ListContainerCores(const std::string& socket_path,
                                                               std::string_view resource_name,
                                                               absl::Duration deadline);

}  // namespace neuron_k8s

#endif  // NEURON_RTD_K8S_POD_RESOURCES_H_
