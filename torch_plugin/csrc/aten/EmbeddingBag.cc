// embedding_bag's bag of each index (offset2bag), which its backward reads.
// The meta kernel (CUDA's rule) gives it one entry per index; the CPU
// kernel's sum fast path leaves it empty (its own backward rebuilds it), so
// the tensor the client holds would never be written. It is computed here,
// on the device, as the CPU's make_offset2bag does.
#include <ATen/core/Tensor.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/searchsorted.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include "csrc/aten/GenericOp.h"

namespace torch_neuronx {
namespace {

constexpr int64_t kModeSum = 0;

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> EmbeddingBag(
    const at::Tensor& weight, const at::Tensor& indices, const at::Tensor& offsets,
    bool scale_grad_by_freq, int64_t mode, bool sparse,
    const std::optional<at::Tensor>& per_sample_weights, bool include_last_offset,
    int64_t padding_idx) {
  static const c10::OperatorHandle embedding_bag =
      c10::Dispatcher::singleton().findSchemaOrThrow("aten::_embedding_bag", "");
  const c10::DeviceGuard guard(weight.device());
  torch::jit::Stack stack{weight, indices, offsets, scale_grad_by_freq, mode, sparse,
                          per_sample_weights, include_last_offset, padding_idx};
  LaunchOnDevice(embedding_bag, &stack);
  at::Tensor offset2bag = stack[1].toTensor();
  const int64_t n = indices.numel();
  if (mode == kModeSum && offsets.dim() == 1 && offsets.numel() > 0 && n > 0 &&
      offset2bag.numel() == n) {
    // The last bag starting at or before each position.
    const at::Tensor positions = at::arange(n, offsets.options());
    offset2bag.copy_(at::searchsorted(offsets, positions, /*out_int32=*/false, /*right=*/true)
                         .sub_(1));
  }
  return {stack[0].toTensor(), offset2bag, stack[2].toTensor(), stack[3].toTensor()};
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_embedding_bag", EmbeddingBag);
}

}  // namespace torch_neuronx
