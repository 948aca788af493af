// Every operator without an explicit neuron kernel goes to the generic path.
#include <ATen/native/ForeachUtils.h>
#include <torch/library.h>

#include <vector>

#include "csrc/aten/GenericOp.h"

namespace torch_neuronx {
namespace {

void LaunchBoxed(const c10::OperatorHandle& op, c10::DispatchKeySet /*keys*/,
                 torch::jit::Stack* stack) {
  LaunchOnDevice(op, stack);
}

// The foreach Tensor overloads whose `scalars` is a 1-d CPU tensor of
// numbers (_foreach_addcdiv.Tensor, ...): as the CPU's and CUDA's kernels do,
// its numbers (checked by ATen's own conversion: on the CPU, contiguous, one
// per tensor) become the ScalarList overload's, which runs as it is.
void ScalarsTensorAsList(const c10::OperatorHandle& op, c10::DispatchKeySet /*keys*/,
                         torch::jit::Stack* stack) {
  const size_t argument_count = op.schema().arguments().size();
  c10::IValue& scalars = stack->back();
  const int64_t tensor_count =
      static_cast<int64_t>((*stack)[stack->size() - argument_count].toListRef().size());
  std::vector<c10::Scalar> numbers =
      at::native::convert_tensor_to_scalar_list(scalars.toTensor(), tensor_count);
  scalars = c10::IValue(std::move(numbers));
  c10::Dispatcher::singleton()
      .findSchemaOrThrow(op.schema().name().c_str(), "ScalarList")
      .callBoxed(stack);
}

}  // namespace

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&NeuronFallback>());
}

// Operators with a CompositeExplicitAutograd decomposition for devices
// without a kernel of their own (layer norm through batch norm on a
// reshaped input): the daemon has ATen's dedicated CPU kernel, which is
// faster, so they go to the generic path as they are.
TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("native_layer_norm", torch::CppFunction::makeFromBoxedFunction<&LaunchBoxed>());
  m.impl("native_group_norm", torch::CppFunction::makeFromBoxedFunction<&LaunchBoxed>());
  // Operators with a CPU kernel and a CompositeImplicitAutograd one, which
  // every device without a kernel of its own takes (before the fallback):
  // silu_backward as five operators, each rounding to bfloat16 where the
  // CPU's kernel rounds once. These are all of them in torch 2.13.
  m.impl("silu_backward", torch::CppFunction::makeFromBoxedFunction<&LaunchBoxed>());
  m.impl("mish_backward", torch::CppFunction::makeFromBoxedFunction<&LaunchBoxed>());
  m.impl("native_channel_shuffle", torch::CppFunction::makeFromBoxedFunction<&LaunchBoxed>());
  // A CompositeExplicitAutograd kernel that calls a CPU/CUDA DispatchStub
  // ("DispatchStub: missing kernel for neuron").
  m.impl("conj_physical_", torch::CppFunction::makeFromBoxedFunction<&LaunchBoxed>());
  // A CompositeExplicitAutograd kernel that refuses every device but the
  // CPU, CUDA and XPU by name ("mode only supports CPU, CUDA and XPU").
  m.impl("mode.values", torch::CppFunction::makeFromBoxedFunction<&LaunchBoxed>());
  for (const char* name : {"_foreach_addcdiv.Tensor", "_foreach_addcdiv_.Tensor",
                           "_foreach_addcmul.Tensor", "_foreach_addcmul_.Tensor"}) {
    m.impl(name, torch::CppFunction::makeFromBoxedFunction<&ScalarsTensorAsList>());
  }
}

// Operators whose CompositeExplicitAutograd kernel a device without its own
// takes, and which that kernel turns into many launches where the daemon
// needs one: the foreach family (an optimizer step) runs tensor by tensor,
// and every Scalar overload wraps its number in a CPU tensor and calls the
// Tensor overload, which must then copy that tensor to the device first.
// Sent as they are, a foreach call is one launch and a Scalar is an
// immediate. Found in the dispatcher's table, so operators PyTorch adds are
// covered: aten's, without a neuron kernel of their own, not out= ones.
bool RunsWholeInTheDaemon(const c10::OperatorHandle& op) {
  const c10::OperatorName& name = op.operator_name();
  if (!name.name.starts_with("aten::")) return false;
  const bool foreach = name.name.starts_with("aten::_foreach_");
  const bool scalar_overload = name.overload_name == "Scalar";
  if (!foreach && !scalar_overload) return false;
  if (name.overload_name.find("out") != std::string::npos) return false;
  return op.hasKernelForDispatchKey(c10::DispatchKey::CompositeExplicitAutograd) &&
         !op.hasKernelForDispatchKey(c10::DispatchKey::PrivateUse1);
}

const bool registered_composites = [] {
  static auto* library = new torch::Library(torch::Library::IMPL, "aten",
                                            c10::DispatchKey::PrivateUse1, __FILE__, __LINE__);
  for (const c10::OperatorName& name : c10::Dispatcher::singleton().getAllOpNames()) {
    std::optional<c10::OperatorHandle> op = c10::Dispatcher::singleton().findOp(name);
    if (!op || !RunsWholeInTheDaemon(*op)) continue;
    const std::string qualified =
        name.overload_name.empty() ? name.name.substr(6)
                                   : name.name.substr(6) + "." + name.overload_name;
    library->impl(qualified.c_str(), torch::CppFunction::makeFromBoxedFunction<&LaunchBoxed>());
  }
  return true;
}();

}  // namespace torch_neuronx
