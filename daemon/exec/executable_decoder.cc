#include "daemon/exec/executable_decoder.h"

#include <algorithm>

#include "absl/strings/str_format.h"
#include "daemon/exec/neff_container.h"
#include "daemon/exec/nki_kernel_decoder.h"
#include "daemon/hal/executable.h"
#include "neuron/rtd/abi/command_ring.h"
#include "neuron/rtd/eager_op.h"
#include "neuron/rtd/v1/executable.pb.h"

namespace neuron::rtd::exec {
namespace {

static_assert(hal::kMaxLaunchArguments == NEURON_RTD_MAX_LAUNCH_ARGS,
              "the HAL's launch argument limit is the command ring's");

namespace v1 = neuron::rtd::v1;

// Bounds on what one executable may describe.
constexpr int64_t kMaxSize = int64_t{1} << 40;
constexpr uint64_t kMaxExtentBytes = uint64_t{1} << 48;
constexpr int kMaxArguments = 64;
constexpr int kMaxListLength = 1024;
constexpr size_t kMaxStringBytes = 256;
// A graph: nodes, values (inputs and results together), returns per node.
constexpr int kMaxGraphNodes = 1 << 16;
constexpr uint64_t kMaxGraphValues = 1 << 20;
constexpr int kMaxNodeReturns = 16;
constexpr int kMaxGraphKernels = 1024;

// Where an argument appears: an eager op's arguments are launch addresses,
// a graph node's are the graph's values.
enum class ArgumentContext { kEagerOp, kGraphNode };

// What decoding an executable has found so far.
struct Decoding {
  uint32_t address_count = 0;
  std::vector<hal::TensorLayout> launch_tensors;
};

// Operators that reach outside device memory (the daemon's files, its log):
// a client must never make the daemon run them.
constexpr std::string_view kForbiddenOperators[] = {"aten::from_file", "aten::save",
                                                   "aten::_print", "aten::warn"};

absl::Status Invalid(std::string_view where, std::string_view what) {
  return absl::InvalidArgumentError(absl::StrFormat("executable %s: %s", where, what));
}

// A tensor at a launch address; recorded among the launch's tensors.
absl::StatusOr<hal::TensorLayout> ToLayout(const v1::TensorSpec& spec, std::string_view where,
                                           Decoding& decoding) {
  hal::TensorLayout layout;
  layout.dtype = static_cast<int32_t>(spec.dtype());
  if (hal::ElementBytes(layout.dtype) == 0) {
    return Invalid(where, absl::StrFormat("dtype %d is not supported", layout.dtype));
  }
  if (spec.sizes_size() != spec.strides_size() || spec.sizes_size() > kMaxTensorDims) {
    return Invalid(where, absl::StrFormat("%d sizes and %d strides (at most %d dimensions)",
                                          spec.sizes_size(), spec.strides_size(), kMaxTensorDims));
  }
  unsigned __int128 last = 0;
  for (int dim = 0; dim < spec.sizes_size(); ++dim) {
    const int64_t size = spec.sizes(dim);
    const int64_t stride = spec.strides(dim);
    if (size < 0 || size > kMaxSize || stride < 0 || stride > kMaxSize) {
      return Invalid(where, absl::StrFormat("dimension %d has size %d and stride %d", dim, size,
                                            stride));
    }
    if (size > 0) last += static_cast<unsigned __int128>(size - 1) * static_cast<uint64_t>(stride);
  }
  if ((last + 1) * hal::ElementBytes(layout.dtype) > kMaxExtentBytes) {
    return Invalid(where, "the tensor spans more than 256 TiB");
  }
  if (spec.address_index() >= NEURON_RTD_MAX_LAUNCH_ARGS) {
    return Invalid(where, absl::StrFormat("address index %d exceeds %d", spec.address_index(),
                                          NEURON_RTD_MAX_LAUNCH_ARGS));
  }
  layout.sizes.assign(spec.sizes().begin(), spec.sizes().end());
  layout.strides.assign(spec.strides().begin(), spec.strides().end());
  layout.address_index = spec.address_index();
  decoding.address_count = std::max(decoding.address_count, spec.address_index() + 1);
  decoding.launch_tensors.push_back(layout);
  return layout;
}

absl::StatusOr<hal::GraphValue> ToGraphValue(uint32_t id, std::string_view where,
                                             uint64_t values_before) {
  if (id >= values_before) {
    return Invalid(where, absl::StrFormat("value %d is not defined before it (%d values are)",
                                          id, values_before));
  }
  return hal::GraphValue{.id = id};
}

absl::Status CheckOperatorName(const std::string& name) {
  if (!name.starts_with("aten::") && !name.starts_with("prims::")) {
    return absl::InvalidArgumentError(
        absl::StrFormat("operator \"%s\" is not an ATen or prims operator",
                        name.substr(0, kMaxStringBytes)));
  }
  for (std::string_view forbidden : kForbiddenOperators) {
    if (name == forbidden) {
      return absl::PermissionDeniedError(absl::StrFormat(
          "operator %s touches host files or the daemon's log; executables may not use it",
          name));
    }
  }
  return absl::OkStatus();
}

// `values_before`: in a graph node, how many graph values precede the node.
absl::StatusOr<hal::OpValue> ToValue(const v1::OpArgument& argument, std::string_view where,
                                     Decoding& decoding, ArgumentContext context,
                                     uint64_t values_before = 0) {
  const bool in_graph = context == ArgumentContext::kGraphNode;
  switch (argument.value_case()) {
    case v1::OpArgument::kTensor:
    case v1::OpArgument::kTensorList:
    case v1::OpArgument::kOptionalTensorList:
      if (in_graph) return Invalid(where, "a graph node's tensors are graph values, not addresses");
      break;
    case v1::OpArgument::kImmediate:
    case v1::OpArgument::kImmediateList:
    case v1::OpArgument::kGenerator:
      if (in_graph) {
        return Invalid(where, "a graph node takes no per-launch scalars or generators of its own");
      }
      break;
    case v1::OpArgument::kGraphValue:
    case v1::OpArgument::kGraphValueList:
    case v1::OpArgument::kOptionalGraphValueList:
      if (!in_graph) return Invalid(where, "graph values appear only in graph nodes");
      break;
    default:
      break;
  }
  switch (argument.value_case()) {
    case v1::OpArgument::kTensor: {
      absl::StatusOr<hal::TensorLayout> layout = ToLayout(argument.tensor(), where, decoding);
      if (!layout.ok()) return layout.status();
      return hal::OpValue(*std::move(layout));
    }
    case v1::OpArgument::kNone:
      return hal::OpValue(hal::NoneValue{});
    case v1::OpArgument::kIntValue:
      return hal::OpValue(argument.int_value());
    case v1::OpArgument::kDoubleValue:
      return hal::OpValue(argument.double_value());
    case v1::OpArgument::kBoolValue:
      return hal::OpValue(argument.bool_value());
    case v1::OpArgument::kIntList:
      if (argument.int_list().values_size() > kMaxListLength) return Invalid(where, "list too long");
      return hal::OpValue(std::vector<int64_t>(argument.int_list().values().begin(),
                                               argument.int_list().values().end()));
    case v1::OpArgument::kScalarType:
      if (hal::ElementBytes(argument.scalar_type()) == 0) {
        return Invalid(where, absl::StrFormat("dtype %d is not supported", argument.scalar_type()));
      }
      return hal::OpValue(hal::ScalarTypeValue{.dtype = argument.scalar_type()});
    case v1::OpArgument::kStringValue:
      if (argument.string_value().size() > kMaxStringBytes) {
        return Invalid(where, absl::StrFormat("string of %d bytes (at most %d)",
                                              argument.string_value().size(), kMaxStringBytes));
      }
      return hal::OpValue(argument.string_value());
    case v1::OpArgument::kTensorList: {
      if (argument.tensor_list().tensors_size() > kMaxListLength) {
        return Invalid(where, "tensor list too long");
      }
      std::vector<hal::TensorLayout> layouts;
      for (const v1::TensorSpec& spec : argument.tensor_list().tensors()) {
        absl::StatusOr<hal::TensorLayout> layout = ToLayout(spec, where, decoding);
        if (!layout.ok()) return layout.status();
        layouts.push_back(*std::move(layout));
      }
      return hal::OpValue(std::move(layouts));
    }
    case v1::OpArgument::kImmediate: {
      const v1::ImmediateScalar& immediate = argument.immediate();
      if (immediate.offset() > NEURON_RTD_MAX_RECORD_BYTES) {
        return Invalid(where, "immediate scalar offset beyond any record");
      }
      return hal::OpValue(hal::ImmediateScalar{
          .kind = static_cast<hal::ImmediateScalar::Kind>(immediate.kind()),
          .offset = immediate.offset()});
    }
    case v1::OpArgument::kBoolList:
      if (argument.bool_list().values_size() > kMaxListLength) return Invalid(where, "list too long");
      return hal::OpValue(std::vector<bool>(argument.bool_list().values().begin(),
                                            argument.bool_list().values().end()));
    case v1::OpArgument::kDoubleList:
      if (argument.double_list().values_size() > kMaxListLength) {
        return Invalid(where, "list too long");
      }
      return hal::OpValue(std::vector<double>(argument.double_list().values().begin(),
                                              argument.double_list().values().end()));
    case v1::OpArgument::kOptionalTensorList: {
      if (argument.optional_tensor_list().items_size() > kMaxListLength) {
        return Invalid(where, "tensor list too long");
      }
      hal::OptionalTensorLayouts layouts;
      for (const v1::OptionalTensor& item : argument.optional_tensor_list().items()) {
        if (!item.has_tensor()) {
          layouts.emplace_back(std::nullopt);
          continue;
        }
        absl::StatusOr<hal::TensorLayout> layout = ToLayout(item.tensor(), where, decoding);
        if (!layout.ok()) return layout.status();
        layouts.emplace_back(*std::move(layout));
      }
      return hal::OpValue(std::move(layouts));
    }
    case v1::OpArgument::kImmediateList: {
      const v1::ImmediateScalarList& list = argument.immediate_list();
      const uint64_t widest = hal::ImmediateScalarBytes(hal::ImmediateScalar::Kind::kComplexDouble);
      if (list.count() > kMaxListLength ||
          uint64_t{list.offset()} + uint64_t{list.count()} * widest >
              NEURON_RTD_MAX_RECORD_BYTES) {
        return Invalid(where, "immediate scalar list reaches beyond any record");
      }
      return hal::OpValue(hal::ImmediateScalarList{
          .kind = static_cast<hal::ImmediateScalar::Kind>(list.kind()),
          .offset = list.offset(),
          .count = list.count()});
    }
    case v1::OpArgument::kDevice:
      return hal::OpValue(hal::DeviceValue{});
    case v1::OpArgument::kGenerator:
      if (argument.generator().offset() > NEURON_RTD_MAX_RECORD_BYTES) {
        return Invalid(where, "generator seed offset beyond any record");
      }
      return hal::OpValue(hal::GeneratorSeed{.offset = argument.generator().offset()});
    case v1::OpArgument::kGraphValue: {
      absl::StatusOr<hal::GraphValue> value = ToGraphValue(argument.graph_value(), where, values_before);
      if (!value.ok()) return value.status();
      return hal::OpValue(*value);
    }
    case v1::OpArgument::kGraphValueList: {
      if (argument.graph_value_list().values_size() > kMaxListLength) {
        return Invalid(where, "value list too long");
      }
      hal::GraphValues values;
      for (uint32_t id : argument.graph_value_list().values()) {
        absl::StatusOr<hal::GraphValue> value = ToGraphValue(id, where, values_before);
        if (!value.ok()) return value.status();
        values.push_back(*value);
      }
      return hal::OpValue(std::move(values));
    }
    case v1::OpArgument::kOptionalGraphValueList: {
      if (argument.optional_graph_value_list().items_size() > kMaxListLength) {
        return Invalid(where, "value list too long");
      }
      hal::OptionalGraphValues values;
      for (const v1::OptionalGraphValue& item : argument.optional_graph_value_list().items()) {
        if (!item.has_ref()) {
          values.emplace_back(std::nullopt);
          continue;
        }
        absl::StatusOr<hal::GraphValue> value = ToGraphValue(item.ref(), where, values_before);
        if (!value.ok()) return value.status();
        values.emplace_back(*value);
      }
      return hal::OpValue(std::move(values));
    }
    default:
      return Invalid(where, "argument has no value");
  }
}

absl::StatusOr<Executable> DecodeEagerOp(const v1::EagerOp& op) {
  if (absl::Status name = CheckOperatorName(op.name()); !name.ok()) return name;
  if (op.arguments_size() > kMaxArguments || op.outputs_size() > kMaxArguments) {
    return absl::InvalidArgumentError("too many arguments or outputs");
  }
  Decoding decoding;
  hal::EagerOpPlan plan;
  plan.name = op.name();
  plan.overload = op.overload();
  for (int i = 0; i < op.arguments_size(); ++i) {
    absl::StatusOr<hal::OpValue> value =
        ToValue(op.arguments(i), absl::StrFormat("%s argument %d", op.name(), i), decoding,
                ArgumentContext::kEagerOp);
    if (!value.ok()) return value.status();
    plan.arguments.push_back(*std::move(value));
  }
  if (op.has_default_generator()) {
    if (op.default_generator().offset() > NEURON_RTD_MAX_RECORD_BYTES) {
      return Invalid(op.name(), "default generator seed offset beyond any record");
    }
    plan.default_generator = hal::GeneratorSeed{.offset = op.default_generator().offset()};
  }
  for (int i = 0; i < op.outputs_size(); ++i) {
    absl::StatusOr<hal::TensorLayout> layout =
        ToLayout(op.outputs(i), absl::StrFormat("%s output %d", op.name(), i), decoding);
    if (!layout.ok()) return layout.status();
    plan.outputs.push_back(*std::move(layout));
  }
  if (op.undefined_results_size() > kMaxArguments) {
    return Invalid(op.name(), "too many undefined results");
  }
  plan.undefined_results.assign(op.undefined_results().begin(), op.undefined_results().end());
  Executable executable;
  executable.description = op.name();
  executable.address_count = decoding.address_count;
  executable.launch_tensors = std::move(decoding.launch_tensors);
  executable.spec = std::move(plan);
  return executable;
}

absl::StatusOr<Executable> DecodeGraph(const v1::GraphExecutable& graph) {
  if (graph.name().size() > kMaxStringBytes) {
    return Invalid("graph", absl::StrFormat("name of %d bytes (at most %d)", graph.name().size(),
                                            kMaxStringBytes));
  }
  const std::string where = absl::StrFormat("graph '%s'", graph.name());
  if (graph.inputs_size() > static_cast<int>(NEURON_RTD_MAX_LAUNCH_ARGS) ||
      graph.outputs_size() > static_cast<int>(NEURON_RTD_MAX_LAUNCH_ARGS)) {
    return Invalid(where, absl::StrFormat("%d inputs and %d outputs (at most %d each)",
                                          graph.inputs_size(), graph.outputs_size(),
                                          NEURON_RTD_MAX_LAUNCH_ARGS));
  }
  if (graph.nodes_size() > kMaxGraphNodes) {
    return Invalid(where, absl::StrFormat("%d nodes (at most %d)", graph.nodes_size(),
                                          kMaxGraphNodes));
  }
  Decoding decoding;
  hal::GraphPlan plan;
  plan.name = graph.name();
  for (int i = 0; i < graph.inputs_size(); ++i) {
    absl::StatusOr<hal::TensorLayout> layout =
        ToLayout(graph.inputs(i), absl::StrFormat("%s input %d", where, i), decoding);
    if (!layout.ok()) return layout.status();
    plan.inputs.push_back(*std::move(layout));
  }
  uint64_t values = plan.inputs.size();
  for (int n = 0; n < graph.nodes_size(); ++n) {
    const v1::GraphNode& node = graph.nodes(n);
    const std::string at = absl::StrFormat("%s node %d", where, n);
    if (absl::Status name = CheckOperatorName(node.name());
        !name.ok() && node.name() != hal::kNkiCallNode) {
      return absl::Status(name.code(), absl::StrFormat("%s: %s", at, name.message()));
    }
    if (node.overload().size() > kMaxStringBytes) return Invalid(at, "overload name too long");
    if (node.arguments_size() > kMaxArguments || node.return_lengths_size() > kMaxNodeReturns) {
      return Invalid(at, absl::StrFormat("%d arguments and %d returns (at most %d and %d)",
                                         node.arguments_size(), node.return_lengths_size(),
                                         kMaxArguments, kMaxNodeReturns));
    }
    hal::GraphNode decoded;
    decoded.name = node.name();
    decoded.overload = node.overload();
    for (int i = 0; i < node.arguments_size(); ++i) {
      absl::StatusOr<hal::OpValue> value =
          ToValue(node.arguments(i), absl::StrFormat("%s (%s) argument %d", at, node.name(), i),
                  decoding, ArgumentContext::kGraphNode, values);
      if (!value.ok()) return value.status();
      decoded.arguments.push_back(*std::move(value));
    }
    for (int32_t length : node.return_lengths()) {
      if (length < hal::kTensorReturn || length > kMaxListLength) {
        return Invalid(at, absl::StrFormat("return length %d (a Tensor is %d, a list at most %d)",
                                           length, hal::kTensorReturn, kMaxListLength));
      }
      decoded.return_lengths.push_back(length);
    }
    values += hal::NodeResultCount(decoded);
    if (values > kMaxGraphValues) {
      return Invalid(where, absl::StrFormat("more than %d values", kMaxGraphValues));
    }
    plan.nodes.push_back(std::move(decoded));
  }
  for (int i = 0; i < graph.outputs_size(); ++i) {
    const v1::GraphOutput& output = graph.outputs(i);
    const std::string at = absl::StrFormat("%s output %d", where, i);
    absl::StatusOr<hal::GraphValue> value = ToGraphValue(output.value(), at, values);
    if (!value.ok()) return value.status();
    absl::StatusOr<hal::TensorLayout> layout = ToLayout(output.destination(), at, decoding);
    if (!layout.ok()) return layout.status();
    plan.outputs.push_back(hal::GraphOutput{.value = *value, .destination = *std::move(layout)});
  }
  if (graph.nki_kernels_size() > kMaxGraphKernels) {
    return Invalid(where, absl::StrFormat("%d NKI kernels (at most %d)", graph.nki_kernels_size(),
                                          kMaxGraphKernels));
  }
  for (int k = 0; k < graph.nki_kernels_size(); ++k) {
    absl::StatusOr<hal::NkiKernelPlan> kernel = DecodeNkiKernelPlan(graph.nki_kernels(k));
    if (!kernel.ok()) {
      return Invalid(where, absl::StrFormat("kernel %d: %s", k, kernel.status().message()));
    }
    plan.nki_kernels.push_back(*std::move(kernel));
  }
  if (graph.has_generator()) {
    if (graph.generator().offset() > NEURON_RTD_MAX_RECORD_BYTES) {
      return Invalid(where, "generator seed offset beyond any record");
    }
    plan.generator = hal::GeneratorSeed{.offset = graph.generator().offset()};
  }
  Executable executable;
  executable.description = where;
  executable.address_count = decoding.address_count;
  executable.launch_tensors = std::move(decoding.launch_tensors);
  executable.spec = std::move(plan);
  return executable;
}

absl::StatusOr<Executable> DecodeNeff(std::string_view body) {
  absl::StatusOr<NeffContents> contents = ReadNeff(body);
  if (!contents.ok()) return contents.status();
  if (contents->header.name.size() > kMaxStringBytes) {
    return Invalid("NEFF", absl::StrFormat("name of %d bytes (at most %d)",
                                           contents->header.name.size(), kMaxStringBytes));
  }
  Executable executable;
  executable.description = absl::StrFormat("NEFF '%s'", contents->header.name);
  executable.spec = hal::NeffPlan{.name = contents->header.name,
                                  .bytes = std::string(body),
                                  .lnc_size = contents->header.lnc_size};
  return executable;
}

}  // namespace

void SetNeffLaunchTensors(const std::vector<hal::NeffTensor>& tensors, Executable& executable) {
  executable.launch_tensors.clear();
  for (uint32_t i = 0; i < tensors.size(); ++i) {
    executable.launch_tensors.push_back(
        hal::TensorLayout{.dtype = v1::SCALAR_TYPE_UINT8,
                          .sizes = {static_cast<int64_t>(tensors[i].size_bytes)},
                          .strides = {1},
                          .address_index = i});
  }
  executable.address_count = static_cast<uint32_t>(tensors.size());
}

absl::StatusOr<Executable> DecodeExecutable(std::string_view body, ExecutableBodyKind kind) {
  if (kind == ExecutableBodyKind::kNeff) return DecodeNeff(body);
  v1::ExecutableBody parsed;
  if (!parsed.ParseFromArray(body.data(), static_cast<int>(body.size()))) {
    return absl::InvalidArgumentError("executable body is not a neuron.rtd.v1.ExecutableBody");
  }
  switch (kind) {
    case ExecutableBodyKind::kEagerOp:
      if (!parsed.has_eager_op()) {
        return absl::InvalidArgumentError("executable body holds no eager op");
      }
      return DecodeEagerOp(parsed.eager_op());
    case ExecutableBodyKind::kGraph:
      if (!parsed.has_graph()) return absl::InvalidArgumentError("executable body holds no graph");
      return DecodeGraph(parsed.graph());
    case ExecutableBodyKind::kNki:
      if (!parsed.has_nki_kernel()) {
        return absl::InvalidArgumentError("executable body holds no NKI kernel");
      }
      return DecodeNkiKernel(parsed.nki_kernel());
    case ExecutableBodyKind::kNeff:
      break;
  }
  return absl::InvalidArgumentError("unknown executable kind");
}

}  // namespace neuron::rtd::exec
