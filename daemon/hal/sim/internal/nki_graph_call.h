// A graph's NKI call node (graph_plan.h's kNkiCallNode): the kernel run by
// the NKI interpreter on graph values instead of launch addresses.
// PyTorch headers: include only from the sim's own .cc files.
#ifndef NEURON_RTD_DAEMON_HAL_SIM_INTERNAL_NKI_GRAPH_CALL_H_
#define NEURON_RTD_DAEMON_HAL_SIM_INTERNAL_NKI_GRAPH_CALL_H_

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "daemon/hal/graph.h"

namespace neuron::rtd::hal::sim::internal {

// A prepared call. Immutable; shared by every launch of the graph.
struct NkiGraphCall {
  uint32_t kernel = 0;  // index into the graph's nki_kernels
  // Address indices 0 .. bound-1 are the node's values; the kernel's other
  // HBM allocations are made for each call.
  uint32_t bound = 0;
  // The address indices the node returns (what the kernel writes), ascending.
  std::vector<uint32_t> results;
};

// Checks `node` against the graph's kernels: its arguments (a kernel index,
// the values), its one Tensor[] return of as many tensors as the kernel
// writes HBM allocations. INVALID_ARGUMENT saying what is wrong.
absl::StatusOr<NkiGraphCall> PrepareNkiGraphCall(const GraphPlan& plan, const GraphNode& node);

// Runs the call on `arguments` (the values of the node's GraphValues, in
// order); returns its results. An argument the kernel writes is copied
// first, so graph values stay immutable. INVALID_ARGUMENT when an argument's
// dtype or size is not the kernel's, or the kernel fails.
absl::StatusOr<std::vector<at::Tensor>> RunNkiGraphCall(const GraphPlan& plan,
                                                        const NkiGraphCall& call,
                                                        std::span<const at::Tensor> arguments);

}  // namespace neuron::rtd::hal::sim::internal

#endif  // NEURON_RTD_DAEMON_HAL_SIM_INTERNAL_NKI_GRAPH_CALL_H_
