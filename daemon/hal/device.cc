#include "daemon/hal/device.h"

#include <cstring>

#include "absl/strings/str_format.h"

namespace neuron::rtd::hal {

absl::Status CheckFill(uint64_t bytes, uint32_t pattern_bytes) {
  if (pattern_bytes != 1 && pattern_bytes != 2 && pattern_bytes != 4 && pattern_bytes != 8) {
    return absl::InvalidArgumentError(
        absl::StrFormat("fill pattern width %d is not 1, 2, 4 or 8", pattern_bytes));
  }
  if (bytes % pattern_bytes != 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "fill of %d bytes is not a multiple of its %d-byte pattern", bytes, pattern_bytes));
  }
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> BuiltinAddF32Count(std::span<const uint64_t> arguments,
                                            std::span<const uint8_t> scalars) {
  if (arguments.size() != 3 || scalars.size() != sizeof(uint64_t)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "builtin add_f32 takes 3 arguments and an 8-byte element count, got %d and %d bytes",
        arguments.size(), scalars.size()));
  }
  uint64_t count = 0;
  std::memcpy(&count, scalars.data(), sizeof(count));
  if (count > static_cast<uint64_t>(INT64_MAX) / sizeof(float)) {
    return absl::InvalidArgumentError(absl::StrFormat("element count %d is too large", count));
  }
  return count;
}

uint32_t Backend::total_logical_cores() const {
  uint32_t total = 0;
  for (const Device* device : devices()) total += device->info().logical_cores();
  return total;
}

std::string_view ArchitectureName(Architecture architecture) {
  switch (architecture) {
    case Architecture::kTrainium2:
      return "trainium2";
    case Architecture::kTrainium3:
      return "trainium3";
  }
  return "unknown";
}

std::string_view BackendKindName(BackendKind kind) {
  switch (kind) {
    case BackendKind::kSim:
      return "sim";
    case BackendKind::kHardware:
      return "hardware";
  }
  return "unknown";
}

}  // namespace neuron::rtd::hal
