#include "csrc/aten/DeviceResultDtypes.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>

#include <algorithm>

#include <string_view>

namespace torch_neuronx {
namespace {

// Batch and layer norm on reduced-precision input: the meta kernels (CUDA's
// rule) keep the saved mean and inverse deviation, and the functional
// forms' new running statistics, in float32; the CPU kernels keep them in
// the input's dtype unless a parameter or running statistic is float32
// (mixed precision, then float32). Batch norm's backward refuses float32
// statistics beside bfloat16 parameters.
bool KeepsStatisticsInInputDtype(std::string_view name) {
  return name == "aten::native_batch_norm" || name == "aten::_native_batch_norm_legit" ||
         name == "aten::_native_batch_norm_legit_functional" ||
         name == "aten::_native_batch_norm_legit_no_training" ||
         name == "aten::_batch_norm_with_update" ||
         name == "aten::_batch_norm_with_update_functional" ||
         name == "aten::_batch_norm_no_update" || name == "aten::native_layer_norm";
}

void MatchStatistics(const torch::jit::Stack& arguments, torch::jit::Stack& meta) {
  if (arguments.empty() || !arguments[0].isTensor()) return;
  const c10::ScalarType input = arguments[0].toTensor().scalar_type();
  if (input != c10::kBFloat16 && input != c10::kHalf) return;
  for (size_t i = 1; i < arguments.size(); ++i) {
    if (arguments[i].isTensor() && arguments[i].toTensor().defined() &&
        arguments[i].toTensor().scalar_type() == c10::kFloat) {
      return;  // mixed precision: float32 statistics, as the meta kernel says
    }
  }
  for (size_t r = 1; r < meta.size(); ++r) {
    if (!meta[r].isTensor()) continue;
    const at::Tensor& shaped = meta[r].toTensor();
    if (!shaped.defined() || shaped.scalar_type() != c10::kFloat) continue;
    meta[r] = at::empty_strided(shaped.sizes(), shaped.strides(),
                                shaped.options().dtype(input));
  }
}

// embedding_bag with include_last_offset: the meta kernel gives bag_size
// one entry per offset, the CPU kernel one per bag (one fewer), except on
// the sum path of the forward-only form.
void MatchEmbeddingBag(std::string_view name, const torch::jit::Stack& arguments,
                       torch::jit::Stack& meta) {
  constexpr size_t kOffsets = 2, kMode = 4, kIncludeLastOffset = 7, kBagSize = 2;
  if (arguments.size() <= kIncludeLastOffset || !arguments[kIncludeLastOffset].isBool() ||
      !arguments[kIncludeLastOffset].toBool() || meta.size() <= kBagSize ||
      !arguments[kOffsets].isTensor() || !meta[kBagSize].isTensor()) {
    return;
  }
  const bool forward_only = name == "aten::_embedding_bag_forward_only";
  if (forward_only && arguments[kMode].isInt() && arguments[kMode].toInt() == 0) return;
  const int64_t bags = std::max<int64_t>(arguments[kOffsets].toTensor().numel() - 1, 0);
  meta[kBagSize] = at::empty({bags}, meta[kBagSize].toTensor().options());
}

}  // namespace

void MatchDeviceResultDtypes(const c10::OperatorHandle& op, const torch::jit::Stack& arguments,
                             torch::jit::Stack& meta) {
  const std::string& name = op.schema().name();
  if (KeepsStatisticsInInputDtype(name)) MatchStatistics(arguments, meta);
  if (name == "aten::_embedding_bag" || name == "aten::_embedding_bag_forward_only") {
    MatchEmbeddingBag(name, arguments, meta);
  }
}

}  // namespace torch_neuronx
