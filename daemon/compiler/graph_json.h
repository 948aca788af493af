// A graph executable as the compiler worker reads it (JSON; the format is
// documented in neuron_compile_worker.py). Deterministic: equal graphs give
// equal text, whose hash keys the compiled package.
#ifndef NEURON_RTD_DAEMON_COMPILER_GRAPH_JSON_H_
#define NEURON_RTD_DAEMON_COMPILER_GRAPH_JSON_H_

#include <string>

#include "daemon/hal/graph.h"

namespace neuron::rtd::compiler {

std::string GraphJson(const hal::GraphPlan& graph);

}  // namespace neuron::rtd::compiler

#endif  // NEURON_RTD_DAEMON_COMPILER_GRAPH_JSON_H_
