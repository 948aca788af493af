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

}  // namespace torch_neuronx::internal

#endif  // TORCH_NEURONX_CSRC_ATEN_INTERNAL_CPU_CHECKS_H_
