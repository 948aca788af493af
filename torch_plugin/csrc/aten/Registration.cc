// Every operator without an explicit neuron kernel goes to the generic path.
#include <torch/library.h>

#include "csrc/aten/GenericOp.h"

namespace torch_neuronx {

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&NeuronFallback>());
}

}  // namespace torch_neuronx
