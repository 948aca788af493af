// The Neuron devices of this host as the Neuron driver describes them in
// sysfs (/sys/devices/virtual/neuron_device/neuron<N>/), as neuron-ls reads
// them: the chip's name, its physical cores and the chips it reaches over
// NeuronLink. libnrt reports none of this.
//
// Formats (driver 2.24 to 2.30; 2.31 moved some nodes, so every file is
// optional): `core_count` a decimal without a newline (root-only before
// driver 2.28: then the neuron_core<C> directories are counted);
// `connected_devices` decimals joined by ", "; `info/architecture/
// {device_name,instance_type,arch_type}` a word each ("Trainium2", "Trn2",
// "NDv3").
#ifndef NEURON_RTD_DAEMON_HAL_NRT_SYSFS_TOPOLOGY_H_
#define NEURON_RTD_DAEMON_HAL_NRT_SYSFS_TOPOLOGY_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace neuron::rtd::hal::nrt {

inline constexpr char kNeuronSysfsRoot[] = "/sys/devices/virtual/neuron_device";

struct SysfsDevice {
  // The driver's device number (neuron<N>, /dev/neuron<N>), which libnrt's
  // core numbering follows: chip N holds physical cores
  // [N * physical_cores, (N + 1) * physical_cores).
  uint32_t index = 0;
  uint32_t physical_cores = 0;
  // "Trainium2"; empty when unreadable.
  std::string device_name;
  // The family, "Trn2"; empty when unreadable.
  std::string instance_type;
  std::vector<uint32_t> connected_devices;
};

// Every neuron<N> under `root`, by N. NOT_FOUND when there is none (no
// driver, or sysfs not mounted here, as in many containers); a device whose
// cores cannot be counted is left out.
absl::StatusOr<std::map<uint32_t, SysfsDevice>> ReadSysfsTopology(const std::string& root);

}  // namespace neuron::rtd::hal::nrt

#endif  // NEURON_RTD_DAEMON_HAL_NRT_SYSFS_TOPOLOGY_H_
