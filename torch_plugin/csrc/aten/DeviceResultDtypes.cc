#include "csrc/aten/DeviceResultDtypes.h"

#include <ATen/ops/empty_strided.h>

#include <string_view>

namespace torch_neuronx {
namespace {

// Batch norm on reduced-precision input: the meta kernels (CUDA's rule)
// keep the saved mean and inverse deviation, and the functional form's new
// running statistics, in float32; the CPU kernels keep them in the input's
// dtype unless a parameter or running statistic is float32 (mixed
// precision, then float32). Its backward refuses float32 statistics beside
// bfloat16 parameters.
bool IsBatchNorm(std::string_view name) {
  return name == "aten::native_batch_norm" || name == "aten::_native_batch_norm_legit" ||
         name == "aten::_native_batch_norm_legit_functional" ||
         name == "aten::_native_batch_norm_legit_no_training";
}

void MatchBatchNorm(const torch::jit::Stack& arguments, torch::jit::Stack& meta) {
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

}  // namespace

void MatchDeviceResultDtypes(const c10::OperatorHandle& op, const torch::jit::Stack& arguments,
                             torch::jit::Stack& meta) {
  if (IsBatchNorm(op.schema().name())) MatchBatchNorm(arguments, meta);
}

}  // namespace torch_neuronx
