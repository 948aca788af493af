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

// For an operator that writes an argument (in-place, out=) where a written
// tensor's elements share memory (an expanded tensor) or it shares memory
// with another argument (as the same view: once per operator): runs the
// CPU's kernel on zero-filled host copies of the arguments that share memory
// in the same way, so that the CPU's overlap checks raise at the call ("unsupported
// operation: some elements of the input tensor and the written-to tensor
// refer to a single memory location") and its deprecation warnings (writes
// to expanded tensors) are given. The daemon's kernel sees every argument as
// memory of its own and cannot tell. Only the overlap checks' errors are
// raised (the copies' zeros would fail other, value-dependent checks). Not
// for random operators (they would draw from the CPU's generator), nor past
// 64 MiB of copies.
void CheckOverlapAsTheCpuDoes(const c10::OperatorHandle& op, const OpInfo& info,
                              const torch::jit::Stack& arguments);

}  // namespace torch_neuronx::internal

#endif  // TORCH_NEURONX_CSRC_ATEN_INTERNAL_CPU_CHECKS_H_
