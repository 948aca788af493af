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

namespace torch_neuronx {
namespace {

bool FlashAttentionApplies(const at::Tensor& query, const at::Tensor& key,
                           const at::Tensor& value, double dropout_p, bool enable_gqa) {
  const at::ScalarType dtype = query.scalar_type();
  const bool supported_dtype =
      dtype == at::kFloat || dtype == at::kBFloat16 || dtype == at::kHalf;
  const bool dense_4d = query.dim() == 4 && key.dim() == 4 && value.dim() == 4 &&
                        !query.is_nested() && !key.is_nested() && !value.is_nested();
  const bool same_dtype = key.scalar_type() == dtype && value.scalar_type() == dtype;
  const bool unit_last_stride = dense_4d && query.stride(-1) == 1 && key.stride(-1) == 1 &&
                                value.stride(-1) == 1;
  const bool same_heads = dense_4d && query.size(1) == key.size(1) && key.size(1) == value.size(1);
  const bool nonempty = dense_4d && query.size(2) > 0 && key.size(2) > 0;
  // The CPU flash kernel has no dropout: training with attention dropout
  // takes the math path.
  return supported_dtype && dense_4d && same_dtype && unit_last_stride &&
         (same_heads || !enable_gqa) && same_heads && nonempty && dropout_p == 0.0;
}

int64_t ChooseSdpBackend(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
                         const std::optional<at::Tensor>& /*attn_mask*/, double dropout_p,
                         bool /*is_causal*/, std::optional<double> /*scale*/, bool enable_gqa) {
  const at::Context& context = at::globalContext();
  if (context.userEnabledFlashSDP() &&
      FlashAttentionApplies(query, key, value, dropout_p, enable_gqa)) {
    return static_cast<int64_t>(at::SDPBackend::flash_attention);
  }
  return static_cast<int64_t>(at::SDPBackend::math);
}

}  // namespace
}  // namespace torch_neuronx

namespace at::native {
REGISTER_PRIVATEUSE1_DISPATCH(_fused_sdp_choice_stub, &torch_neuronx::ChooseSdpBackend)
}  // namespace at::native
