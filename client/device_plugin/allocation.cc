#include "client/device_plugin/allocation.h"

#include <xxhash.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace neuron_device_plugin {
namespace {

constexpr size_t kMaxGrantIdBytes = 63;
constexpr std::string_view kCoreGrantPrefix = "nc";
constexpr std::string_view kDeviceGrantPrefix = "nd";

// Runs of consecutive cores: {first, last}.
std::vector<std::pair<uint32_t, uint32_t>> Runs(const std::vector<uint32_t>& cores) {
  std::vector<std::pair<uint32_t, uint32_t>> runs;
  for (uint32_t core : cores) {
    if (!runs.empty() && runs.back().second + 1 == core) {
      runs.back().second = core;
    } else {
      runs.emplace_back(core, core);
    }
  }
  return runs;
}

std::string RunsText(const std::vector<uint32_t>& cores, std::string_view separator) {
  std::vector<std::string> parts;
  for (const auto& [first, last] : Runs(cores)) {
    parts.push_back(first == last ? absl::StrFormat("%d", first)
                                  : absl::StrFormat("%d-%d", first, last));
  }
  return absl::StrJoin(parts, absl::string_view(separator.data(), separator.size()));
}

// The cores of `device` in `pool`, in order.
std::vector<uint32_t> OnDevice(const neuronrt::DeviceInfo& device, const std::set<uint32_t>& pool) {
  std::vector<uint32_t> cores;
  for (uint32_t core : device.cores) {
    if (pool.contains(core)) cores.push_back(core);
  }
  return cores;
}

// `count` of `cores` (sorted), a contiguous run if there is one (the
// lowest), else the lowest cores.
std::vector<uint32_t> Pick(const std::vector<uint32_t>& cores, size_t count) {
  for (size_t start = 0; start + count <= cores.size(); ++start) {
    if (cores[start + count - 1] - cores[start] == count - 1) {
      return {cores.begin() + start, cores.begin() + start + count};
    }
  }
  return {cores.begin(), cores.begin() + std::min(count, cores.size())};
}

}  // namespace

std::string CoreRanges(const std::vector<uint32_t>& cores) { return RunsText(cores, ","); }

std::string GrantIdFor(neuron_k8s::Unit unit, const std::vector<uint32_t>& indices) {
  const std::string_view prefix = unit == neuron_k8s::Unit::kCore ? kCoreGrantPrefix
                                                                  : kDeviceGrantPrefix;
  std::string id = std::string(prefix) + RunsText(indices, ".");
  if (id.size() <= kMaxGrantIdBytes) return id;
  const uint64_t hash = XXH64(indices.data(), indices.size() * sizeof(uint32_t), 0);
  return absl::StrFormat("%s-h%016x", prefix, hash);
}

neuron_k8s::Unit UnitOfGrantId(std::string_view grant_id) {
  return grant_id.starts_with(kDeviceGrantPrefix) ? neuron_k8s::Unit::kDevice
                                                  : neuron_k8s::Unit::kCore;
}

std::vector<uint32_t> PreferredCores(const std::vector<neuronrt::DeviceInfo>& devices,
                                     std::vector<uint32_t> available,
                                     std::vector<uint32_t> must_include, size_t size) {
  std::set<uint32_t> chosen(must_include.begin(), must_include.end());
  std::set<uint32_t> pool(available.begin(), available.end());
  for (uint32_t core : chosen) pool.erase(core);
  while (chosen.size() < size && !pool.empty()) {
    const size_t needed = size - chosen.size();
    // The device to take from: one that already has chosen cores, then the
    // tightest that holds all that is needed, then the one with the most.
    const neuronrt::DeviceInfo* best = nullptr;
    auto rank = [&](const neuronrt::DeviceInfo& device) {
      const size_t free = OnDevice(device, pool).size();
      const bool has_chosen = std::any_of(device.cores.begin(), device.cores.end(),
                                          [&](uint32_t core) { return chosen.contains(core); });
      const bool fits = free >= needed;
      // Lower is better.
      return std::make_tuple(!has_chosen, !fits, fits ? free : ~free);
    };
    for (const neuronrt::DeviceInfo& device : devices) {
      if (OnDevice(device, pool).empty()) continue;
      if (best == nullptr || rank(device) < rank(*best)) best = &device;
    }
    if (best == nullptr) break;  // cores no device lists
    for (uint32_t core : Pick(OnDevice(*best, pool), needed)) {
      chosen.insert(core);
      pool.erase(core);
    }
  }
  // Cores no device lists, last.
  for (auto it = pool.begin(); chosen.size() < size && it != pool.end(); ++it) chosen.insert(*it);
  return {chosen.begin(), chosen.end()};
}

std::vector<uint32_t> PreferredDevices(const std::vector<neuronrt::DeviceInfo>& devices,
                                       const std::vector<uint32_t>& available,
                                       const std::vector<uint32_t>& must_include, size_t size) {
  std::map<uint32_t, std::vector<uint32_t>> links;
  for (const neuronrt::DeviceInfo& device : devices) links[device.index] = device.connected_devices;
  const std::set<uint32_t> pool(available.begin(), available.end());
  // Grown from `seed` one linked device at a time (the lowest first); then
  // the lowest of the pool when no free device links to the set.
  auto grow = [&](std::set<uint32_t> chosen) {
    bool connected = true;
    while (chosen.size() < size) {
      std::optional<uint32_t> next;
      for (uint32_t device : chosen) {
        for (uint32_t neighbour : links[device]) {
          if (pool.contains(neighbour) && !chosen.contains(neighbour) &&
              (!next || neighbour < *next)) {
            next = neighbour;
          }
        }
      }
      if (!next) {
        for (uint32_t device : pool) {
          if (!chosen.contains(device)) {
            next = device;
            break;
          }
        }
        if (!next) break;
        connected = connected && chosen.empty();
      }
      chosen.insert(*next);
    }
    return std::make_pair(connected, chosen);
  };
  if (size == 0) return {};
  const std::set<uint32_t> must(must_include.begin(), must_include.end());
  if (!must.empty() || pool.empty()) {
    const std::set<uint32_t> chosen = grow(must).second;
    return {chosen.begin(), chosen.end()};
  }
  // Each free device as the seed: the first that grows a connected set.
  std::set<uint32_t> fallback;
  for (uint32_t seed : pool) {
    auto [connected, chosen] = grow({seed});
    if (connected) return {chosen.begin(), chosen.end()};
    if (fallback.empty()) fallback = std::move(chosen);
  }
  return {fallback.begin(), fallback.end()};
}

uint64_t HbmQuotaFor(const std::vector<neuronrt::DeviceInfo>& devices,
                     const std::vector<uint32_t>& cores) {
  uint64_t quota = 0;
  for (const neuronrt::DeviceInfo& device : devices) {
    if (device.cores.empty()) continue;
    const uint64_t share = device.hbm_total_bytes / device.cores.size();
    for (uint32_t core : device.cores) {
      if (std::binary_search(cores.begin(), cores.end(), core)) quota += share;
    }
  }
  return quota;
}

ContainerGrant ContainerGrantFor(const neuronrt::GrantInfo& grant,
                                 const std::string& container_path) {
  return ContainerGrant{
      .envs = {{"NEURON_RTD_ADDRESS", "unix:" + container_path + "/neuron-rtd.sock"},
               {"NEURON_RT_VISIBLE_CORES", CoreRanges(grant.cores)},
               {"NEURON_RTD_GRANT", grant.grant_id}},
      .host_path = grant.directory,
      .container_path = container_path};
}

}  // namespace neuron_device_plugin
