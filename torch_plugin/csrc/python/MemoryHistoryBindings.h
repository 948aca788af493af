// torch_neuronx._C's memory history: _record_memory_history and _snapshot
// behind torch.neuron.memory, in the dictionaries of PyTorch's memory
// snapshot format (torch.cuda.memory._snapshot).
#ifndef TORCH_NEURONX_CSRC_PYTHON_MEMORYHISTORYBINDINGS_H_
#define TORCH_NEURONX_CSRC_PYTHON_MEMORYHISTORYBINDINGS_H_

#include <pybind11/pybind11.h>

namespace torch_neuronx {

void BindMemoryHistory(pybind11::module& module);

}  // namespace torch_neuronx

#endif  // TORCH_NEURONX_CSRC_PYTHON_MEMORYHISTORYBINDINGS_H_
