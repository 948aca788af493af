#include "daemon/compiler/graph_json.h"

#include <cmath>
#include <variant>

#include "nlohmann/json.hpp"

namespace neuron::rtd::compiler {
namespace {

using nlohmann::json;

// JSON has no infinities or NaN (masks fill with -inf): those go as text
// ("inf", "-inf", "nan"), which Python's float() reads back.
json Number(double value) {
  if (std::isfinite(value)) return json(value);
  if (std::isnan(value)) return json("nan");
  return json(value > 0 ? "inf" : "-inf");
}

json LayoutJson(const hal::TensorLayout& layout) {
  return json{{"dtype", layout.dtype}, {"sizes", layout.sizes}, {"strides", layout.strides}};
}

// One overload per kind a graph node's argument can be (daemon/exec refuses
// the others in graphs): adding a kind without its form does not compile.
struct ArgumentJson {
  json operator()(const hal::NoneValue&) const { return json::array({"none"}); }
  json operator()(const hal::GraphValue& value) const { return json::array({"v", value.id}); }
  json operator()(const hal::GraphValues& values) const {
    json ids = json::array();
    for (const hal::GraphValue& value : values) ids.push_back(value.id);
    return json::array({"vl", ids});
  }
  json operator()(const hal::OptionalGraphValues& values) const {
    json ids = json::array();
    for (const std::optional<hal::GraphValue>& value : values) {
      ids.push_back(value ? json(value->id) : json(nullptr));
    }
    return json::array({"ovl", ids});
  }
  json operator()(int64_t value) const { return json::array({"i", value}); }
  json operator()(double value) const { return json::array({"f", Number(value)}); }
  json operator()(bool value) const { return json::array({"b", value}); }
  json operator()(const std::vector<int64_t>& values) const { return json::array({"il", values}); }
  json operator()(const std::vector<double>& values) const {
    json numbers = json::array();
    for (double value : values) numbers.push_back(Number(value));
    return json::array({"fl", numbers});
  }
  json operator()(const std::vector<bool>& values) const { return json::array({"bl", values}); }
  json operator()(const std::string& value) const { return json::array({"s", value}); }
  json operator()(const hal::ScalarTypeValue& type) const {
    return json::array({"dtype", type.dtype});
  }
  json operator()(const hal::DeviceValue&) const { return json::array({"device"}); }
  // Never in a graph node (daemon/exec refuses them there).
  json operator()(const hal::TensorLayout&) const { return json::array({"none"}); }
  json operator()(const std::vector<hal::TensorLayout>&) const { return json::array({"none"}); }
  json operator()(const hal::OptionalTensorLayouts&) const { return json::array({"none"}); }
  json operator()(const hal::ImmediateScalar&) const { return json::array({"none"}); }
  json operator()(const hal::ImmediateScalarList&) const { return json::array({"none"}); }
  json operator()(const hal::GeneratorSeed&) const { return json::array({"none"}); }
};

}  // namespace

std::string GraphJson(const hal::GraphPlan& graph) {
  json inputs = json::array();
  for (const hal::TensorLayout& input : graph.inputs) inputs.push_back(LayoutJson(input));
  json nodes = json::array();
  for (const hal::GraphNode& node : graph.nodes) {
    json arguments = json::array();
    for (const hal::OpValue& argument : node.arguments) {
      arguments.push_back(std::visit(ArgumentJson{}, argument));
    }
    nodes.push_back(json{{"op", node.name},
                         {"overload", node.overload},
                         {"args", std::move(arguments)},
                         {"returns", node.return_lengths}});
  }
  json outputs = json::array();
  for (const hal::GraphOutput& output : graph.outputs) {
    json layout = LayoutJson(output.destination);
    layout["value"] = output.value.id;
    outputs.push_back(std::move(layout));
  }
  return json{{"name", graph.name},
              {"inputs", std::move(inputs)},
              {"nodes", std::move(nodes)},
              {"outputs", std::move(outputs)},
              {"random", graph.generator.has_value()}}
      .dump();
}

}  // namespace neuron::rtd::compiler
