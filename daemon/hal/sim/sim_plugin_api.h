// What libneuron_rtd_sim.so offers the daemon: the simulated backend and the
// host kernels (ATen CPU kernels) the nrt backend's host execution path
// runs. The daemon loads it with dlopen (daemon/hal/sim_plugin.h), so that
// neither neuron-rtd nor its package needs libtorch; only this plugin links
// it.
//
// The table passes C++ types (absl::Status, std::unique_ptr, the HAL's
// classes): plugin and daemon must come from one build, which the loader
// checks (abi_version and build_id) before it calls anything.
#ifndef NEURON_RTD_DAEMON_HAL_SIM_SIM_PLUGIN_API_H_
#define NEURON_RTD_DAEMON_HAL_SIM_SIM_PLUGIN_API_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "daemon/common/os_sys_calls.h"
#include "daemon/hal/graph_compiler.h"
#include "daemon/hal/device.h"
#include "daemon/hal/reduction.h"
#include "daemon/hal/sim/arena_operand.h"
#include "daemon/hal/sim/hbm_arena.h"
#include "daemon/hal/sim/sim_backend.h"
#include "daemon/hal/sim/sim_executable.h"

namespace neuron::rtd::hal::sim {

// Raised whenever the table or a type it passes changes meaning.
inline constexpr uint32_t kSimPluginAbiVersion = 2;
// The plugin's one exported symbol: `const SimPluginApi* (void)`.
inline constexpr char kSimPluginEntryPoint[] = "neuron_rtd_sim_plugin_v1";
inline constexpr char kSimPluginFileName[] = "libneuron_rtd_sim.so";

// Every pointer is set; the table lives as long as the process (the plugin
// is never unloaded).
struct SimPluginApi {
  uint32_t abi_version;
  // NEURON_RTD_VERSION of the build that made the plugin.
  const char* build_id;
  // The torch the kernels run with ("2.13.0"): compiled graphs must be
  // built by the same.
  const char* torch_version;
  // The directory of the libtorch the plugin loaded (".../torch/lib"): the
  // compiler worker's interpreter is the one that installed it.
  std::string (*torch_library_dir)();
  // sim::CreateSimBackend.
  absl::StatusOr<std::unique_ptr<Backend>> (*create_backend)(const SimOptions& options,
                                                            OsSysCalls& sys_calls);
  // sim::PrepareHostExecutable.
  absl::StatusOr<std::unique_ptr<SimExecutable>> (*prepare_host_executable)(
      const ExecutableSpec& spec, GraphCompiler* graph_compiler);
  // The collective engine's reduction over arenas: every source into
  // `destination` of `destination_arena`, which may be sources[0] and no
  // other source.
  absl::Status (*reduce_in_arenas)(const Reduction& reduction, HbmArena& destination_arena,
                                   uint64_t destination, std::span<const ArenaOperand> sources);
  // The built-in float32 add (Device::RunAddF32): arguments a, b, out; scalars: a
  // uint64_t element count.
  absl::Status (*run_add_f32)(HbmArena& arena, std::span<const uint64_t> arguments,
                              std::span<const uint8_t> scalars);
};

}  // namespace neuron::rtd::hal::sim

#endif  // NEURON_RTD_DAEMON_HAL_SIM_SIM_PLUGIN_API_H_
