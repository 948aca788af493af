// Binds torch_neuronx._C._create_neuron_backend (torch.distributed).
#ifndef TORCH_NEURONX_CSRC_PYTHON_DISTRIBUTED_BINDINGS_H_
#define TORCH_NEURONX_CSRC_PYTHON_DISTRIBUTED_BINDINGS_H_

#include <pybind11/pybind11.h>

namespace torch_neuronx {

void BindDistributed(pybind11::module& module);

}  // namespace torch_neuronx

#endif  // TORCH_NEURONX_CSRC_PYTHON_DISTRIBUTED_BINDINGS_H_
