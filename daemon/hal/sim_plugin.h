// Loads libneuron_rtd_sim.so, the simulated backend and the host kernels
// (daemon/hal/sim/sim_plugin_api.h): the one place the daemon reaches code
// that links libtorch.
#ifndef NEURON_RTD_DAEMON_HAL_SIM_PLUGIN_H_
#define NEURON_RTD_DAEMON_HAL_SIM_PLUGIN_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "daemon/hal/sim/sim_plugin_api.h"

namespace neuron::rtd::hal {

// Where the daemon's private files (the sim plugin, the compiler worker)
// are installed relative to the running program:
// <dir of the executable>/../lib/neuron-rtd/`name` (/usr/bin/neuron-rtd →
// /usr/lib/neuron-rtd/; the build tree and the wheel lay them out alike).
std::string InstalledBesideDaemon(std::string_view name);

// InstalledBesideDaemon("libneuron_rtd_sim.so").
std::string DefaultSimPluginPath();

// dlopen (RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE: the plugin's code and
// vtables stay for the process's life) and the entry point's table.
// FAILED_PRECONDITION naming the path and the loader's reason (a missing
// file, a missing libtorch), or a plugin from another build (its ABI or
// version differ from the daemon's). Loading the same path again returns
// the same table. Thread-safe.
absl::StatusOr<const sim::SimPluginApi*> LoadSimPlugin(const std::string& path);

}  // namespace neuron::rtd::hal

#endif  // NEURON_RTD_DAEMON_HAL_SIM_PLUGIN_H_
