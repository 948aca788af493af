// Operators whose Python meta kernel (torch._meta_registrations) words an
// argument check differently from the CPU and CUDA kernels: ATen's C++ meta
// function infers their outputs instead (internal::UseCppMeta), so a neuron
// call raises the CPU's error, whose text programs and PyTorch's own tests
// match. And operators whose meta kernel infers another shape than the
// CPU's kernel gives, corrected here. Operators with a neuron kernel of their own register theirs in
// UnboxedOps.cc.
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/addcdiv_meta_dispatch.h>
#include <ATen/ops/all_meta_dispatch.h>
#include <ATen/ops/any_meta_dispatch.h>
#include <ATen/ops/multilabel_margin_loss_forward_ops.h>
#include <ATen/core/Reduction.h>
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

// multilabel_margin_loss_forward's meta is its decomposition, which makes a
// vector input a batch of one: with reduction none its loss is [1] where the
// CPU's (and CUDA's) kernel gives a 0-d loss.
std::tuple<at::Tensor, at::Tensor> MultilabelMarginLossForward(const at::Tensor& self,
                                                               const at::Tensor& target,
                                                               int64_t reduction) {
  auto [loss, is_target] = at::_ops::multilabel_margin_loss_forward::redispatch(
      c10::DispatchKeySet(c10::DispatchKey::Meta), self, target, reduction);
  if (reduction == at::Reduction::None && self.dim() <= 1) loss = loss.view(at::IntArrayRef{});
  return {loss, is_target};
}

// Its out= overload, which the generic path runs the functional one as.
std::tuple<at::Tensor&, at::Tensor&> MultilabelMarginLossForwardOut(
    const at::Tensor& self, const at::Tensor& target, int64_t reduction, at::Tensor& output,
    at::Tensor& is_target) {
  const auto [loss, target_mask] = MultilabelMarginLossForward(self, target, reduction);
  output.resize_(loss.sizes());
  is_target.resize_(target_mask.sizes());
  return {output, is_target};
}

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
  UseCppMeta("aten::multilabel_margin_loss_forward", "", &MultilabelMarginLossForward);
  UseCppMeta("aten::multilabel_margin_loss_forward", "output", &MultilabelMarginLossForwardOut);
  return true;
}();

}  // namespace
}  // namespace torch_neuronx
