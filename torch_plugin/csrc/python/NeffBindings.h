// Binds torch_neuronx._C._load_neff and _run_neff (torch_neuronx.neff).
#ifndef TORCH_NEURONX_CSRC_PYTHON_NEFF_BINDINGS_H_
#define TORCH_NEURONX_CSRC_PYTHON_NEFF_BINDINGS_H_

#include <pybind11/pybind11.h>

namespace torch_neuronx {

void BindNeff(pybind11::module& module);

}  // namespace torch_neuronx

#endif  // TORCH_NEURONX_CSRC_PYTHON_NEFF_BINDINGS_H_
