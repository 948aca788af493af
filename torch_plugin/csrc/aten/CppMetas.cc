// Operators whose Python meta kernel (torch._meta_registrations) words an
// argument check differently from the CPU and CUDA kernels: ATen's C++ meta
// function infers their outputs instead (internal::UseCppMeta), so a neuron
// call raises the CPU's error, whose text programs and PyTorch's own tests
// match. Operators with a neuron kernel of their own register theirs in
// UnboxedOps.cc.
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/addcdiv_meta_dispatch.h>
#include <ATen/ops/all_meta_dispatch.h>
#include <ATen/ops/any_meta_dispatch.h>
#include <torch/library.h>

#include "csrc/aten/internal/MetaTensors.h"

namespace torch_neuronx {
namespace {

template <class Function>
void UseCppMeta(const char* name, const char* overload, Function* meta) {
  internal::UseCppMeta(c10::Dispatcher::singleton().findSchemaOrThrow(name, overload),
                       c10::KernelFunction::makeFromUnboxedRuntimeFunction(meta));
}

// all's and any's out= overloads (one name, several signatures).
using DimOut = at::Tensor&(const at::Tensor&, int64_t, bool, at::Tensor&);
using WholeOut = at::Tensor&(const at::Tensor&, at::Tensor&);

const bool kRegistered = [] {
  // torch 2.13's Python meta for addcdiv raises its integer-division
  // message as a tuple's repr.
  UseCppMeta("aten::addcdiv", "", &at::meta::addcdiv);
  UseCppMeta("aten::addcdiv", "out", &at::meta::addcdiv_outf);
  UseCppMeta("aten::addcdiv_", "", &at::meta::addcdiv_);
  // The Python metas of all and any accept a result of any dtype, which the
  // CPU refuses ("all only supports bool tensor for result").
  UseCppMeta("aten::all", "out", static_cast<DimOut*>(&at::meta::all_outf));
  UseCppMeta("aten::all", "all_out", static_cast<WholeOut*>(&at::meta::all_outf));
  UseCppMeta("aten::any", "out", static_cast<DimOut*>(&at::meta::any_outf));
  UseCppMeta("aten::any", "all_out", static_cast<WholeOut*>(&at::meta::any_outf));
  return true;
}();

}  // namespace
}  // namespace torch_neuronx
