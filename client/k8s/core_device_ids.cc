#include "client/k8s/core_device_ids.h"

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"

namespace neuron_k8s {
namespace {

constexpr std::string_view kDeviceIdPrefix = "nc-";

}  // namespace

std::string CoreDeviceId(uint32_t core) { return absl::StrFormat("nc-%d", core); }

absl::StatusOr<uint32_t> CoreOfDeviceId(std::string_view id) {
  uint32_t core = 0;
  if (!id.starts_with(kDeviceIdPrefix) ||
      !absl::SimpleAtoi(absl::string_view(id.data() + kDeviceIdPrefix.size(),
                                          id.size() - kDeviceIdPrefix.size()),
                        &core) ||
      CoreDeviceId(core) != id) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "device ID \"%s\" is not one of neuron-rtd-device-plugin's (nc-<core>)",
        std::string(id.substr(0, 64))));
  }
  return core;
}

absl::StatusOr<std::vector<uint32_t>> CoresOfDeviceIds(const std::vector<std::string>& ids) {
  std::vector<uint32_t> cores;
  for (const std::string& id : ids) {
    absl::StatusOr<uint32_t> core = CoreOfDeviceId(id);
    if (!core.ok()) return core.status();
    cores.push_back(*core);
  }
  std::sort(cores.begin(), cores.end());
  cores.erase(std::unique(cores.begin(), cores.end()), cores.end());
  return cores;
}

}  // namespace neuron_k8s
