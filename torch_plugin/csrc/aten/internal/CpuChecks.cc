#include "csrc/aten/internal/CpuChecks.h"

#include <ATen/core/Tensor.h>
#include <ATen/ExpandUtils.h>
#include <ATen/core/enum_tag.h>
#include <ATen/ops/addcdiv_meta_dispatch.h>
#include <ATen/ops/empty.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace torch_neuronx::internal {

void CheckNumbersAsTheCpuDoes(const c10::OperatorHandle& op, const OpInfo& info,
                              const torch::jit::Stack& arguments) {
  if (!info.checks_numbers_on_cpu) return;
  torch::jit::Stack on_cpu;
  on_cpu.reserve(arguments.size());
  const at::Tensor& self = arguments[0].toTensor();
  on_cpu.emplace_back(at::empty({0}, self.options().device(at::kCPU)));
  for (size_t i = 1; i < arguments.size(); ++i) {
    if (info.kinds[i] == ArgKind::kGenerator) {
      on_cpu.emplace_back();
    } else {
      on_cpu.push_back(arguments[i]);
    }
  }
  op.callBoxed(on_cpu);
}

namespace {

// Whether the per-tensor operator of foreach operator `name` (aten::add of
// aten::_foreach_add_) is pointwise (ATen's tag), so that its tensors
// broadcast: aten::_foreach_mm's multiply matrices.
bool PerTensorOperatorIsPointwise(std::string_view name) {
  std::string base(name.substr(std::string_view("aten::_foreach_").size()));
  if (base.ends_with('_')) base.pop_back();
  for (const char* overload : {"", "Tensor", "Tensor_Tensor", "Scalar"}) {
    std::optional<c10::OperatorHandle> per_tensor =
        c10::Dispatcher::singleton().findOp({"aten::" + base, overload});
    if (per_tensor.has_value() && per_tensor->hasSchema()) {
      return per_tensor->hasTag(at::Tag::pointwise);
    }
  }
  return false;
}

}  // namespace

void CheckForeachAsTheCpuDoes(const c10::OperatorHandle& op,
                              const torch::jit::Stack& arguments) {
  const c10::OperatorName& name = op.operator_name();
  if (!name.name.starts_with("aten::_foreach_")) return;
  std::vector<std::vector<at::Tensor>> lists;
  for (const c10::IValue& value : arguments) {
    if (value.isTensorList()) lists.push_back(value.toTensorVector());
  }
  if (lists.size() < 2 || !PerTensorOperatorIsPointwise(name.name)) return;
  for (const std::vector<at::Tensor>& list : lists) {
    // The meta kernel's own message for lists of different lengths.
    if (list.size() != lists[0].size()) return;
  }
  const bool in_place = name.name.ends_with("_");
  const bool addcdiv = name.name.starts_with("aten::_foreach_addcdiv") && lists.size() == 3;
  for (size_t i = 0; i < lists[0].size(); ++i) {
    const at::Tensor& self = lists[0][i];
    if (addcdiv && at::isIntegralType(lists[1][i].scalar_type(), /*includeBool=*/true) &&
        at::isIntegralType(lists[2][i].scalar_type(), /*includeBool=*/true)) {
      // addcdiv's C++ meta raises the CPU's deprecation of integer division.
      auto on_meta = [](const at::Tensor& tensor) {
        return at::empty({0}, tensor.options().device(at::kMeta));
      };
      at::meta::addcdiv(on_meta(self), on_meta(lists[1][i]), on_meta(lists[2][i]));
    }
    at::DimVector shape(self.sizes());
    for (size_t other = 1; other < lists.size(); ++other) {
      shape = at::infer_size_dimvector(shape, lists[other][i].sizes());
    }
    TORCH_CHECK(!in_place || self.sizes() == at::IntArrayRef(shape), "output with shape ",
                self.sizes(), " doesn't match the broadcast shape ", at::IntArrayRef(shape));
  }
}

}  // namespace torch_neuronx::internal
