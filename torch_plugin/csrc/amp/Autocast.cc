// torch.autocast("neuron"): which operators run in the lower precision
// (bfloat16 by default), which stay in float32, which promote. The same
// policy as CUDA's, for the operators a training step uses.
#include <ATen/autocast_mode.h>
#include <torch/library.h>

namespace torch_neuronx {
namespace {

using at::Tensor;
using c10::IntArrayRef;
using c10::Scalar;
using c10::ScalarType;

// Operators without a policy run as they are.
TORCH_LIBRARY_IMPL(_, AutocastPrivateUse1, m) { m.fallback(torch::CppFunction::makeFallthrough()); }

// PyTorch itself registers a few of these for PrivateUse1 (addmm): those
// are kept, so that nothing is registered twice.
class UnlessRegistered {
 public:
  explicit UnlessRegistered(torch::Library& library) : library_(library) {}

  template <typename Name, typename Function>
  UnlessRegistered& impl(Name name, Function&& function) {
    const std::string qualified(static_cast<const char*>(name));
    const size_t dot = qualified.find('.');
    const c10::OperatorName op(qualified.substr(0, dot),
                               dot == std::string::npos ? "" : qualified.substr(dot + 1));
    std::optional<c10::OperatorHandle> handle = c10::Dispatcher::singleton().findOp(op);
    if (handle && handle->hasKernelForDispatchKey(c10::DispatchKey::AutocastPrivateUse1)) {
      return *this;
    }
    library_.impl(name, std::forward<Function>(function));
    return *this;
  }

 private:
  torch::Library& library_;
};

TORCH_LIBRARY_IMPL(aten, AutocastPrivateUse1, library) {
  UnlessRegistered m(library);
  // Matrix products and convolutions: the lower precision.
  KERNEL_PRIVATEUSEONE(addmm, lower_precision_fp)
  KERNEL_PRIVATEUSEONE(addmv, lower_precision_fp)
  KERNEL_PRIVATEUSEONE(addr, lower_precision_fp)
  KERNEL_PRIVATEUSEONE(matmul, lower_precision_fp)
  KERNEL_PRIVATEUSEONE(einsum, lower_precision_fp)
  KERNEL_PRIVATEUSEONE(mm, lower_precision_fp)
  KERNEL_PRIVATEUSEONE(mv, lower_precision_fp)
  KERNEL_PRIVATEUSEONE(linear, lower_precision_fp)
  KERNEL_PRIVATEUSEONE(addbmm, lower_precision_fp)
  KERNEL_PRIVATEUSEONE(baddbmm, lower_precision_fp)
  KERNEL_PRIVATEUSEONE(bmm, lower_precision_fp)
#define NEURON_LOWER_PRECISION(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, lower_precision_fp)
  AT_FORALL_LOWER_PRECISION_FP(NEURON_LOWER_PRECISION)
#undef NEURON_LOWER_PRECISION

  // Numerically sensitive operators: float32.
#define NEURON_FP32(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32)
  AT_FORALL_FP32(NEURON_FP32)
#undef NEURON_FP32
  KERNEL_PRIVATEUSEONE(log, fp32)
  KERNEL_PRIVATEUSEONE(log1p, fp32)
  KERNEL_PRIVATEUSEONE(rsqrt, fp32)
  KERNEL_PRIVATEUSEONE(pow, Tensor_Scalar, fp32)
  KERNEL_PRIVATEUSEONE(pow, Tensor_Tensor, fp32)
  KERNEL_PRIVATEUSEONE(softplus, fp32)
  KERNEL_PRIVATEUSEONE(layer_norm, fp32)
  KERNEL_PRIVATEUSEONE(group_norm, fp32)
  KERNEL_PRIVATEUSEONE(nll_loss, fp32)
  KERNEL_PRIVATEUSEONE(mse_loss, fp32)
  KERNEL_PRIVATEUSEONE(l1_loss, fp32)
  KERNEL_PRIVATEUSEONE(smooth_l1_loss, fp32)
  KERNEL_PRIVATEUSEONE(kl_div, fp32)
  KERNEL_PRIVATEUSEONE(binary_cross_entropy_with_logits, fp32)
  KERNEL_PRIVATEUSEONE(logsumexp, fp32)
#define NEURON_FP32_SET_OPT_DTYPE(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32_set_opt_dtype)
  AT_FORALL_FP32_SET_OPT_DTYPE(NEURON_FP32_SET_OPT_DTYPE)
#undef NEURON_FP32_SET_OPT_DTYPE
  AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE(KERNEL_DIFFERENT_REDISPATCH_SIGNATURE_PRIVATEUSEONE)

  // Mixed inputs: the widest type.
#define NEURON_PROMOTE(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, promote)
  AT_FORALL_PROMOTE(NEURON_PROMOTE)
#undef NEURON_PROMOTE
}

}  // namespace
}  // namespace torch_neuronx
