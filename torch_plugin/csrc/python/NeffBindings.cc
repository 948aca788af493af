#include "csrc/python/NeffBindings.h"

#include <torch/extension.h>

#include <string>
#include <vector>

#include "csrc/neff/NeffLaunch.h"

namespace torch_neuronx {
namespace {

namespace py = pybind11;

// A loaded NEFF, for torch_neuronx.neff: its executable and tensors.
struct PyNeff {
  uint64_t executable_id = 0;
  std::string name;
  std::vector<neuronrt::Session::NeffTensor> tensors;
};

}  // namespace

void BindNeff(py::module& module) {
  py::class_<PyNeff>(module, "_Neff")
      .def_readonly("executable_id", &PyNeff::executable_id)
      .def_readonly("name", &PyNeff::name)
      // [(name, input, size_bytes, shape, dtype or None)], in launch order.
      .def_property_readonly("tensors", [](const PyNeff& neff) {
        py::list tensors;
        for (const neuronrt::Session::NeffTensor& tensor : neff.tensors) {
          py::object dtype = py::none();
          if (tensor.dtype) dtype = py::cast(static_cast<at::ScalarType>(*tensor.dtype));
          tensors.append(py::make_tuple(tensor.name, tensor.input, tensor.size_bytes,
                                        tensor.shape, dtype));
        }
        return tensors;
      });
  module.def(
      "_load_neff",
      [](py::bytes neff, const std::string& name) {
        const std::string bytes = neff;
        py::gil_scoped_release no_gil;
        neuronrt::Session::LoadedNeff loaded = LoadNeff(bytes, name);
        return PyNeff{.executable_id = loaded.executable_id,
                      .name = name,
                      .tensors = std::move(loaded.tensors)};
      },
      py::arg("neff"), py::arg("name"));
  module.def(
      "_launch_neff",
      [](const PyNeff& neff, const std::vector<at::Tensor>& tensors, int device, bool wait) {
        py::gil_scoped_release no_gil;
        LaunchNeff(neff.executable_id, neff.name, neff.tensors, tensors,
                   static_cast<c10::DeviceIndex>(device), wait);
      },
      py::arg("neff"), py::arg("tensors"), py::arg("device"), py::arg("wait"));
}

}  // namespace torch_neuronx
