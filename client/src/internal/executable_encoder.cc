#include "src/internal/executable_encoder.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "neuron/rtd/v1/executable.pb.h"

namespace neuronrt::internal {
namespace {

namespace v1 = neuron::rtd::v1;
using neuron::rtd::OpValue;
using neuron::rtd::TensorLayout;

void ToSpec(const TensorLayout& layout, v1::TensorSpec& spec) {
  spec.set_dtype(static_cast<v1::ScalarType>(layout.dtype));
  spec.mutable_sizes()->Add(layout.sizes.begin(), layout.sizes.end());
  spec.mutable_strides()->Add(layout.strides.begin(), layout.strides.end());
  spec.set_address_index(layout.address_index);
}

v1::ImmediateScalar::Kind ToKind(neuron::rtd::ImmediateScalar::Kind kind) {
  switch (kind) {
    case neuron::rtd::ImmediateScalar::Kind::kInt64:
      return v1::ImmediateScalar::KIND_INT64;
    case neuron::rtd::ImmediateScalar::Kind::kDouble:
      return v1::ImmediateScalar::KIND_DOUBLE;
    case neuron::rtd::ImmediateScalar::Kind::kBool:
      return v1::ImmediateScalar::KIND_BOOL;
    case neuron::rtd::ImmediateScalar::Kind::kComplexDouble:
      return v1::ImmediateScalar::KIND_COMPLEX_DOUBLE;
  }
  return v1::ImmediateScalar::KIND_INT64;
}

// One overload per alternative of OpValue: adding an alternative without
// encoding it does not compile.
struct ArgumentEncoder {
  v1::OpArgument& out;
  void operator()(const neuron::rtd::NoneValue&) const { out.set_none(true); }
  void operator()(const TensorLayout& layout) const { ToSpec(layout, *out.mutable_tensor()); }
  void operator()(int64_t value) const { out.set_int_value(value); }
  void operator()(double value) const { out.set_double_value(value); }
  void operator()(bool value) const { out.set_bool_value(value); }
  void operator()(const std::vector<int64_t>& values) const {
    out.mutable_int_list()->mutable_values()->Add(values.begin(), values.end());
  }
  void operator()(const neuron::rtd::ScalarTypeValue& type) const {
    out.set_scalar_type(static_cast<v1::ScalarType>(type.dtype));
  }
  void operator()(const std::string& text) const { out.set_string_value(text); }
  void operator()(const std::vector<TensorLayout>& layouts) const {
    v1::TensorList* list = out.mutable_tensor_list();
    for (const TensorLayout& layout : layouts) ToSpec(layout, *list->add_tensors());
  }
  void operator()(const neuron::rtd::ImmediateScalar& immediate) const {
    out.mutable_immediate()->set_kind(ToKind(immediate.kind));
    out.mutable_immediate()->set_offset(immediate.offset);
  }
  void operator()(const neuron::rtd::GeneratorSeed& generator) const {
    out.mutable_generator()->set_offset(generator.offset);
  }
  void operator()(const std::vector<bool>& values) const {
    for (bool value : values) out.mutable_bool_list()->add_values(value);
  }
  void operator()(const std::vector<double>& values) const {
    out.mutable_double_list()->mutable_values()->Add(values.begin(), values.end());
  }
  void operator()(const neuron::rtd::OptionalTensorLayouts& layouts) const {
    v1::OptionalTensorList* list = out.mutable_optional_tensor_list();
    for (const std::optional<TensorLayout>& layout : layouts) {
      v1::OptionalTensor* item = list->add_items();
      if (layout) {
        ToSpec(*layout, *item->mutable_tensor());
      } else {
        item->set_none(true);
      }
    }
  }
  void operator()(const neuron::rtd::ImmediateScalarList& list) const {
    v1::ImmediateScalarList* encoded = out.mutable_immediate_list();
    encoded->set_kind(ToKind(list.kind));
    encoded->set_offset(list.offset);
    encoded->set_count(list.count);
  }
  void operator()(const neuron::rtd::DeviceValue&) const { out.set_device(true); }
  void operator()(const neuron::rtd::GraphValue& value) const { out.set_graph_value(value.id); }
  void operator()(const neuron::rtd::GraphValues& values) const {
    for (const neuron::rtd::GraphValue& value : values) {
      out.mutable_graph_value_list()->add_values(value.id);
    }
  }
  void operator()(const neuron::rtd::OptionalGraphValues& values) const {
    v1::OptionalGraphValueList* list = out.mutable_optional_graph_value_list();
    for (const std::optional<neuron::rtd::GraphValue>& value : values) {
      v1::OptionalGraphValue* item = list->add_items();
      if (value) {
        item->set_ref(value->id);
      } else {
        item->set_none(true);
      }
    }
  }
};

std::string Serialize(const v1::ExecutableBody& body) {
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream stream(&bytes);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    body.SerializeToCodedStream(&coded);
  }
  return bytes;
}

}  // namespace

std::string EncodeEagerOp(const neuron::rtd::EagerOpPlan& plan) {
  v1::ExecutableBody body;
  v1::EagerOp* op = body.mutable_eager_op();
  op->set_name(plan.name);
  op->set_overload(plan.overload);
  for (const OpValue& argument : plan.arguments) {
    std::visit(ArgumentEncoder{*op->add_arguments()}, argument);
  }
  for (const TensorLayout& output : plan.outputs) ToSpec(output, *op->add_outputs());
  for (uint32_t position : plan.undefined_results) op->add_undefined_results(position);
  if (plan.default_generator) {
    op->mutable_default_generator()->set_offset(plan.default_generator->offset);
  }
  return Serialize(body);
}

namespace {
void FillNkiKernel(const neuron::rtd::NkiKernelPlan& plan, v1::NkiKernel* kernel);
}  // namespace

std::string EncodeGraph(const neuron::rtd::GraphPlan& plan) {
  v1::ExecutableBody body;
  v1::GraphExecutable* graph = body.mutable_graph();
  graph->set_name(plan.name);
  for (const TensorLayout& input : plan.inputs) ToSpec(input, *graph->add_inputs());
  for (const neuron::rtd::GraphNode& node : plan.nodes) {
    v1::GraphNode* encoded = graph->add_nodes();
    encoded->set_name(node.name);
    encoded->set_overload(node.overload);
    for (const OpValue& argument : node.arguments) {
      std::visit(ArgumentEncoder{*encoded->add_arguments()}, argument);
    }
    encoded->mutable_return_lengths()->Add(node.return_lengths.begin(), node.return_lengths.end());
  }
  for (const neuron::rtd::GraphOutput& output : plan.outputs) {
    v1::GraphOutput* encoded = graph->add_outputs();
    encoded->set_value(output.value.id);
    ToSpec(output.destination, *encoded->mutable_destination());
  }
  if (plan.generator) graph->mutable_generator()->set_offset(plan.generator->offset);
  for (const neuron::rtd::NkiKernelPlan& kernel : plan.nki_kernels) {
    FillNkiKernel(kernel, graph->add_nki_kernels());
  }
  return Serialize(body);
}

namespace {

void FillNkiKernel(const neuron::rtd::NkiKernelPlan& plan, v1::NkiKernel* kernel) {
  namespace rtd = neuron::rtd;
  kernel->set_name(plan.name);
  v1::NkiTarget* target = kernel->mutable_target();
  target->set_partitions(plan.target.partitions);
  target->set_sbuf_partition_bytes(plan.target.sbuf_partition_bytes);
  target->set_psum_partition_bytes(plan.target.psum_partition_bytes);
  for (const rtd::NkiAllocation& allocation : plan.allocations) {
    v1::NkiAllocation* encoded = kernel->add_allocations();
    encoded->set_space(static_cast<v1::NkiAllocation::Space>(allocation.space));
    encoded->set_dtype(static_cast<v1::ScalarType>(allocation.dtype));
    encoded->set_name(allocation.name);
    encoded->set_address_index(allocation.address_index);
    encoded->set_elements(allocation.elements);
    encoded->set_partitions(allocation.partitions);
    encoded->set_free_elements(allocation.free_elements);
    encoded->set_partition_start(allocation.partition_start);
    encoded->set_byte_offset(allocation.byte_offset);
    encoded->mutable_shape()->Add(allocation.shape.begin(), allocation.shape.end());
  }
  for (const rtd::NkiInstruction& instruction : plan.instructions) {
    v1::NkiInstruction* encoded = kernel->add_instructions();
    encoded->set_opcode(std::string(rtd::NkiOpcodeName(instruction.opcode)));
    for (const std::optional<rtd::NkiAccess>& operand : instruction.operands) {
      v1::NkiOperand* encoded_operand = encoded->add_operands();
      if (!operand) continue;
      v1::NkiAccess* access = encoded_operand->mutable_access();
      access->set_allocation(operand->allocation);
      access->set_offset(operand->offset);
      for (const rtd::NkiDim& dim : operand->dims) {
        access->add_strides(dim.stride);
        access->add_counts(dim.count);
      }
      if (const std::optional<rtd::NkiIndirect>& indirect = operand->indirect) {
        v1::NkiIndirect* encoded_indirect = access->mutable_indirect();
        v1::NkiAccess* index = encoded_indirect->mutable_index();
        index->set_allocation(indirect->allocation);
        index->set_offset(indirect->offset);
        for (const rtd::NkiDim& dim : indirect->dims) {
          index->add_strides(dim.stride);
          index->add_counts(dim.count);
        }
        encoded_indirect->set_dim(indirect->dim);
        encoded_indirect->set_stride(indirect->stride);
      }
    }
    for (rtd::NkiAluOp op : instruction.alu) {
      encoded->add_alu(op == rtd::NkiAluOp::kCount ? "" : std::string(rtd::NkiAluOpName(op)));
    }
    encoded->set_activation(std::string(rtd::NkiActivationName(instruction.activation)));
    encoded->mutable_scalars()->Add(instruction.scalars.begin(), instruction.scalars.end());
    for (bool flag : instruction.flags) encoded->add_flags(flag);
    encoded->mutable_axes()->Add(instruction.axes.begin(), instruction.axes.end());
    encoded->set_source(instruction.source);
  }
  for (const std::string& location : plan.source_locations) kernel->add_source_locations(location);
}

}  // namespace

std::string EncodeNkiKernel(const neuron::rtd::NkiKernelPlan& plan) {
  v1::ExecutableBody body;
  FillNkiKernel(plan, body.mutable_nki_kernel());
  return Serialize(body);
}

}  // namespace neuronrt::internal
