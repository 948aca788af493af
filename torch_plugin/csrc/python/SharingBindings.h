// torch_neuronx._C's sharing of neuron storages between processes, behind
// torch_neuronx._multiprocessing's reducers.
#ifndef TORCH_NEURONX_CSRC_PYTHON_SHARINGBINDINGS_H_
#define TORCH_NEURONX_CSRC_PYTHON_SHARINGBINDINGS_H_

#include <pybind11/pybind11.h>

namespace torch_neuronx {

void BindSharing(pybind11::module& module);

}  // namespace torch_neuronx

#endif  // TORCH_NEURONX_CSRC_PYTHON_SHARINGBINDINGS_H_
