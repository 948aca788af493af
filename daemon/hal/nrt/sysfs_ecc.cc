#include "daemon/hal/nrt/sysfs_ecc.h"

#include <cstdint>
#include <filesystem>
#include <optional>

#include "absl/strings/numbers.h"
#include "daemon/hal/nrt/internal/sysfs_attribute.h"

namespace neuron::rtd::hal::nrt {
namespace {

std::optional<uint64_t> ReadCount(const std::filesystem::path& path) {
  uint64_t count = 0;
  if (!absl::SimpleAtoi(internal::ReadSysfsAttribute(path), &count)) return std::nullopt;
  return count;
}

}  // namespace

EccCounts ReadSysfsEcc(const std::string& device_dir) {
  const std::filesystem::path hardware = std::filesystem::path(device_dir) / "stats" / "hardware";
  return {.mem_corrected = ReadCount(hardware / "mem_ecc_corrected"),
          .mem_uncorrected = ReadCount(hardware / "mem_ecc_uncorrected"),
          .mem_repairable_uncorrected = ReadCount(hardware / "mem_ecc_repairable_uncorrected"),
          .sram_corrected = ReadCount(hardware / "sram_ecc_corrected"),
          .sram_uncorrected = ReadCount(hardware / "sram_ecc_uncorrected")};
}

}  // namespace neuron::rtd::hal::nrt
