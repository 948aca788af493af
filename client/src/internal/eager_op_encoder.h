// The plain-data eager-op description to its wire form.
#ifndef NEURONRT_SRC_INTERNAL_EAGER_OP_ENCODER_H_
#define NEURONRT_SRC_INTERNAL_EAGER_OP_ENCODER_H_

#include <string>

#include "neuron/rtd/eager_op.h"

namespace neuronrt::internal {

// A serialized neuron.rtd.v1.ExecutableBody holding `plan`. Deterministic:
// equal plans give equal bytes, so they share one content hash.
std::string EncodeEagerOp(const neuron::rtd::EagerOpPlan& plan);

}  // namespace neuronrt::internal

#endif  // NEURONRT_SRC_INTERNAL_EAGER_OP_ENCODER_H_
