// A program's default dtype where the daemon's kernels would use their own.
#ifndef TORCH_NEURONX_CSRC_ATEN_INTERNAL_DEFAULT_DTYPE_H_
#define TORCH_NEURONX_CSRC_ATEN_INTERNAL_DEFAULT_DTYPE_H_

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>

#include "csrc/aten/internal/OpInfo.h"

namespace torch_neuronx::internal {

// Whether this process's default dtype (torch.set_default_dtype) is not
// float32, the daemon's.
bool DefaultDtypeIsNotDaemons();

// ATen's kernels promote integer and bool tensors to the default dtype where
// a Python float meets them (`int_tensor / 2.0`, `bool_tensor + 0.5`) or an
// operator makes floats of integers (`sqrt`, true division). The daemon's
// kernels use the daemon's default, float32; a program that set another
// (float64) infers float64 results here and the daemon would compute
// float32 ones. So when every tensor a call reads is an integer or bool
// tensor (indices, masks and where's condition aside), the call writes no
// tensor in place (whose dtype its result keeps), and its result has the
// default dtype (or its complex counterpart), those tensors are converted to
// the result's dtype first, on the device: the daemon then computes what the
// CPU does. Costs a meta inference per such call, and nothing while the
// default dtype is float32. `arguments` are the call's, on the device.
void PromoteIntegerInputsToDefaultDtype(const c10::OperatorHandle& op, const OpInfo& info,
                                        torch::jit::Stack& arguments);

}  // namespace torch_neuronx::internal

#endif  // TORCH_NEURONX_CSRC_ATEN_INTERNAL_DEFAULT_DTYPE_H_
