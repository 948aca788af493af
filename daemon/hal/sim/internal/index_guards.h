// ATen CPU kernels that index memory with the values of tensor arguments
// they do not bound-check (they trust the forward kernel that made those
// tensors). A client may send anything there, so the checks they skip run
// before them: out-of-range values raise IndexError, an operator error,
// instead of reading or writing past a buffer of the daemon.
#ifndef NEURON_RTD_DAEMON_HAL_SIM_INTERNAL_INDEX_GUARDS_H_
#define NEURON_RTD_DAEMON_HAL_SIM_INTERNAL_INDEX_GUARDS_H_

#include <ATen/core/stack.h>

#include <string_view>

namespace neuron::rtd::hal::sim::internal {

// Throws c10::IndexError when `stack`, the arguments of operator
// `qualified` ("aten::name.overload"), holds an index its kernel would
// follow out of range. Operators without a guard pass. Any thread.
void CheckUncheckedIndices(std::string_view qualified, const torch::jit::Stack& stack);

}  // namespace neuron::rtd::hal::sim::internal

#endif  // NEURON_RTD_DAEMON_HAL_SIM_INTERNAL_INDEX_GUARDS_H_
