// Every operator without an explicit neuron kernel goes to the generic path.
#include <torch/library.h>

#include "csrc/aten/GenericOp.h"

namespace torch_neuronx {
namespace {

void LaunchBoxed(const c10::OperatorHandle& op, c10::DispatchKeySet /*keys*/,
                 torch::jit::Stack* stack) {
  LaunchOnDevice(op, stack);
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
}

}  // namespace torch_neuronx
