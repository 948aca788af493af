// Where the device's kernels and PyTorch's meta kernels disagree about the
// dtype or the sizes of a result, the device's answer wins: the result
// feeds the device's own kernels next (a batch norm's saved statistics feed
// its backward). On the simulated Trainium the device's kernels are ATen's
// CPU kernels.
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>

namespace torch_neuronx {

// Rewrites the dtypes and sizes of `meta` (the results of running `op` on meta
// tensors made from `arguments`) to what the device returns.
void MatchDeviceResultDtypes(const c10::OperatorHandle& op, const torch::jit::Stack& arguments,
                             torch::jit::Stack& meta);

}  // namespace torch_neuronx
