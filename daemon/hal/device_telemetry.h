// What a device reports about itself beyond the daemon's own accounting of
// its memory: HBM the runtime below the daemon holds, and the driver's ECC
// error counts. A backend fills what it can read; what it cannot stays
// unknown (nullopt), which is not the same as 0.
#ifndef NEURON_RTD_DAEMON_HAL_DEVICE_TELEMETRY_H_
#define NEURON_RTD_DAEMON_HAL_DEVICE_TELEMETRY_H_

#include <cstdint>
#include <optional>

namespace neuron::rtd::hal {

// Error-correction events since the device was last reset or the host
// booted, as the Neuron driver counts them (neuron-monitor's hw_counters):
// corrected ones are harmless one by one, an uncorrected one corrupted data.
struct EccCounts {
  std::optional<uint64_t> mem_corrected;
  std::optional<uint64_t> mem_uncorrected;
  // Uncorrected HBM errors in rows the device can repair (remap) at its
  // next reset.
  std::optional<uint64_t> mem_repairable_uncorrected;
  std::optional<uint64_t> sram_corrected;
  std::optional<uint64_t> sram_uncorrected;
};

struct DeviceTelemetry {
  // HBM held below the daemon besides its own segments: loaded programs,
  // their scratchpads, the runtime's own buffers.
  std::optional<uint64_t> runtime_hbm_bytes;
  EccCounts ecc;
};

}  // namespace neuron::rtd::hal

#endif  // NEURON_RTD_DAEMON_HAL_DEVICE_TELEMETRY_H_
