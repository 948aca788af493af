// The plain-data executable descriptions (an eager op, a graph, an NKI kernel) to their
// wire form.
#ifndef NEURONRT_SRC_INTERNAL_EXECUTABLE_ENCODER_H_
#define NEURONRT_SRC_INTERNAL_EXECUTABLE_ENCODER_H_

#include <string>

#include "neuron/rtd/eager_op.h"
#include "neuron/rtd/graph_plan.h"
#include "neuron/rtd/nki_kernel.h"

namespace neuronrt::internal {

// A serialized neuron.rtd.v1.ExecutableBody holding `plan`. Deterministic:
// equal plans give equal bytes, so they share one content hash.
std::string EncodeEagerOp(const neuron::rtd::EagerOpPlan& plan);
std::string EncodeGraph(const neuron::rtd::GraphPlan& plan);
std::string EncodeNkiKernel(const neuron::rtd::NkiKernelPlan& plan);

}  // namespace neuronrt::internal

#endif  // NEURONRT_SRC_INTERNAL_EXECUTABLE_ENCODER_H_
