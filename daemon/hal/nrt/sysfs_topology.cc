#include "daemon/hal/nrt/sysfs_topology.h"

#include <filesystem>
#include <system_error>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "daemon/hal/nrt/internal/sysfs_attribute.h"

namespace neuron::rtd::hal::nrt {
namespace {

namespace fs = std::filesystem;

// "neuron12" -> 12.
bool DeviceNumber(const std::string& name, absl::string_view prefix, uint32_t* number) {
  return absl::StartsWith(name, prefix) && name.size() > prefix.size() &&
         absl::SimpleAtoi(absl::string_view(name).substr(prefix.size()), number) &&
         absl::StrCat(prefix, *number) == name;
}

uint32_t CountCoreDirectories(const fs::path& device) {
  uint32_t count = 0;
  std::error_code error;
  for (const fs::directory_entry& entry : fs::directory_iterator(device, error)) {
    uint32_t core = 0;
    if (entry.is_directory(error) &&
        DeviceNumber(entry.path().filename().string(), "neuron_core", &core)) {
      ++count;
    }
  }
  return count;
}

}  // namespace

absl::StatusOr<std::map<uint32_t, SysfsDevice>> ReadSysfsTopology(const std::string& root) {
  std::map<uint32_t, SysfsDevice> devices;
  std::error_code error;
  for (const fs::directory_entry& entry : fs::directory_iterator(root, error)) {
    uint32_t index = 0;
    if (!DeviceNumber(entry.path().filename().string(), "neuron", &index)) continue;
    const fs::path& path = entry.path();
    SysfsDevice device{.index = index};
    if (!absl::SimpleAtoi(internal::ReadSysfsAttribute(path / "core_count"), &device.physical_cores)) {
      device.physical_cores = CountCoreDirectories(path);
    }
    if (device.physical_cores == 0) continue;
    device.device_name = internal::ReadSysfsAttribute(path / "info" / "architecture" / "device_name");
    device.instance_type = internal::ReadSysfsAttribute(path / "info" / "architecture" / "instance_type");
    for (absl::string_view peer :
         absl::StrSplit(internal::ReadSysfsAttribute(path / "connected_devices"), ',', absl::SkipWhitespace())) {
      uint32_t number = 0;
      if (absl::SimpleAtoi(absl::StripAsciiWhitespace(peer), &number)) {
        device.connected_devices.push_back(number);
      }
    }
    devices.emplace(index, std::move(device));
  }
  if (devices.empty()) {
    return absl::NotFoundError(
        error ? absl::StrFormat("cannot read %s: %s", root, error.message())
              : absl::StrFormat("no Neuron device in %s", root));
  }
  return devices;
}

}  // namespace neuron::rtd::hal::nrt
