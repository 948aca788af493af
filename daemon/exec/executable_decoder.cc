#include "daemon/exec/executable_decoder.h"

#include <algorithm>

#include "absl/strings/str_format.h"
#include "neuron/rtd/abi/command_ring.h"
#include "neuron/rtd/v1/executable.pb.h"

namespace neuron::rtd::exec {
namespace {

namespace v1 = neuron::rtd::v1;

// Bounds on what one executable may describe.
constexpr int kMaxDims = 16;
constexpr int64_t kMaxSize = int64_t{1} << 40;
constexpr uint64_t kMaxExtentBytes = uint64_t{1} << 48;
constexpr int kMaxArguments = 64;
constexpr int kMaxListLength = 1024;
constexpr size_t kMaxStringBytes = 256;

// Operators that reach outside device memory (the daemon's files, its log):
// a client must never make the daemon run them.
constexpr std::string_view kForbiddenOperators[] = {"aten::from_file", "aten::save",
                                                   "aten::_print", "aten::warn"};

absl::Status Invalid(std::string_view where, std::string_view what) {
  return absl::InvalidArgumentError(absl::StrFormat("executable %s: %s", where, what));
}

absl::StatusOr<hal::TensorLayout> ToLayout(const v1::TensorSpec& spec, std::string_view where,
                                           uint32_t& address_count) {
  hal::TensorLayout layout;
  layout.dtype = static_cast<int32_t>(spec.dtype());
  if (hal::ElementBytes(layout.dtype) == 0) {
    return Invalid(where, absl::StrFormat("dtype %d is not supported", layout.dtype));
  }
  if (spec.sizes_size() != spec.strides_size() || spec.sizes_size() > kMaxDims) {
    return Invalid(where, absl::StrFormat("%d sizes and %d strides (at most %d dimensions)",
                                          spec.sizes_size(), spec.strides_size(), kMaxDims));
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
  address_count = std::max(address_count, spec.address_index() + 1);
  return layout;
}

absl::StatusOr<hal::OpValue> ToValue(const v1::OpArgument& argument, std::string_view where,
                                     uint32_t& address_count) {
  switch (argument.value_case()) {
    case v1::OpArgument::kTensor: {
      absl::StatusOr<hal::TensorLayout> layout = ToLayout(argument.tensor(), where, address_count);
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
        absl::StatusOr<hal::TensorLayout> layout = ToLayout(spec, where, address_count);
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
        absl::StatusOr<hal::TensorLayout> layout = ToLayout(item.tensor(), where, address_count);
        if (!layout.ok()) return layout.status();
        layouts.emplace_back(*std::move(layout));
      }
      return hal::OpValue(std::move(layouts));
    }
    case v1::OpArgument::kImmediateList: {
      const v1::ImmediateScalarList& list = argument.immediate_list();
      if (list.count() > kMaxListLength ||
          uint64_t{list.offset()} + uint64_t{list.count()} * 8 > NEURON_RTD_MAX_RECORD_BYTES) {
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
    default:
      return Invalid(where, "argument has no value");
  }
}

}  // namespace

absl::StatusOr<Executable> DecodeExecutable(std::string_view body) {
  v1::ExecutableBody parsed;
  if (!parsed.ParseFromArray(body.data(), static_cast<int>(body.size()))) {
    return absl::InvalidArgumentError("executable body is not a neuron.rtd.v1.ExecutableBody");
  }
  if (!parsed.has_eager_op()) return absl::InvalidArgumentError("executable body is empty");
  const v1::EagerOp& op = parsed.eager_op();
  if (!op.name().starts_with("aten::") && !op.name().starts_with("prims::")) {
    return absl::InvalidArgumentError(
        absl::StrFormat("operator \"%s\" is not an ATen or prims operator", op.name()));
  }
  for (std::string_view forbidden : kForbiddenOperators) {
    if (op.name() == forbidden) {
      return absl::PermissionDeniedError(absl::StrFormat(
          "operator %s touches host files or the daemon's log; executables may not use it",
          op.name()));
    }
  }
  if (op.arguments_size() > kMaxArguments || op.outputs_size() > kMaxArguments) {
    return absl::InvalidArgumentError("too many arguments or outputs");
  }
  Executable executable;
  executable.plan.name = op.name();
  executable.plan.overload = op.overload();
  for (int i = 0; i < op.arguments_size(); ++i) {
    absl::StatusOr<hal::OpValue> value =
        ToValue(op.arguments(i), absl::StrFormat("%s argument %d", op.name(), i),
                executable.address_count);
    if (!value.ok()) return value.status();
    executable.plan.arguments.push_back(*std::move(value));
  }
  if (op.has_default_generator()) {
    if (op.default_generator().offset() > NEURON_RTD_MAX_RECORD_BYTES) {
      return Invalid(op.name(), "default generator seed offset beyond any record");
    }
    executable.plan.default_generator = hal::GeneratorSeed{.offset = op.default_generator().offset()};
  }
  for (int i = 0; i < op.outputs_size(); ++i) {
    absl::StatusOr<hal::TensorLayout> layout = ToLayout(
        op.outputs(i), absl::StrFormat("%s output %d", op.name(), i), executable.address_count);
    if (!layout.ok()) return layout.status();
    executable.plan.outputs.push_back(*std::move(layout));
  }
  if (op.undefined_results_size() > kMaxArguments) {
    return Invalid(op.name(), "too many undefined results");
  }
  executable.plan.undefined_results.assign(op.undefined_results().begin(),
                                           op.undefined_results().end());
  return executable;
}

}  // namespace neuron::rtd::exec
