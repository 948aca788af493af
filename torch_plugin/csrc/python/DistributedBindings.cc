#include "csrc/python/DistributedBindings.h"

#include <pybind11/chrono.h>
#include <torch/csrc/utils/pybind.h>

#include "csrc/distributed/NeuronBackend.h"

namespace torch_neuronx {

void BindDistributed(pybind11::module& module) {
  // The c10d creator's body (torch_neuronx/distributed.py registers it):
  // joins the group's communicator, blocking until every rank has.
  module.def(
      "_create_neuron_backend",
      [](const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
         std::chrono::milliseconds timeout) -> c10::intrusive_ptr<c10d::Backend> {
        pybind11::gil_scoped_release release;
        return c10::make_intrusive<NeuronBackend>(store, rank, size, timeout);
      },
      pybind11::arg("store"), pybind11::arg("rank"), pybind11::arg("size"),
      pybind11::arg("timeout"));
  module.def("_neuron_backend_communicator", [](const c10::intrusive_ptr<c10d::Backend>& backend) {
    auto* neuron = dynamic_cast<NeuronBackend*>(backend.get());
    TORCH_CHECK(neuron != nullptr, "not a neuron process group backend");
    return neuron->communicator_name();
  });
}

}  // namespace torch_neuronx
