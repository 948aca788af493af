// Graph executables on the sim. Tier 0: a graph of ATen operators
// (torch.compile) checked node by node against the operators' schemas once,
// at load, then interpreted in one launch: each node is called through the
// dispatcher on CPU tensors, the inputs wrapping HBM, the intermediates in
// the daemon's memory (counted against the launch's host budget and freed
// after their last use), the outputs copied into the client's buffers.
// Tier 1: after compile_after_launches launches the graph is handed to the
// compiler (daemon/compiler), off the launch path; once its package is
// loaded, launches run the fused code instead, writing outputs in place. A
// package already in the disk cache is loaded at preparation. A graph whose
// compilation fails stays on tier 0.
#ifndef NEURON_RTD_DAEMON_HAL_SIM_GRAPH_EXECUTABLE_H_
#define NEURON_RTD_DAEMON_HAL_SIM_GRAPH_EXECUTABLE_H_

#include <memory>

#include "absl/status/statusor.h"
#include "daemon/hal/graph_compiler.h"
#include "daemon/hal/graph.h"
#include "daemon/hal/sim/sim_executable.h"

namespace neuron::rtd::hal::sim {

// Checks every node as an eager op is checked (the operator exists, each
// argument fits its schema), each node's declared returns against the
// operator's (a Tensor, or a Tensor[] of the declared length; no other
// kind), and that random operators have the graph's generator.
// INVALID_ARGUMENT naming the graph, the node and the operator. `compiler`
// (null: tier 0 only) outlives the executable.
absl::StatusOr<std::unique_ptr<SimExecutable>> PrepareGraphExecutable(
    const GraphPlan& plan, GraphCompiler* compiler);

}  // namespace neuron::rtd::hal::sim

#endif  // NEURON_RTD_DAEMON_HAL_SIM_GRAPH_EXECUTABLE_H_
