// scaled_dot_product_attention: which fused kernel the daemon runs. Without
// a choice registered for the device, ATen takes the unfused math path
// (separate matmuls, softmax, masking: several launches and full-size
// intermediates). The daemon runs ATen's CPU kernels, so the CPU's fused
// flash-attention kernel serves wherever its constraints hold.
#include <ATen/Context.h>
#include <ATen/SDPBackend.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/DispatchStub.h>
#include <ATen/native/transformers/attention.h>
#include <ATen/native/transformers/sdp_utils_cpp.h>
#include <c10/util/Array.h>

namespace torch_neuronx {
namespace {

bool SameHeadDims(const sdp::sdp_params& params, bool /*debug*/) {
  const c10::SymInt& head_dim = params.query.sym_size(-1);
  return params.key.sym_size(-1) == head_dim && params.value.sym_size(-1) == head_dim;
}

// The CPU's own gates for its flash kernel (ATen's use_flash_attention_cpp,
// whose definition is not exported), so that neuron picks the fused kernel
// exactly where the CPU would: no dropout, dense 4-d inputs with unit last
// strides, a mask of a broadcastable shape that needs no gradient (T5's
// learned position bias takes the math path). Unlike the CPU, grouped-query
// inputs take the math path.
bool FlashAttentionApplies(const sdp::sdp_params& params) {
  constexpr auto kDtypes = c10::array_of<at::ScalarType>(at::kFloat, at::kBFloat16, at::kHalf);
  constexpr auto kConstraints = c10::array_of<bool (*)(const sdp::sdp_params&, bool)>(
      sdp::check_runtime_disabled_flash, sdp::check_nested_tensor, sdp::check_for_dropout,
      sdp::check_tensor_shapes,
      sdp::check_batch_size_and_num_heads_dense</*supports_gqa=*/false>,
      sdp::check_attn_mask_shape, SameHeadDims, sdp::check_nonzero_sequence_lengths_dense,
      sdp::check_last_dim_stride_equals_1_dense</*ignore_singleton_dim=*/false>);
  for (const auto& constraint : kConstraints) {
    if (!constraint(params, /*debug=*/false)) return false;
  }
  return sdp::check_tensor_dtype(params, kDtypes, /*debug=*/false);
}

int64_t ChooseSdpBackend(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
                         const std::optional<at::Tensor>& attn_mask, double dropout_p,
                         bool is_causal, std::optional<double> /*scale*/, bool enable_gqa) {
  const sdp::sdp_params params{query, key, value, attn_mask, dropout_p, is_causal, enable_gqa};
  if (FlashAttentionApplies(params)) {
    return static_cast<int64_t>(at::SDPBackend::flash_attention);
  }
  return static_cast<int64_t>(at::SDPBackend::math);
}

}  // namespace
}  // namespace torch_neuronx

namespace at::native {
REGISTER_PRIVATEUSE1_DISPATCH(_fused_sdp_choice_stub, &torch_neuronx::ChooseSdpBackend)
}  // namespace at::native
