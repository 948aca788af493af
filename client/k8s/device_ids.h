// How neuron-rtd-device-plugin names what it advertises to the kubelet:
// NeuronCores as "nc-<host-wide core index>" and whole Neuron devices as
// "nd-<device index>". Shared by the plugin and by the exporter, which reads
// the same IDs back from the kubelet's pod resources.
#ifndef NEURON_RTD_K8S_DEVICE_IDS_H_
#define NEURON_RTD_K8S_DEVICE_IDS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "neuronrt/device_info.h"

namespace neuron_k8s {

// The resources the plugin can advertise by default: AWS's names, so that
// existing pod specs work unchanged.
inline constexpr char kDefaultCoreResourceName[] = "aws.amazon.com/neuroncore";
inline constexpr char kDefaultDeviceResourceName[] = "aws.amazon.com/neuron";

// What one kubelet device of a resource stands for.
enum class Unit { kCore, kDevice };

// An extended resource the plugin serves.
struct Resource {
  std::string name;
  Unit unit = Unit::kCore;
};

std::string DeviceId(Unit unit, uint32_t index);
// INVALID_ARGUMENT for an ID that is not one of ours for `unit`.
absl::StatusOr<uint32_t> IndexOfDeviceId(Unit unit, std::string_view id);
// Sorted, without duplicates.
absl::StatusOr<std::vector<uint32_t>> IndicesOfDeviceIds(Unit unit,
                                                         const std::vector<std::string>& ids);

// Every core of `device_indices` (sorted), as `topology` lists them;
// INVALID_ARGUMENT naming a device the topology does not have.
absl::StatusOr<std::vector<uint32_t>> CoresOfDevices(
    const std::vector<neuronrt::DeviceInfo>& topology, const std::vector<uint32_t>& device_indices);

}  // namespace neuron_k8s

#endif  // NEURON_RTD_K8S_DEVICE_IDS_H_
