// Operators whose output shape depends on tensor values. The count is read
// back first (a synchronization, as on CUDA), then the operator runs in the
// daemon with outputs of the right size.
#include <ATen/ExpandUtils.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/count_nonzero.h>
#include <ATen/ops/full.h>
#include <ATen/ops/ones_like.h>
#include <ATen/ops/zeros.h>
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

// torch.unique: sort on the device, mark where a new value starts, and read
// back only the number of distinct values. The values come out sorted
// (allowed for sorted=False too).
std::tuple<at::Tensor, at::Tensor, at::Tensor> Unique(const at::Tensor& self, bool /*sorted*/,
                                                      bool return_inverse, bool return_counts) {
  const c10::DeviceGuard guard(self.device());
  const at::TensorOptions long_options = self.options().dtype(at::kLong);
  const int64_t n = self.numel();
  if (n == 0) {
    return {at::empty({0}, self.options()),
            return_inverse ? at::empty(self.sizes(), long_options) : at::empty({0}, long_options),
            at::empty({0}, long_options)};
  }
  auto [sorted_values, order] = self.flatten().sort(/*stable=*/true, /*dim=*/0, false);
  at::Tensor starts = at::full({n}, true, self.options().dtype(at::kBool));
  if (n > 1) {
    starts.slice(0, 1).copy_(sorted_values.slice(0, 1).ne(sorted_values.slice(0, 0, n - 1)));
  }
  const at::Tensor start_positions = Nonzero(starts).squeeze(1);
  const at::Tensor values = sorted_values.index_select(0, start_positions);
  at::Tensor inverse = at::empty({0}, long_options);
  if (return_inverse) {
    const at::Tensor group = starts.to(at::kLong).cumsum(0).sub_(1);
    inverse = at::empty({n}, long_options).scatter_(0, order, group).view(self.sizes());
  }
  at::Tensor counts = at::empty({0}, long_options);
  if (return_counts) {
    const at::Tensor ends = at::cat({start_positions.slice(0, 1),
                                     at::full({1}, n, long_options)});
    counts = ends.sub(start_positions);
  }
  return {values, inverse, counts};
}

// torch.equal: compared on the device; one bool read back.
bool Equal(const at::Tensor& self, const at::Tensor& other) {
  if (!self.sizes().equals(other.sizes()) || self.scalar_type() != other.scalar_type()) {
    return false;
  }
  const c10::DeviceGuard guard(self.device());
  return self.eq(other).all().item<bool>();
}

// torch.bincount: the length is max(input) + 1 (at least minlength), read
// back; the counting is a scatter-add on the device.
at::Tensor Bincount(const at::Tensor& self, const std::optional<at::Tensor>& weights,
                    int64_t minlength) {
  TORCH_CHECK_VALUE(self.dim() == 1, "bincount only supports 1-d non-negative integral inputs");
  TORCH_CHECK_VALUE(minlength >= 0, "minlength should be >= 0");
  const c10::DeviceGuard guard(self.device());
  const bool weighted = weights.has_value() && weights->defined();
  const at::ScalarType result_type =
      weighted ? (weights->scalar_type() == at::kFloat ? at::kFloat : at::kDouble) : at::kLong;
  if (self.numel() == 0) return at::zeros({minlength}, self.options().dtype(result_type));
  TORCH_CHECK_VALUE(self.min().item<int64_t>() >= 0, "bincount only supports 1-d non-negative integral inputs");
  const int64_t length = std::max(self.max().item<int64_t>() + 1, minlength);
  at::Tensor counts = at::zeros({length}, self.options().dtype(result_type));
  const at::Tensor index = self.to(at::kLong);
  return counts.index_add_(0, index, weighted ? weights->to(counts.scalar_type())
                                              : at::ones_like(index, counts.options()));
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("equal", Equal);
  m.impl("bincount", Bincount);
  m.impl("_unique2", Unique);
  m.impl("nonzero", Nonzero);
  m.impl("index.Tensor", Index);
  m.impl("_index_put_impl_", IndexPut);
  m.impl("masked_select", MaskedSelect);
}

}  // namespace torch_neuronx
