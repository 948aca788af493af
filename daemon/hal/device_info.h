// What the daemon knows about a Neuron device (one chip) and its cores.
// Plain data, independent of the backend that reports it.
#ifndef NEURON_RTD_DAEMON_HAL_DEVICE_INFO_H_
#define NEURON_RTD_DAEMON_HAL_DEVICE_INFO_H_

#include <cstdint>
#include <string>
#include <vector>

namespace neuron::rtd::hal {

enum class Architecture {
  kTrainium2,  // NeuronCore-v3
  kTrainium3,  // NeuronCore-v4
};

enum class BackendKind {
  kSim,       // simulated device, arithmetic on the host CPU
  kHardware,  // real Trainium through the Neuron driver
};

struct DeviceInfo {
  uint32_t index = 0;
  std::string instance_type;
  Architecture architecture = Architecture::kTrainium2;
  BackendKind backend = BackendKind::kSim;
  uint32_t physical_cores = 0;
  // Physical cores fused into one logical core (LNC): 1 or 2.
  uint32_t logical_nc_config = 1;
  // Host-wide index of the device's first logical core; its logical cores are
  // [first_core_index, first_core_index + logical_cores()).
  uint32_t first_core_index = 0;
  uint64_t hbm_total_bytes = 0;
  // Devices reachable directly over NeuronLink.
  std::vector<uint32_t> connected_devices;
  std::string bus_id;
  // Priority levels of a core's command queues: stream priorities run from
  // 0 (the default, lowest) to -(levels - 1) (highest), as CUDA's.
  uint32_t stream_priority_levels = 1;
  // Where this description came from (DeviceInfo.topology_source in
  // proto/neuron/rtd/v1/common.proto).
  std::string topology_source;

  uint32_t logical_cores() const { return physical_cores / logical_nc_config; }
};

}  // namespace neuron::rtd::hal

#endif  // NEURON_RTD_DAEMON_HAL_DEVICE_INFO_H_
