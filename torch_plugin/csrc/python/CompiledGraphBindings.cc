// torch_neuronx._C's side of torch.compile: a graph described by the Python
// lowering (torch_neuronx/_dynamo/_lowering.py) becomes a CompiledGraph.
#include "csrc/python/CompiledGraphBindings.h"

#include <torch/extension.h>

#include <string>
#include <utility>
#include <vector>

#include "csrc/graph/CompiledGraph.h"
#include "csrc/python/NkiBindings.h"
#include "csrc/runtime/NeuronFunctions.h"

namespace torch_neuronx {
namespace {

namespace py = pybind11;
namespace rtd = neuron::rtd;

std::vector<int64_t> Ints(const py::handle& list) { return py::cast<std::vector<int64_t>>(list); }

TensorMeta MetaOf(const py::handle& description) {
  // (dtype, sizes, strides, storage_offset)
  const auto fields = py::cast<py::tuple>(description);
  TORCH_CHECK(fields.size() == 4, "a tensor description is (dtype, sizes, strides, offset)");
  return TensorMeta{.dtype = py::cast<at::ScalarType>(fields[0]),
                    .sizes = Ints(fields[1]),
                    .strides = Ints(fields[2]),
                    .storage_offset = py::cast<int64_t>(fields[3])};
}

rtd::GraphValue ValueOf(const py::handle& id) { return rtd::GraphValue{py::cast<uint32_t>(id)}; }

// One argument, tagged by its kind: ("v", id), ("i", 3), ("dtype", torch.float32), ...
rtd::OpValue ArgumentOf(const py::handle& description) {
  const auto fields = py::cast<py::tuple>(description);
  TORCH_CHECK(!fields.empty(), "an argument description is (tag, value)");
  const std::string tag = py::cast<std::string>(fields[0]);
  if (tag == "none") return rtd::NoneValue{};
  if (tag == "device") return rtd::DeviceValue{};
  TORCH_CHECK(fields.size() == 2, "argument '", tag, "' needs a value");
  const py::handle value = fields[1];
  if (tag == "v") return ValueOf(value);
  if (tag == "vl") {
    rtd::GraphValues values;
    for (const py::handle& id : py::cast<py::list>(value)) values.push_back(ValueOf(id));
    return values;
  }
  if (tag == "ovl") {
    rtd::OptionalGraphValues values;
    for (const py::handle& id : py::cast<py::list>(value)) {
      values.push_back(id.is_none() ? std::nullopt : std::optional(ValueOf(id)));
    }
    return values;
  }
  if (tag == "i") return py::cast<int64_t>(value);
  if (tag == "f") return py::cast<double>(value);
  if (tag == "b") return py::cast<bool>(value);
  if (tag == "il") return Ints(value);
  if (tag == "fl") return py::cast<std::vector<double>>(value);
  if (tag == "bl") return py::cast<std::vector<bool>>(value);
  if (tag == "s") return py::cast<std::string>(value);
  if (tag == "dtype") {
    return rtd::ScalarTypeValue{
        .dtype = static_cast<int32_t>(py::cast<at::ScalarType>(value))};
  }
  TORCH_CHECK(false, "unknown argument tag '", tag, "'");
}

GraphResult ResultOf(const py::handle& description) {
  const auto fields = py::cast<py::tuple>(description);
  const std::string kind = py::cast<std::string>(fields[0]);
  if (kind == "computed") {
    return GraphResult{.kind = GraphResult::Kind::kComputed,
                       .value = py::cast<uint32_t>(fields[1]),
                       .meta = MetaOf(fields[2])};
  }
  if (kind == "input") {
    return GraphResult{.kind = GraphResult::Kind::kInput, .input = py::cast<uint32_t>(fields[1])};
  }
  if (kind == "view") {
    return GraphResult{.kind = GraphResult::Kind::kInputView,
                       .input = py::cast<uint32_t>(fields[1]),
                       .meta = MetaOf(fields[2])};
  }
  if (kind == "output_view") {
    return GraphResult{.kind = GraphResult::Kind::kOutputView,
                       .output = py::cast<uint32_t>(fields[1]),
                       .meta = MetaOf(fields[2])};
  }
  TORCH_CHECK(kind == "none", "unknown graph result kind '", kind, "'");
  return GraphResult{};
}

std::shared_ptr<CompiledGraph> LoadGraph(const std::string& name, int device,
                                         const py::list& inputs, const py::list& nodes,
                                         const py::list& results, bool random,
                                         const py::list& nki_kernels) {
  rtd::GraphPlan plan;
  plan.name = name;
  for (const py::handle& kernel : nki_kernels) {
    plan.nki_kernels.push_back(py::cast<const PyNkiPlan&>(kernel).plan);
  }
  if (random) plan.generator = rtd::GeneratorSeed{};
  std::vector<TensorMeta> input_metas;
  for (const py::handle& input : inputs) input_metas.push_back(MetaOf(input));
  for (const py::handle& node : nodes) {
    // (name, overload, arguments, return lengths)
    const auto fields = py::cast<py::tuple>(node);
    rtd::GraphNode decoded{.name = py::cast<std::string>(fields[0]),
                           .overload = py::cast<std::string>(fields[1])};
    for (const py::handle& argument : py::cast<py::list>(fields[2])) {
      decoded.arguments.push_back(ArgumentOf(argument));
    }
    decoded.return_lengths = py::cast<std::vector<int32_t>>(fields[3]);
    plan.nodes.push_back(std::move(decoded));
  }
  std::vector<GraphResult> graph_results;
  for (const py::handle& result : results) graph_results.push_back(ResultOf(result));
  py::gil_scoped_release no_gil;
  return CompiledGraph::Load(std::move(plan), std::move(input_metas), std::move(graph_results),
                             static_cast<c10::DeviceIndex>(device));
}

}  // namespace

void BindCompiledGraph(py::module& module) {
  py::class_<CompiledGraph, std::shared_ptr<CompiledGraph>>(module, "_CompiledGraph")
      .def_property_readonly("name", &CompiledGraph::name)
      .def_property_readonly("executable_id", &CompiledGraph::executable_id)
      .def_property_readonly("launches", &CompiledGraph::launches)
      .def("__call__", [](CompiledGraph& graph, const std::vector<at::Tensor>& inputs) {
        py::gil_scoped_release no_gil;
        return graph.Run(inputs);
      });
  module.def("_load_graph", &LoadGraph, py::arg("name"), py::arg("device"), py::arg("inputs"),
             py::arg("nodes"), py::arg("results"), py::arg("random"),
             py::arg("nki_kernels") = py::list());
  // {executable id: (tier, compile state)} of the daemon's graph executables.
  module.def("_graph_tiers", [] {
    absl::StatusOr<neuronrt::CacheInfo> info;
    {
      py::gil_scoped_release no_gil;
      info = GetRuntime().session().client().GetCacheInfo(/*list_executables=*/true);
    }
    ThrowIfError(info.status(), "asking neuron-rtd for its executables");
    py::dict tiers;
    for (const neuronrt::CachedExecutable& executable : info->executables) {
      if (executable.kind != "graph") continue;
      tiers[py::int_(executable.executable_id)] =
          py::make_tuple(executable.tier, executable.compile_state);
    }
    return tiers;
  });
}

}  // namespace torch_neuronx
