// Operators whose CUDA kernel takes dtypes the CPU kernel refuses, which
// models written for CUDA rely on. The daemon runs ATen's CPU kernels, so
// these run as the nearest dtype the CPU kernel has, on the device.
#include <ATen/core/Tensor.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include "csrc/aten/GenericOp.h"

namespace torch_neuronx {
namespace {

at::Tensor LaunchHistc(const at::Tensor& self, int64_t bins, const at::Scalar& min,
                       const at::Scalar& max) {
  static const c10::OperatorHandle histc =
      c10::Dispatcher::singleton().findSchemaOrThrow("aten::histc", "");
  torch::jit::Stack stack{self, bins, min, max};
  LaunchOnDevice(histc, &stack);
  return stack[0].toTensor();
}

// torch.histc on integer tensors (the MoE routers of Mixtral and Qwen2-MoE
// in Transformers count tokens per expert with it; the CPU refuses:
// "histogram_cpu" not implemented for 'Int'). As on CUDA the counts come
// back in the input's dtype; the values are binned as float32, which is
// exact for magnitudes below 2**24.
at::Tensor Histc(const at::Tensor& self, int64_t bins, const at::Scalar& min,
                 const at::Scalar& max) {
  if (!at::isIntegralType(self.scalar_type(), /*includeBool=*/false)) {
    return LaunchHistc(self, bins, min, max);
  }
  const c10::DeviceGuard guard(self.device());
  return LaunchHistc(self.to(at::kFloat), bins, min, max).to(self.scalar_type());
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("histc", Histc);
}

}  // namespace torch_neuronx
