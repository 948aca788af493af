// How neuron-rtd-device-plugin names a core to the kubelet ("nc-<host-wide
// core index>"), shared by the plugin and by the exporter, which reads the
// same IDs back from the kubelet's pod resources.
#ifndef NEURON_RTD_K8S_CORE_DEVICE_IDS_H_
#define NEURON_RTD_K8S_CORE_DEVICE_IDS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace neuron_k8s {

// The resource the plugin advertises by default: AWS's name, so that
// existing pod specs work unchanged.
inline constexpr char kDefaultCoreResourceName[] = "aws.amazon.com/neuroncore";

std::string CoreDeviceId(uint32_t core);
// INVALID_ARGUMENT for an ID that is not one of ours.
absl::StatusOr<uint32_t> CoreOfDeviceId(std::string_view id);
// Sorted, without duplicates.
absl::StatusOr<std::vector<uint32_t>> CoresOfDeviceIds(const std::vector<std::string>& ids);

}  // namespace neuron_k8s

#endif  // NEURON_RTD_K8S_CORE_DEVICE_IDS_H_
