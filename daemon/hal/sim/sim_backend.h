// The simulated Trainium backend: devices whose topology follows a preset,
// whose HBM is a reserved host arena, and whose kernels (later issues) run as
// ATen CPU kernels on that memory.
#ifndef NEURON_RTD_DAEMON_HAL_SIM_SIM_BACKEND_H_
#define NEURON_RTD_DAEMON_HAL_SIM_SIM_BACKEND_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "daemon/common/os_sys_calls.h"
#include "daemon/hal/graph_compiler.h"
#include "daemon/hal/device.h"
#include "daemon/hal/sim/presets.h"
#include "daemon/hal/sim/sim_device.h"
#include "daemon/hal/sim/sim_executable.h"

namespace neuron::rtd::hal::sim {

struct SimOptions {
  std::string preset{kDefaultSimPreset};
  // Physical cores per logical core; 0 takes the preset's default.
  uint32_t logical_nc_config = 0;
  // Host memory and threads of each launch's CPU kernels.
  LaunchSettings launch;
  // Compiles hot graphs (tier 1); null: graphs stay interpreted. Outlives
  // the backend.
  GraphCompiler* graph_compiler = nullptr;
};

class SimBackend final : public Backend {
 public:
  SimBackend(std::vector<std::unique_ptr<SimDevice>> devices,
             GraphCompiler* graph_compiler);

  BackendKind kind() const override { return BackendKind::kSim; }
  std::span<Device* const> devices() const override { return device_views_; }
  absl::StatusOr<std::unique_ptr<Executable>> PrepareExecutable(
      const ExecutableSpec& spec) override;

  SimDevice& sim_device(uint32_t index) { return *devices_[index]; }

 private:
  std::vector<std::unique_ptr<SimDevice>> devices_;
  std::vector<Device*> device_views_;
  GraphCompiler* const graph_compiler_;
};

// What the sim runs on host CPUs for an eager op, a graph or an NKI kernel
// (the nrt backend's host execution path too); INVALID_ARGUMENT for a NEFF.
absl::StatusOr<std::unique_ptr<SimExecutable>> PrepareHostExecutable(
    const ExecutableSpec& spec, GraphCompiler* graph_compiler);

// INVALID_ARGUMENT for an unknown preset or a bad LNC (the message names the
// valid values); RESOURCE_EXHAUSTED when the HBM cannot be reserved.
absl::StatusOr<std::unique_ptr<SimBackend>> CreateSimBackend(const SimOptions& options,
                                                             OsSysCalls& sys_calls);

}  // namespace neuron::rtd::hal::sim

#endif  // NEURON_RTD_DAEMON_HAL_SIM_SIM_BACKEND_H_
