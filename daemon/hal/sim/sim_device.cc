#include "daemon/hal/sim/sim_device.h"

#include <cstring>

#include "absl/strings/str_format.h"
#include "daemon/hal/sim/sim_executable.h"
#include "daemon/hal/sim/aten_kernels.h"

namespace neuron::rtd::hal::sim {

absl::Status SimDevice::CopyHostToDevice(uint64_t device_address, const void* host,
                                         uint64_t bytes) {
  absl::StatusOr<void*> destination = arena_->HostPointer(device_address, bytes);
  if (!destination.ok()) return destination.status();
  if (bytes > 0) std::memcpy(*destination, host, bytes);
  return absl::OkStatus();
}

absl::Status SimDevice::CopyDeviceToHost(void* host, uint64_t device_address, uint64_t bytes) {
  absl::StatusOr<void*> source = arena_->HostPointer(device_address, bytes);
  if (!source.ok()) return source.status();
  if (bytes > 0) std::memcpy(host, *source, bytes);
  return absl::OkStatus();
}

absl::Status SimDevice::CopyDeviceToDevice(uint64_t device_address, Device& source,
                                           uint64_t source_address, uint64_t bytes) {
  auto* sim_source = dynamic_cast<SimDevice*>(&source);
  if (sim_source == nullptr) {
    return absl::InvalidArgumentError("device-to-device copy between different backends");
  }
  absl::StatusOr<void*> from = sim_source->arena().HostPointer(source_address, bytes);
  if (!from.ok()) return from.status();
  absl::StatusOr<void*> to = arena_->HostPointer(device_address, bytes);
  if (!to.ok()) return to.status();
  // Ranges may overlap when both lie in one segment.
  if (bytes > 0) std::memmove(*to, *from, bytes);
  return absl::OkStatus();
}

absl::Status SimDevice::Fill(uint64_t device_address, uint64_t bytes, uint64_t pattern,
                             uint32_t pattern_bytes) {
  if (absl::Status valid = CheckFill(bytes, pattern_bytes); !valid.ok()) return valid;
  absl::StatusOr<void*> destination = arena_->HostPointer(device_address, bytes);
  if (!destination.ok()) return destination.status();
  auto* out = static_cast<unsigned char*>(*destination);
  if (pattern_bytes == 1) {
    std::memset(out, static_cast<int>(pattern & 0xff), bytes);
    return absl::OkStatus();
  }
  for (uint64_t offset = 0; offset < bytes; offset += pattern_bytes) {
    std::memcpy(out + offset, &pattern, pattern_bytes);
  }
  return absl::OkStatus();
}

absl::Status SimDevice::RunAddF32(std::span<const uint64_t> arguments,
                                  std::span<const uint8_t> scalars) {
  return sim::RunAddF32(*arena_, arguments, scalars);
}

absl::Status SimDevice::Dispatch(const Executable& executable, uint32_t /*core*/,
                                 std::span<const uint64_t> bindings,
                                 std::span<const uint8_t> immediates) {
  const auto* runnable = dynamic_cast<const SimExecutable*>(&executable);
  if (runnable == nullptr) {
    return absl::InvalidArgumentError("the executable was not prepared by the sim backend");
  }
  return runnable->Run(*arena_, bindings, immediates, launch_settings_);
}

}  // namespace neuron::rtd::hal::sim
