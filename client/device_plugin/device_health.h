// What the plugin's resources show the kubelet: their devices and each
// one's health, from one look at the daemon.
#ifndef NEURON_RTD_DEVICE_PLUGIN_DEVICE_HEALTH_H_
#define NEURON_RTD_DEVICE_PLUGIN_DEVICE_HEALTH_H_

#include <cstdint>
#include <set>
#include <vector>

#include "client/k8s/device_ids.h"
#include "k8s/deviceplugin/v1beta1/api.pb.h"
#include "neuronrt/device_info.h"

namespace neuron_device_plugin {

struct DaemonView {
  // The daemon answered and serves (not draining or stopping).
  bool serving = false;
  // The last topology it gave (kept while it cannot be reached: the kubelet
  // must see the same devices, Unhealthy).
  std::vector<neuronrt::DeviceInfo> devices;
  // Cores the plugin's grants hold, by the unit they were granted as.
  std::set<uint32_t> granted_as_cores;
  std::set<uint32_t> granted_as_devices;
};

// The kubelet's devices of `unit`. A core is Healthy when the daemon serves,
// the core has no fault, and no device grant holds it; a device when the
// daemon serves, none of its cores has a fault, and no core grant holds any
// of them. The kubelet sees the core and device resources as independent
// pools; showing what the other resource holds as Unhealthy keeps it from
// handing the same core to two pods (but for allocations made between two
// looks at the daemon: docs/operations.md).
v1beta1::ListAndWatchResponse ListedDevices(neuron_k8s::Unit unit, const DaemonView& view);

}  // namespace neuron_device_plugin

#endif  // NEURON_RTD_DEVICE_PLUGIN_DEVICE_HEALTH_H_
