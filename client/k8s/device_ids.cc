#include "client/k8s/device_ids.h"

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"

namespace neuron_k8s {
namespace {

std::string_view PrefixOf(Unit unit) { return unit == Unit::kCore ? "nc-" : "nd-"; }

}  // namespace

std::string DeviceId(Unit unit, uint32_t index) {
  return absl::StrFormat("%s%d", PrefixOf(unit), index);
}

absl::StatusOr<uint32_t> IndexOfDeviceId(Unit unit, std::string_view id) {
  const std::string_view prefix = PrefixOf(unit);
  uint32_t index = 0;
  if (!id.starts_with(prefix) ||
      !absl::SimpleAtoi(absl::string_view(id.data() + prefix.size(), id.size() - prefix.size()),
                        &index) ||
      DeviceId(unit, index) != id) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "device ID \"%s\" is not one of neuron-rtd-device-plugin's (%s<%s>)",
        std::string(id.substr(0, 64)), prefix, unit == Unit::kCore ? "core" : "device"));
  }
  return index;
}

absl::StatusOr<std::vector<uint32_t>> IndicesOfDeviceIds(Unit unit,
                                                         const std::vector<std::string>& ids) {
  std::vector<uint32_t> indices;
  for (const std::string& id : ids) {
    absl::StatusOr<uint32_t> index = IndexOfDeviceId(unit, id);
    if (!index.ok()) return index.status();
    indices.push_back(*index);
  }
  std::sort(indices.begin(), indices.end());
  indices.erase(std::unique(indices.begin(), indices.end()), indices.end());
  return indices;
}

absl::StatusOr<std::vector<uint32_t>> CoresOfDevices(
    const std::vector<neuronrt::DeviceInfo>& topology, const std::vector<uint32_t>& device_indices) {
  std::vector<uint32_t> cores;
  for (uint32_t index : device_indices) {
    auto device = std::find_if(topology.begin(), topology.end(),
                               [&](const neuronrt::DeviceInfo& info) { return info.index == index; });
    if (device == topology.end()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "device %s is not one of this host's %d Neuron devices", DeviceId(Unit::kDevice, index),
          topology.size()));
    }
    cores.insert(cores.end(), device->cores.begin(), device->cores.end());
  }
  std::sort(cores.begin(), cores.end());
  cores.erase(std::unique(cores.begin(), cores.end()), cores.end());
  return cores;
}

}  // namespace neuron_k8s
