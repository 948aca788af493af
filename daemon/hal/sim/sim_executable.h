// What the sim backend prepares: an executable that runs itself on a sim
// device's HBM. Declared without PyTorch types so that callers need no
// PyTorch headers.
#ifndef NEURON_RTD_DAEMON_HAL_SIM_SIM_EXECUTABLE_H_
#define NEURON_RTD_DAEMON_HAL_SIM_SIM_EXECUTABLE_H_

#include <cstdint>
#include <span>

#include "absl/status/status.h"
#include "daemon/hal/executable.h"
#include "daemon/hal/sim/hbm_arena.h"

namespace neuron::rtd::hal::sim {

// What bounds and shapes every launch of a sim device.
struct LaunchSettings {
  // Host memory the CPU kernels of one launch may hold at once
  // (LaunchHostBudget).
  uint64_t max_host_bytes = 4ull << 30;
  // An executable whose launches take less than this on one host thread
  // runs them on the worker's thread alone (LaunchParallelism); 0: always
  // every thread.
  int64_t parallel_min_ns = 400'000;
};

// Thread-safety: Run is const and may run on several cores' workers at once.
class SimExecutable : public Executable {
 public:
  BackendKind backend() const override { return BackendKind::kSim; }

  // Runs on tensors at `bindings` in `arena` (each covering its layout's
  // extent, checked by the caller) with per-call `immediates`. The
  // operators' own errors come back as INVALID_ARGUMENT (RESOURCE_EXHAUSTED
  // for memory) carrying kOperatorErrorTypePayload; so does a kernel that
  // asks for more than `settings.max_host_bytes` of host memory at once
  // (LaunchHostBudget).
  virtual absl::Status Run(HbmArena& arena, std::span<const uint64_t> bindings,
                           std::span<const uint8_t> immediates,
                           const LaunchSettings& settings) const = 0;
};

}  // namespace neuron::rtd::hal::sim

#endif  // NEURON_RTD_DAEMON_HAL_SIM_SIM_EXECUTABLE_H_
