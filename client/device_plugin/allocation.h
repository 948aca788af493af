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
#include "neuronrt/device_info.h"

namespace neuron_device_plugin {

// "4-7", "0,2,4-5": the NEURON_RT_VISIBLE_CORES form of sorted cores.
std::string CoreRanges(const std::vector<uint32_t>& cores);

// The grant that serves `cores` ("nc4-7", "nc0-1.4"): the same cores give
// the same grant, so that a restarted plugin or a container restart finds
// it again. Past 63 characters, a hash of the cores ("nc-h<16 hex>").
std::string GrantIdFor(const std::vector<uint32_t>& cores);
// The prefix of every grant the plugin makes (and may delete).
inline constexpr std::string_view kGrantIdPrefix = "nc";

// The cores the plugin prefers for `size` of `available`, `must_include`
// first: the fewest devices, and on a device a contiguous run of cores
// (neighbours share a chip's memory and links), taking from the device that
// fits most tightly.
std::vector<uint32_t> PreferredCores(const std::vector<neuronrt::DeviceInfo>& devices,
                                     std::vector<uint32_t> available,
                                     std::vector<uint32_t> must_include, size_t size);

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
