#include "client/device_plugin/device_health.h"

#include <algorithm>

namespace neuron_device_plugin {
namespace {

constexpr char kHealthy[] = "Healthy";
constexpr char kUnhealthy[] = "Unhealthy";

void Add(neuron_k8s::Unit unit, uint32_t index, bool healthy,
         v1beta1::ListAndWatchResponse& listed) {
  v1beta1::Device* entry = listed.add_devices();
  entry->set_id(neuron_k8s::DeviceId(unit, index));
  entry->set_health(healthy ? kHealthy : kUnhealthy);
}

}  // namespace

v1beta1::ListAndWatchResponse ListedDevices(neuron_k8s::Unit unit, const DaemonView& view) {
  v1beta1::ListAndWatchResponse listed;
  for (const neuronrt::DeviceInfo& device : view.devices) {
    auto usable = [&](uint32_t core, const std::set<uint32_t>& held_by_the_other_resource) {
      return view.serving && !device.core_faults.contains(core) &&
             !held_by_the_other_resource.contains(core);
    };
    if (unit == neuron_k8s::Unit::kCore) {
      for (uint32_t core : device.cores) {
        Add(unit, core, usable(core, view.granted_as_devices), listed);
      }
    } else {
      const bool healthy =
          !device.cores.empty() &&
          std::all_of(device.cores.begin(), device.cores.end(),
                      [&](uint32_t core) { return usable(core, view.granted_as_cores); });
      Add(unit, device.index, healthy, listed);
    }
  }
  return listed;
}

}  // namespace neuron_device_plugin
