// torch_neuronx._C's profiler functions: the last capture's records, for
// torch_neuronx.profiling.
#ifndef TORCH_NEURONX_CSRC_PYTHON_PROFILERBINDINGS_H_
#define TORCH_NEURONX_CSRC_PYTHON_PROFILERBINDINGS_H_

#include <pybind11/pybind11.h>

namespace torch_neuronx {

void BindProfiler(pybind11::module& module);

}  // namespace torch_neuronx

#endif  // TORCH_NEURONX_CSRC_PYTHON_PROFILERBINDINGS_H_
