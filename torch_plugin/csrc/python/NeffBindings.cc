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

std::string Describe(at::ScalarType dtype, c10::IntArrayRef shape) {
  return py::str(py::cast(dtype)).cast<std::string>() + c10::str(shape);
}

// The call's inputs, in the NEFF's order: tensors of each input's dtype and
// shape (where PyTorch has its dtype), made contiguous. TypeError and
// ValueError as a Python function's.
std::vector<at::Tensor> CheckedInputs(const PyNeff& neff, const py::sequence& given) {
  std::vector<const neuronrt::Session::NeffTensor*> expected;
  for (const neuronrt::Session::NeffTensor& tensor : neff.tensors) {
    if (tensor.input) expected.push_back(&tensor);
  }
  if (given.size() != expected.size()) {
    std::string names;
    for (const auto* tensor : expected) names += (names.empty() ? "'" : ", '") + tensor->name + "'";
    throw py::type_error(c10::str("NEFF '", neff.name, "' takes ", expected.size(), " inputs [",
                                  names, "]; ", given.size(), " given"));
  }
  std::vector<at::Tensor> inputs;
  inputs.reserve(expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    const py::handle item = given[i];
    if (!THPVariable_Check(item.ptr())) {
      throw py::type_error(c10::str("NEFF '", neff.name, "' input ", expected[i]->name,
                                    " must be a tensor, not ", py::type::of(item).attr("__name__")
                                                                   .cast<std::string>()));
    }
    const at::Tensor& tensor = THPVariable_Unpack(item.ptr());
    if (expected[i]->dtype) {
      const auto dtype = static_cast<at::ScalarType>(*expected[i]->dtype);
      const std::vector<int64_t> shape(expected[i]->shape.begin(), expected[i]->shape.end());
      if (tensor.scalar_type() != dtype || tensor.sizes() != c10::IntArrayRef(shape)) {
        throw py::value_error(c10::str("NEFF '", neff.name, "' input ", expected[i]->name,
                                       " is ", Describe(dtype, shape), "; it was given ",
                                       Describe(tensor.scalar_type(), tensor.sizes())));
      }
    }
    inputs.push_back(tensor.contiguous());
  }
  return inputs;
}

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
      "_run_neff",
      [](const PyNeff& neff, const py::sequence& given, int device, bool wait) {
        std::vector<at::Tensor> inputs = CheckedInputs(neff, given);
        py::gil_scoped_release no_gil;
        return RunNeff(neff.executable_id, neff.name, neff.tensors, inputs,
                       static_cast<c10::DeviceIndex>(device), wait);
      },
      py::arg("neff"), py::arg("inputs"), py::arg("device"), py::arg("wait"));
}

}  // namespace torch_neuronx
