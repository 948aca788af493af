// Running an operator on meta tensors made from a call's arguments: its
// results' shapes and dtypes, and the operator's own argument checks, with
// no device involved.
#ifndef TORCH_NEURONX_CSRC_ATEN_INTERNAL_META_TENSORS_H_
#define TORCH_NEURONX_CSRC_ATEN_INTERNAL_META_TENSORS_H_

#include <ATen/core/Tensor.h>
#include <ATen/core/boxing/KernelFunction.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>
#include <c10/util/Exception.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace torch_neuronx::internal {

// The arguments with every tensor replaced by a meta tensor of its sizes and
// strides (and, with `keep_offset`, its storage offset), devices by the meta
// device and generators by None.
torch::jit::Stack ToMetaStack(const torch::jit::Stack& arguments, bool keep_offset);

enum class MetaOutcome {
  kOk,
  kNoMetaKernel,
  // The meta kernel raised for arguments whose shapes the CPU's kernel
  // accepts (index_reduce's with an empty index reads a slice of it): the
  // meta kernel is wrong, not the call, and only the CPU's kernel can run it.
  kMetaKernelRefusesWhatTheCpuAccepts,
};

// Runs `op` on meta tensors. Errors of the operator's own checks (shapes,
// dtypes) propagate to the caller: they are the user's errors, raised at the
// call as on the CPU, and with the CPU's exception where the CPU's kernel
// refuses the same arguments (asked on zero-filled host copies of up to
// 64 MiB; never for an operator that draws random numbers). Where the CPU's
// kernel accepts them, returns kMetaKernelRefusesWhatTheCpuAccepts.
MetaOutcome RunMeta(const c10::OperatorHandle& op, torch::jit::Stack& meta);

// Makes RunMeta call `meta` for `op` instead of dispatching to the Meta key.
// For operators whose ATen C++ meta function torch._meta_registrations hides
// behind a Python one (most structured operators): the C++ one is the code
// the CPU kernel checks its arguments with (the CPU's error messages), costs
// microseconds instead of a Python call, and does not import sympy (half a
// second) on a process's first call. `meta` takes the operator's arguments
// on meta tensors, as the dispatcher would. Thread-safe; for registration
// time.
void UseCppMeta(const c10::OperatorHandle& op, c10::KernelFunction meta);

}  // namespace torch_neuronx::internal

#endif  // TORCH_NEURONX_CSRC_ATEN_INTERNAL_META_TENSORS_H_
