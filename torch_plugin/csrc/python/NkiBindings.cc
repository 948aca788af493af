#include "csrc/python/NkiBindings.h"

#include <torch/extension.h>

#include <string>
#include <utility>
#include <vector>

#include "csrc/nki/NkiKernel.h"

namespace torch_neuronx {
namespace {

namespace py = pybind11;
namespace rtd = neuron::rtd;

template <typename Enum>
Enum Named(std::optional<Enum> (*lookup)(std::string_view), const py::handle& name,
           const char* what) {
  if (name.is_none()) return Enum::kCount;
  const std::string text = py::cast<std::string>(name);
  const std::optional<Enum> value = lookup(text);
  if (!value) throw py::value_error(std::string("unknown ") + what + " '" + text + "'");
  return *value;
}

std::vector<rtd::NkiDim> DimsOf(const py::handle& pairs) {
  std::vector<rtd::NkiDim> dims;
  for (const py::handle& dim : py::cast<py::list>(pairs)) {
    const auto pair = py::cast<py::tuple>(dim);
    dims.push_back(
        rtd::NkiDim{.stride = py::cast<int64_t>(pair[0]), .count = py::cast<int64_t>(pair[1])});
  }
  return dims;
}

rtd::NkiAccess AccessOf(const py::handle& description) {
  // (allocation, offset, [(stride, count), ...]), and optionally the
  // indirect part ((allocation, offset, [(stride, count), ...]), dim, stride).
  const auto fields = py::cast<py::tuple>(description);
  rtd::NkiAccess access{.allocation = py::cast<uint32_t>(fields[0]),
                        .offset = py::cast<int64_t>(fields[1]),
                        .dims = DimsOf(fields[2]),
                        .indirect = std::nullopt};
  if (fields.size() > 3) {
    const auto indirect = py::cast<py::tuple>(fields[3]);
    const auto index = py::cast<py::tuple>(indirect[0]);
    access.indirect = rtd::NkiIndirect{.allocation = py::cast<uint32_t>(index[0]),
                                       .offset = py::cast<int64_t>(index[1]),
                                       .dims = DimsOf(index[2]),
                                       .dim = py::cast<int32_t>(indirect[1]),
                                       .stride = py::cast<int64_t>(indirect[2])};
  }
  return access;
}

rtd::NkiInstruction InstructionOf(const py::handle& description) {
  // (opcode, operands, alu, activation, scalars, flags, axes, source)
  const auto fields = py::cast<py::tuple>(description);
  rtd::NkiInstruction instruction;
  instruction.opcode = Named<rtd::NkiOpcode>(&rtd::NkiOpcodeNamed, fields[0], "NKI instruction");
  for (const py::handle& operand : py::cast<py::list>(fields[1])) {
    instruction.operands.push_back(operand.is_none() ? std::nullopt
                                                     : std::optional(AccessOf(operand)));
  }
  for (const py::handle& op : py::cast<py::list>(fields[2])) {
    instruction.alu.push_back(Named<rtd::NkiAluOp>(&rtd::NkiAluOpNamed, op, "NKI operator"));
  }
  instruction.activation = fields[3].is_none()
                               ? rtd::NkiActivation::kCopy
                               : Named<rtd::NkiActivation>(&rtd::NkiActivationNamed, fields[3],
                                                           "activation function");
  instruction.scalars = py::cast<std::vector<double>>(fields[4]);
  instruction.flags = py::cast<std::vector<bool>>(fields[5]);
  instruction.axes = py::cast<std::vector<int64_t>>(fields[6]);
  instruction.source = py::cast<uint32_t>(fields[7]);
  return instruction;
}

// A dtype as the plan numbers it: a torch.dtype, or an int for NKI's
// dtypes torch has not (rtd::kNkiFloat8E4m3).
int32_t DtypeOf(const py::handle& dtype) {
  if (py::isinstance<py::int_>(dtype)) return py::cast<int32_t>(dtype);
  return static_cast<int32_t>(py::cast<at::ScalarType>(dtype));
}

rtd::NkiAllocation AllocationOf(const py::handle& description) {
  // (space, dtype, name, address_index, elements, partitions, free_elements,
  //  partition_start, byte_offset, shape)
  const auto fields = py::cast<py::tuple>(description);
  TORCH_CHECK(fields.size() == 10, "an NKI allocation is described by 10 fields");
  return rtd::NkiAllocation{
      .space = static_cast<rtd::NkiSpace>(py::cast<int32_t>(fields[0])),
      .dtype = DtypeOf(fields[1]),
      .name = py::cast<std::string>(fields[2]),
      .address_index = py::cast<uint32_t>(fields[3]),
      .elements = py::cast<int64_t>(fields[4]),
      .partitions = py::cast<uint32_t>(fields[5]),
      .free_elements = py::cast<int64_t>(fields[6]),
      .partition_start = py::cast<uint32_t>(fields[7]),
      .byte_offset = py::cast<uint64_t>(fields[8]),
      .shape = py::cast<std::vector<int64_t>>(fields[9])};
}

PyNkiPlan PlanOf(const std::string& name, const py::tuple& target, const py::list& allocations,
                 const py::list& instructions, const std::vector<std::string>& locations) {
  PyNkiPlan result;
  rtd::NkiKernelPlan& plan = result.plan;
  plan.name = name;
  plan.target = rtd::NkiTarget{.partitions = py::cast<uint32_t>(target[0]),
                               .sbuf_partition_bytes = py::cast<uint64_t>(target[1]),
                               .psum_partition_bytes = py::cast<uint64_t>(target[2])};
  for (const py::handle& allocation : allocations) {
    plan.allocations.push_back(AllocationOf(allocation));
  }
  for (const py::handle& instruction : instructions) {
    plan.instructions.push_back(InstructionOf(instruction));
  }
  plan.source_locations = locations;
  return result;
}

std::vector<at::Tensor> TensorsOf(const py::sequence& given) {
  std::vector<at::Tensor> tensors;
  for (const py::handle& item : given) {
    tensors.push_back(item.is_none() ? at::Tensor() : py::cast<at::Tensor>(item));
  }
  return tensors;
}

}  // namespace

void BindNki(py::module& module) {
  py::class_<PyNkiPlan>(module, "_NkiPlan")
      .def_property_readonly("name", [](const PyNkiPlan& plan) { return plan.plan.name; })
      .def_property_readonly("instruction_count",
                             [](const PyNkiPlan& plan) { return plan.plan.instructions.size(); })
      .def_readonly("executable_id", &PyNkiPlan::executable_id);
  module.def("_nki_plan", &PlanOf, py::arg("name"), py::arg("target"), py::arg("allocations"),
             py::arg("instructions"), py::arg("source_locations"));
  module.def(
      "_nki_launch",
      [](PyNkiPlan& plan, const py::sequence& hbm, int device, bool wait) {
        std::vector<at::Tensor> tensors = TensorsOf(hbm);
        py::gil_scoped_release no_gil;
        if (plan.executable_id == 0) plan.executable_id = LoadNkiKernel(plan.plan);
        LaunchNkiKernel(plan.executable_id, plan.plan, tensors,
                        static_cast<c10::DeviceIndex>(device), wait);
      },
      py::arg("plan"), py::arg("hbm"), py::arg("device"), py::arg("wait"));
  module.def(
      "_nki_simulate",
      [](const PyNkiPlan& plan, const py::sequence& hbm) {
        std::vector<at::Tensor> tensors = TensorsOf(hbm);
        py::gil_scoped_release no_gil;
        SimulateNkiKernel(plan.plan, tensors);
      },
      py::arg("plan"), py::arg("hbm"));
}

}  // namespace torch_neuronx
