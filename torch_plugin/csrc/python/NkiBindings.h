// Binds torch_neuronx._C's NKI entry points (the nki package): a traced
// kernel's description to a plan, loading, launching and simulating it.
#ifndef TORCH_NEURONX_CSRC_PYTHON_NKI_BINDINGS_H_
#define TORCH_NEURONX_CSRC_PYTHON_NKI_BINDINGS_H_

#include <pybind11/pybind11.h>

namespace torch_neuronx {

void BindNki(pybind11::module& module);

}  // namespace torch_neuronx

#endif  // TORCH_NEURONX_CSRC_PYTHON_NKI_BINDINGS_H_
