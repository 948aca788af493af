#include "daemon/hal/nrt/sysfs_memory.h"

#include <array>
#include <filesystem>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "daemon/hal/nrt/internal/sysfs_attribute.h"

namespace neuron::rtd::hal::nrt {
namespace {

using Field = uint64_t SysfsMemoryUsage::*;

constexpr std::array<std::pair<const char*, Field>, 11> kCategories = {{
    {"tensors", &SysfsMemoryUsage::tensors},
    {"model_code", &SysfsMemoryUsage::model_code},
    {"constants", &SysfsMemoryUsage::constants},
    {"model_shared_scratchpad", &SysfsMemoryUsage::scratchpad},
    {"nonshared_scratchpad", &SysfsMemoryUsage::scratchpad},
    {"runtime_memory", &SysfsMemoryUsage::other},
    {"driver_memory", &SysfsMemoryUsage::other},
    {"collectives", &SysfsMemoryUsage::other},
    {"notifications", &SysfsMemoryUsage::other},
    {"dma_rings", &SysfsMemoryUsage::other},
    {"uncategorized", &SysfsMemoryUsage::other},
}};

}  // namespace

std::optional<SysfsMemoryUsage> ReadSysfsMemoryUsage(const std::string& device_dir,
                                                     std::span<const uint32_t> cores) {
  SysfsMemoryUsage usage;
  for (uint32_t core : cores) {
    const std::filesystem::path categories = std::filesystem::path(device_dir) /
                                             absl::StrCat("neuron_core", core) / "stats" /
                                             "memory_usage" / "device_mem";
    bool any = false;
    for (const auto& [name, field] : kCategories) {
      uint64_t bytes = 0;
      if (!absl::SimpleAtoi(internal::ReadSysfsAttribute(categories / name / "present"), &bytes)) {
        continue;
      }
      any = true;
      usage.*field += bytes;
    }
    if (!any) return std::nullopt;
  }
  return usage;
}

}  // namespace neuron::rtd::hal::nrt
