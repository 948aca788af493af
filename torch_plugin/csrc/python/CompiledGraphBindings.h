// Binds torch_neuronx._C._load_graph and _CompiledGraph (torch.compile).
#ifndef TORCH_NEURONX_CSRC_PYTHON_COMPILED_GRAPH_BINDINGS_H_
#define TORCH_NEURONX_CSRC_PYTHON_COMPILED_GRAPH_BINDINGS_H_

#include <pybind11/pybind11.h>

namespace torch_neuronx {

void BindCompiledGraph(pybind11::module& module);

}  // namespace torch_neuronx

#endif  // TORCH_NEURONX_CSRC_PYTHON_COMPILED_GRAPH_BINDINGS_H_
