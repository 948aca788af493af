// Convolutions: ATen hands a backend it does not know the "overrideable"
// operators; the daemon runs the portable aten::convolution and
// aten::convolution_backward on them instead.
#include <ATen/core/Tensor.h>
#include <torch/library.h>

#include "csrc/aten/GenericOp.h"

namespace torch_neuronx {
namespace {

at::Tensor Convolution(const at::Tensor& input, const at::Tensor& weight,
                       const std::optional<at::Tensor>& bias, c10::IntArrayRef stride,
                       c10::IntArrayRef padding, c10::IntArrayRef dilation, bool transposed,
                       c10::IntArrayRef output_padding, int64_t groups) {
  static const c10::OperatorHandle convolution =
      c10::Dispatcher::singleton().findSchemaOrThrow("aten::convolution", "");
  torch::jit::Stack stack{input,      weight,         bias,  stride.vec(), padding.vec(),
                          dilation.vec(), transposed, output_padding.vec(), groups};
  LaunchOnDevice(convolution, &stack);
  return stack[0].toTensor();
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> ConvolutionBackward(
    const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& weight,
    c10::IntArrayRef stride, c10::IntArrayRef padding, c10::IntArrayRef dilation, bool transposed,
    c10::IntArrayRef output_padding, int64_t groups, std::array<bool, 3> output_mask) {
  static const c10::OperatorHandle backward =
      c10::Dispatcher::singleton().findSchemaOrThrow("aten::convolution_backward", "");
  const int64_t out_channels = transposed ? weight.size(1) * groups : weight.size(0);
  c10::IValue bias_sizes = output_mask[2] ? c10::IValue(std::vector<int64_t>{out_channels})
                                          : c10::IValue();
  torch::jit::Stack stack{grad_output,    input,         weight,
                          bias_sizes,     stride.vec(),  padding.vec(),
                          dilation.vec(), transposed,    output_padding.vec(),
                          groups,         c10::List<bool>({output_mask[0], output_mask[1], output_mask[2]})};
  LaunchOnDevice(backward, &stack);
  auto result = [&](size_t i) { return stack[i].isTensor() ? stack[i].toTensor() : at::Tensor(); };
  return {result(0), result(1), result(2)};
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("convolution_overrideable", Convolution);
  m.impl("convolution_backward_overrideable", ConvolutionBackward);
}

}  // namespace torch_neuronx
