// What a device reports about itself beyond the daemon's own accounting of
// its memory: HBM the runtime below the daemon holds, and the driver's ECC
// error counts. A backend fills what it can read; what it cannot stays
// unknown (nullopt), which is not the same as 0.
#ifndef NEURON_RTD_DAEMON_HAL_DEVICE_TELEMETRY_H_
#define NEURON_RTD_DAEMON_HAL_DEVICE_TELEMETRY_H_

#include <cstdint>
#include <optional>
#include <vector>

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

// HBM the programs loaded below the daemon hold, by part.
struct ProgramHbm {
  uint64_t model_code_bytes = 0;
  uint64_t constants_bytes = 0;
  uint64_t scratchpad_bytes = 0;
};

// One logical core's HBM as the runtime below the daemon accounts it
// (neuron-monitor's neuroncore_memory_usage): its tensors include the
// daemon's segments on the core.
struct CoreHbm {
  uint64_t tensors_bytes = 0;
  uint64_t model_code_bytes = 0;
  uint64_t constants_bytes = 0;
  uint64_t scratchpad_bytes = 0;
  uint64_t runtime_bytes = 0;
};

struct DeviceTelemetry {
  // HBM held below the daemon besides its own segments and besides
  // `programs` when that is known: the runtime's and the driver's own
  // buffers, and loaded programs where the backend cannot tell them apart.
  std::optional<uint64_t> runtime_hbm_bytes;
  // Loaded programs' HBM, where the backend can tell it apart.
  std::optional<ProgramHbm> programs;
  // By logical core of the device; empty when the backend cannot tell.
  std::vector<CoreHbm> core_hbm;
  EccCounts ecc;
};

}  // namespace neuron::rtd::hal

#endif  // NEURON_RTD_DAEMON_HAL_DEVICE_TELEMETRY_H_
