// The simulated core runs every operator on the host CPU, so nothing tells
// which NeuronCore engine would have done the work: profiles attribute each
// command by its operator's class instead, as a Trainium would run it
// (docs/profiling.md lists the classes).
#ifndef NEURON_RTD_DAEMON_HAL_SIM_ENGINE_ATTRIBUTION_H_
#define NEURON_RTD_DAEMON_HAL_SIM_ENGINE_ATTRIBUTION_H_

#include <cstdint>
#include <string_view>

#include "daemon/hal/command_kind.h"
#include "daemon/hal/engine.h"

namespace neuron::rtd::hal::sim {

// `op_name` is the record's op name ("aten::addmm", "aten::exp.out", a
// compiled graph's name). Pure; any thread.
Engine SimEngineOf(CommandKind kind, std::string_view op_name);

}  // namespace neuron::rtd::hal::sim

#endif  // NEURON_RTD_DAEMON_HAL_SIM_ENGINE_ATTRIBUTION_H_
