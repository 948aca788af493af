// Argument checks only the CPU kernel makes, made at the call.
#ifndef TORCH_NEURONX_CSRC_ATEN_INTERNAL_CPU_CHECKS_H_
#define TORCH_NEURONX_CSRC_ATEN_INTERNAL_CPU_CHECKS_H_

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>

#include "csrc/aten/internal/OpInfo.h"

namespace torch_neuronx::internal {

// For an in-place sampler (OpInfo::checks_numbers_on_cpu: random_,
// uniform_, normal_, ...): runs its CPU kernel on an empty CPU tensor of the
// call's dtype with the call's numbers, so that its checks of them
// (random_'s bounds for the dtype, uniform_'s range, normal_'s std) raise the
// CPU's error at the call. The daemon's kernel makes the same checks, but a
// launch of a known signature fails asynchronously, at a later
// synchronization. Draws nothing from any generator.
void CheckNumbersAsTheCpuDoes(const c10::OperatorHandle& op, const OpInfo& info,
                              const torch::jit::Stack& arguments);

// For a foreach operator (aten::_foreach_*) with two or more tensor lists:
// the CPU runs it tensor by tensor, so tensors that do not broadcast raise
// the per-tensor operator's message ("The size of tensor a (10) must match
// the size of tensor b (11) at non-singleton dimension 1"; for an in-place
// one, "output with shape ... doesn't match the broadcast shape ..."), where
// PyTorch's Python meta kernels word it as its reference implementations do;
// likewise addcdiv's refusal of integer division. Raises the CPU's message
// for the first tensors that the CPU's would.
void CheckForeachAsTheCpuDoes(const c10::OperatorHandle& op,
                                    const torch::jit::Stack& arguments);

}  // namespace torch_neuronx::internal

#endif  // TORCH_NEURONX_CSRC_ATEN_INTERNAL_CPU_CHECKS_H_
