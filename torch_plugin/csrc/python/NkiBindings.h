// Binds torch_neuronx._C's NKI entry points (the nki package): a traced
// kernel's description to a plan, loading, launching and simulating it.
#ifndef TORCH_NEURONX_CSRC_PYTHON_NKI_BINDINGS_H_
#define TORCH_NEURONX_CSRC_PYTHON_NKI_BINDINGS_H_

#include <pybind11/pybind11.h>

#include <cstdint>

#include "neuron/rtd/nki_kernel.h"

namespace torch_neuronx {

// A traced kernel as the daemon will see it (torch_neuronx._C._NkiPlan),
// with its executable once loaded (per process; the daemon shares it
// host-wide). Graphs embed the plans of the kernels they call.
struct PyNkiPlan {
  neuron::rtd::NkiKernelPlan plan;
  uint64_t executable_id = 0;
};

void BindNki(pybind11::module& module);

}  // namespace torch_neuronx

#endif  // TORCH_NEURONX_CSRC_PYTHON_NKI_BINDINGS_H_
