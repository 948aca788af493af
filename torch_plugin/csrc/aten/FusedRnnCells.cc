// The fused RNN cells that nn.GRU and nn.LSTM call on accelerators
// (ATen's GRUCell/LSTMCell take the fused path for every PrivateUse1
// device): the CPU has no kernel for them, so they are written here from
// ATen operators. The forward is registered for autograd too, so training
// differentiates through those operators; the backward operators, which a
// program may call directly, read the workspace laid out as CUDA's is:
//   GRU:  [reset, input gate, new gate, hx, hidden new-gate term]
//   LSTM: [input, forget, cell, output] gates after their activations
#include <ATen/core/Tensor.h>
#include <ATen/TensorOperators.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/sigmoid.h>
#include <ATen/ops/sum.h>
#include <ATen/ops/tanh.h>
#include <ATen/ops/zeros_like.h>
#include <torch/library.h>

#include <optional>
#include <tuple>

namespace torch_neuronx {
namespace {

at::Tensor WithBias(const at::Tensor& gates, const std::optional<at::Tensor>& bias) {
  return bias.has_value() && bias->defined() ? gates + *bias : gates;
}

std::tuple<at::Tensor, at::Tensor> FusedGruCell(const at::Tensor& input_gates,
                                                const at::Tensor& hidden_gates,
                                                const at::Tensor& hx,
                                                const std::optional<at::Tensor>& input_bias,
                                                const std::optional<at::Tensor>& hidden_bias) {
  const auto in = WithBias(input_gates, input_bias).chunk(3, 1);
  const auto hidden = WithBias(hidden_gates, hidden_bias).chunk(3, 1);
  const at::Tensor reset = at::sigmoid(in[0] + hidden[0]);
  const at::Tensor update = at::sigmoid(in[1] + hidden[1]);
  const at::Tensor candidate = at::tanh(in[2] + reset * hidden[2]);
  const at::Tensor hy = candidate + update * (hx - candidate);
  const at::Tensor workspace = at::cat({reset, update, candidate, hx, hidden[2]}, 1);
  return {hy, workspace};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor> FusedGruCellBackward(
    const at::Tensor& grad_hy, const at::Tensor& workspace, bool has_bias) {
  const auto saved = workspace.chunk(5, 1);
  const at::Tensor &reset = saved[0], &update = saved[1], &candidate = saved[2], &hx = saved[3],
                   &hidden_new = saved[4];
  const at::Tensor grad_update = grad_hy * (hx - candidate) * update * (1 - update);
  const at::Tensor grad_hx = grad_hy * update;
  const at::Tensor grad_candidate = grad_hy * (1 - update) * (1 - candidate * candidate);
  const at::Tensor grad_hidden_new = grad_candidate * reset;
  const at::Tensor grad_reset = grad_candidate * hidden_new * reset * (1 - reset);
  at::Tensor grad_input_gates = at::cat({grad_reset, grad_update, grad_candidate}, 1);
  at::Tensor grad_hidden_gates = at::cat({grad_reset, grad_update, grad_hidden_new}, 1);
  at::Tensor grad_input_bias, grad_hidden_bias;
  if (has_bias) {
    grad_input_bias = grad_input_gates.sum(0);
    grad_hidden_bias = grad_hidden_gates.sum(0);
  }
  return {grad_input_gates, grad_hidden_gates, grad_hx, grad_input_bias, grad_hidden_bias};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> FusedLstmCell(
    const at::Tensor& input_gates, const at::Tensor& hidden_gates, const at::Tensor& cx,
    const std::optional<at::Tensor>& input_bias, const std::optional<at::Tensor>& hidden_bias) {
  const auto gates =
      (WithBias(input_gates, input_bias) + WithBias(hidden_gates, hidden_bias)).chunk(4, 1);
  const at::Tensor input = at::sigmoid(gates[0]);
  const at::Tensor forget = at::sigmoid(gates[1]);
  const at::Tensor cell = at::tanh(gates[2]);
  const at::Tensor output = at::sigmoid(gates[3]);
  const at::Tensor cy = forget * cx + input * cell;
  const at::Tensor hy = output * at::tanh(cy);
  return {hy, cy, at::cat({input, forget, cell, output}, 1)};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> FusedLstmCellBackward(
    const std::optional<at::Tensor>& grad_hy, const std::optional<at::Tensor>& grad_cy,
    const at::Tensor& cx, const at::Tensor& cy, const at::Tensor& workspace, bool has_bias) {
  const bool has_grad_hy = grad_hy.has_value() && grad_hy->defined();
  const bool has_grad_cy = grad_cy.has_value() && grad_cy->defined();
  if (!has_grad_hy && !has_grad_cy) return {};
  const auto saved = workspace.chunk(4, 1);
  const at::Tensor &input = saved[0], &forget = saved[1], &cell = saved[2], &output = saved[3];
  const at::Tensor tanh_cy = at::tanh(cy);
  at::Tensor grad_c = at::zeros_like(cy);
  at::Tensor grad_output = at::zeros_like(cy);
  if (has_grad_hy) {
    grad_output = *grad_hy * tanh_cy * output * (1 - output);
    grad_c = *grad_hy * output * (1 - tanh_cy * tanh_cy);
  }
  if (has_grad_cy) grad_c = grad_c + *grad_cy;
  const at::Tensor grad_input = grad_c * cell * input * (1 - input);
  const at::Tensor grad_forget = grad_c * cx * forget * (1 - forget);
  const at::Tensor grad_cell = grad_c * input * (1 - cell * cell);
  at::Tensor grad_gates = at::cat({grad_input, grad_forget, grad_cell, grad_output}, 1);
  at::Tensor grad_cx = grad_c * forget;
  at::Tensor grad_bias = has_bias ? grad_gates.sum(0) : at::Tensor();
  return {grad_gates, grad_cx, grad_bias};
}

}  // namespace

// The forward as a composite for autograd (it differentiates the operators
// above) and for calls below autograd (no_grad, inference mode).
TORCH_LIBRARY_IMPL(aten, AutogradPrivateUse1, m) {
  m.impl("_thnn_fused_gru_cell", FusedGruCell);
  m.impl("_thnn_fused_lstm_cell", FusedLstmCell);
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_thnn_fused_gru_cell", FusedGruCell);
  m.impl("_thnn_fused_lstm_cell", FusedLstmCell);
  m.impl("_thnn_fused_gru_cell_backward", FusedGruCellBackward);
  m.impl("_thnn_fused_lstm_cell_backward_impl", FusedLstmCellBackward);
}

}  // namespace torch_neuronx
