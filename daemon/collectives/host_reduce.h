// Element-wise reductions of host buffers: what a daemon does with the
// partial results other hosts send it, in the element types of
// collectives. Floating-point types of 16 bits are widened to float for
// each operation and rounded back (to nearest, ties to even), as the
// simulated device does; integer sums and products wrap.
//
// Thread-safety: pure functions.
#ifndef NEURON_RTD_DAEMON_COLLECTIVES_HOST_REDUCE_H_
#define NEURON_RTD_DAEMON_COLLECTIVES_HOST_REDUCE_H_

#include <cstdint>

#include "daemon/hal/reduction.h"

namespace neuron::rtd::collectives {

// destination[i] = op(destination[i], source[i]) for `count` elements.
// `op` is kSum, kProduct, kMin or kMax (the other ops reduce as kSum and
// finish with FinishOnHost).
void ReduceOnHost(hal::ReduceOp op, hal::ElementType type, void* destination, const void* source,
                  uint64_t count);

// What an op does once every operand is summed: kAvg divides by `ranks`
// (integers toward zero), kPremulSum multiplies by `scale`; the others
// leave the buffer alone.
void FinishOnHost(hal::ReduceOp op, hal::ElementType type, void* buffer, uint64_t count,
                  uint32_t ranks, double scale);

// The element type of a wire dtype (enum neuron_rtd_dtype) and the op of a
// wire reduce op (enum neuron_rtd_reduce_op); unknown values (refused
// before) read as float32 and SUM.
hal::ElementType ElementTypeOfDtype(uint32_t dtype);
hal::ReduceOp ReduceOpOfWire(uint32_t reduce_op);

// The op the partial results of `op` are combined with.
hal::ReduceOp CombiningOp(hal::ReduceOp op);

float HalfToFloat(uint16_t half);
uint16_t FloatToHalf(float value);
float BFloat16ToFloat(uint16_t value);
uint16_t FloatToBFloat16(float value);

}  // namespace neuron::rtd::collectives

#endif  // NEURON_RTD_DAEMON_COLLECTIVES_HOST_REDUCE_H_
