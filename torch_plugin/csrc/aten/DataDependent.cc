// Operators whose output shape depends on tensor values. The count is read
// back first (a synchronization, as on CUDA), then the operator runs in the
// daemon with outputs of the right size.
#include <ATen/ExpandUtils.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/count_nonzero.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/index_select.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include "csrc/aten/GenericOp.h"

namespace torch_neuronx {
namespace {

at::Tensor Nonzero(const at::Tensor& self) {
  static const c10::OperatorHandle nonzero_out =
      c10::Dispatcher::singleton().findSchemaOrThrow("aten::nonzero", "out");
  const c10::DeviceGuard guard(self.device());
  const int64_t count = at::count_nonzero(self).item<int64_t>();
  at::Tensor out = at::empty({count, self.dim()}, self.options().dtype(at::kLong));
  torch::jit::Stack stack{self, out};
  LaunchOnDeviceWithoutMeta(nonzero_out, &stack);
  return out;
}

bool IsMask(const at::Tensor& index) {
  return index.defined() &&
         (index.scalar_type() == at::kBool || index.scalar_type() == at::kByte);
}

// Boolean masks become the long indices of their true elements, one index
// tensor per masked dimension (what ATen's expandTensors does).
c10::List<std::optional<at::Tensor>> MasksToIndices(
    const c10::List<std::optional<at::Tensor>>& indices) {
  c10::List<std::optional<at::Tensor>> expanded;
  for (const std::optional<at::Tensor>& index : indices) {
    if (!index.has_value() || !IsMask(*index)) {
      expanded.push_back(index);
      continue;
    }
    const at::Tensor positions = Nonzero(*index);
    for (int64_t dim = 0; dim < index->dim(); ++dim) expanded.push_back(positions.select(1, dim));
  }
  return expanded;
}

bool HasMask(const c10::List<std::optional<at::Tensor>>& indices) {
  for (const std::optional<at::Tensor>& index : indices) {
    if (index.has_value() && IsMask(*index)) return true;
  }
  return false;
}

at::Tensor Index(const at::Tensor& self, const c10::List<std::optional<at::Tensor>>& indices) {
  static const c10::OperatorHandle index =
      c10::Dispatcher::singleton().findSchemaOrThrow("aten::index", "Tensor");
  torch::jit::Stack stack{self, HasMask(indices) ? MasksToIndices(indices) : indices};
  LaunchOnDevice(index, &stack);
  return stack[0].toTensor();
}

at::Tensor& IndexPut(at::Tensor& self, const c10::List<std::optional<at::Tensor>>& indices,
                     const at::Tensor& values, bool accumulate, bool unsafe) {
  static const c10::OperatorHandle index_put =
      c10::Dispatcher::singleton().findSchemaOrThrow("aten::_index_put_impl_", "");
  torch::jit::Stack stack{self, HasMask(indices) ? MasksToIndices(indices) : indices, values,
                          accumulate, unsafe};
  LaunchOnDevice(index_put, &stack);
  return self;
}

at::Tensor MaskedSelect(const at::Tensor& self, const at::Tensor& mask) {
  auto [values, flags] = at::expand_outplace(self, mask);
  const at::Tensor positions = Nonzero(flags->reshape({-1})).squeeze(1);
  return at::index_select(values->reshape({-1}), 0, positions);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("nonzero", Nonzero);
  m.impl("index.Tensor", Index);
  m.impl("_index_put_impl_", IndexPut);
  m.impl("masked_select", MaskedSelect);
}

}  // namespace torch_neuronx
