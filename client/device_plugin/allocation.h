// The device plugin's decisions, apart from gRPC: which cores to prefer for a pod, the grant that serves an allocation and what
// the container receives.
#ifndef NEURON_RTD_DEVICE_PLUGIN_ALLOCATION_H_
#define NEURON_RTD_DEVICE_PLUGIN_ALLOCATION_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "client/k8s/device_ids.h"
#include "neuronrt/device_info.h"

namespace neuron_device_plugin {

// "4-7", "0,2,4-5": the NEURON_RT_VISIBLE_CORES form of sorted cores.
std::string CoreRanges(const std::vector<uint32_t>& cores);

// The grant that serves `indices` (sorted) of `unit`: cores "nc4-7",
// "nc0-1.4"; devices "nd0-3". The same devices give the same grant, so that
// a restarted plugin or a container restart finds it again. Past 63
// characters, a hash of the indices ("nc-h<16 hex>", "nd-h<16 hex>").
std::string GrantIdFor(neuron_k8s::Unit unit, const std::vector<uint32_t>& indices);
// The unit a grant of the plugin was made for, by its ID.
neuron_k8s::Unit UnitOfGrantId(std::string_view grant_id);

// The cores the plugin prefers for `size` of `available`, `must_include`
// first: the fewest devices, and on a device a contiguous run of cores
// (neighbours share a chip's memory and links), taking from the device that
// fits most tightly.
std::vector<uint32_t> PreferredCores(const std::vector<neuronrt::DeviceInfo>& devices,
                                     std::vector<uint32_t> available,
                                     std::vector<uint32_t> must_include, size_t size);

// The devices the plugin prefers for `size` of `available`, `must_include`
// first: a set of devices connected to each other (the device topology's
// links), the lowest such set when several are.
std::vector<uint32_t> PreferredDevices(const std::vector<neuronrt::DeviceInfo>& devices,
                                       const std::vector<uint32_t>& available,
                                       const std::vector<uint32_t>& must_include, size_t size);

// Each core's share of its device's HBM, summed over `cores`: the grant's
// quota.
uint64_t HbmQuotaFor(const std::vector<neuronrt::DeviceInfo>& devices,
                     const std::vector<uint32_t>& cores);

// What a container receives for a grant.
struct ContainerGrant {
  std::map<std::string, std::string> envs;
  std::string host_path;       // the grant's directory
  std::string container_path;  // where it is mounted, read-only
};
ContainerGrant ContainerGrantFor(const neuronrt::GrantInfo& grant,
                                 const std::string& container_path);

}  // namespace neuron_device_plugin

#endif  // NEURON_RTD_DEVICE_PLUGIN_ALLOCATION_H_
