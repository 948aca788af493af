// Creates the device backend the configuration names ([device] backend):
// the one place that knows every backend, so that nothing else in the daemon
// depends on which one runs.
#ifndef NEURON_RTD_DAEMON_HAL_BACKEND_FACTORY_H_
#define NEURON_RTD_DAEMON_HAL_BACKEND_FACTORY_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "daemon/common/os_sys_calls.h"
#include "daemon/hal/graph_compiler.h"
#include "daemon/hal/device.h"

namespace neuron::rtd::hal {

struct BackendOptions {
  // "sim" (the simulated Trainium) or "nrt" (real Trainium through libnrt).
  std::string kind = "sim";
  // libneuron_rtd_sim.so: the sim, and the nrt backend's host execution
  // path (empty: DefaultSimPluginPath()).
  std::string sim_plugin;
  // Physical NeuronCores per logical core; 0 takes the platform's default.
  uint32_t logical_nc_config = 0;
  // The sim's topology preset.
  std::string sim_preset;
  // Host memory the sim's CPU kernels may hold during one launch.
  uint64_t sim_max_launch_host_bytes = 4ull << 30;
  // Sim executables whose launches take less than this on one host thread
  // run them on one (sim::LaunchParallelism); 0: never.
  uint32_t sim_parallel_launch_min_us = 400;
  // nrt: where libnrt is (empty: libnrt.so.1, then
  // /opt/aws/neuron/lib/libnrt.so.1) and the cores to own (empty: the
  // environment's NEURON_RT_VISIBLE_CORES, else all).
  std::string nrt_library;
  std::string nrt_visible_cores;
  // nrt: the Neuron driver's sysfs device directories.
  std::string nrt_sysfs_root;
  // Compiles hot graphs for a backend that runs them on the host (tier 1);
  // null: graphs stay interpreted. Outlives the backend.
  GraphCompiler* graph_compiler = nullptr;
};

// INVALID_ARGUMENT naming the known kinds for an unknown one; the sim
// plugin's load error for "sim"; the backend's own errors otherwise. The nrt
// backend starts without the plugin (it then runs NEFFs only, and says so).
absl::StatusOr<std::unique_ptr<Backend>> CreateBackend(const BackendOptions& options,
                                                       OsSysCalls& sys_calls);

}  // namespace neuron::rtd::hal

#endif  // NEURON_RTD_DAEMON_HAL_BACKEND_FACTORY_H_
