#include "daemon/hal/sim/internal/aten_call.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/ops/from_blob.h>

#include <algorithm>
#include <cstring>
#include <mutex>

#include "absl/strings/cord.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "daemon/hal/device.h"

namespace neuron::rtd::hal::sim::internal {
namespace {

// Whether `value` may stand for an argument of (non-optional) `type`; the
// error says what it is instead.
absl::Status CheckKind(const c10::Type& type, const c10::Argument& argument, const OpValue& value,
                       ArgumentSource source) {
  const bool graph = source == ArgumentSource::kGraphValues;
  auto immediate_is = [&](std::initializer_list<ImmediateScalar::Kind> kinds) {
    const auto* immediate = std::get_if<ImmediateScalar>(&value);
    return immediate != nullptr &&
           std::find(kinds.begin(), kinds.end(), immediate->kind) != kinds.end();
  };
  bool fits = false;
  switch (type.kind()) {
    case c10::TypeKind::TensorType:
      fits = graph ? std::holds_alternative<GraphValue>(value)
                   : std::holds_alternative<TensorLayout>(value);
      break;
    case c10::TypeKind::IntType:
    case c10::TypeKind::SymIntType:
    case c10::TypeKind::LayoutType:
    case c10::TypeKind::MemoryFormatType:
      fits = std::holds_alternative<int64_t>(value) ||
             immediate_is({ImmediateScalar::Kind::kInt64});
      break;
    case c10::TypeKind::FloatType:
    case c10::TypeKind::SymFloatType:
      fits = std::holds_alternative<double>(value) ||
             immediate_is({ImmediateScalar::Kind::kDouble});
      break;
    case c10::TypeKind::BoolType:
    case c10::TypeKind::SymBoolType:
      fits = std::holds_alternative<bool>(value) || immediate_is({ImmediateScalar::Kind::kBool});
      break;
    case c10::TypeKind::ComplexType:
      fits = immediate_is({ImmediateScalar::Kind::kComplexDouble});
      break;
    case c10::TypeKind::NumberType:
      fits = std::holds_alternative<int64_t>(value) || std::holds_alternative<double>(value) ||
             std::holds_alternative<bool>(value) ||
             immediate_is({ImmediateScalar::Kind::kInt64, ImmediateScalar::Kind::kDouble,
                           ImmediateScalar::Kind::kBool, ImmediateScalar::Kind::kComplexDouble});
      break;
    case c10::TypeKind::ScalarTypeType:
      fits = std::holds_alternative<ScalarTypeValue>(value);
      break;
    case c10::TypeKind::DeviceObjType:
      fits = std::holds_alternative<DeviceValue>(value);
      break;
    case c10::TypeKind::StringType:
      fits = std::holds_alternative<std::string>(value);
      break;
    case c10::TypeKind::GeneratorType:
      fits = std::holds_alternative<GeneratorSeed>(value);
      break;
    case c10::TypeKind::ListType: {
      const c10::TypePtr& element = type.castRaw<c10::ListType>()->getElementType();
      if (const auto optional = element->cast<c10::OptionalType>()) {
        fits = optional->getElementType()->kind() == c10::TypeKind::TensorType &&
               (graph ? std::holds_alternative<OptionalGraphValues>(value)
                      : std::holds_alternative<OptionalTensorLayouts>(value));
        break;
      }
      switch (element->kind()) {
        case c10::TypeKind::TensorType:
          fits = graph ? std::holds_alternative<GraphValues>(value)
                       : std::holds_alternative<std::vector<TensorLayout>>(value);
          break;
        case c10::TypeKind::IntType:
        case c10::TypeKind::SymIntType:
          fits = std::holds_alternative<std::vector<int64_t>>(value);
          break;
        case c10::TypeKind::FloatType:
          fits = std::holds_alternative<std::vector<double>>(value);
          break;
        case c10::TypeKind::BoolType:
          if (const auto* flags = std::get_if<std::vector<bool>>(&value)) {
            // bool[3] output_mask unboxes into a std::array of that size.
            fits = !argument.N() || flags->size() == static_cast<size_t>(*argument.N());
          }
          break;
        case c10::TypeKind::NumberType:
          fits = std::holds_alternative<ImmediateScalarList>(value);
          break;
        default:
          return absl::InvalidArgumentError(
              absl::StrFormat("has type %s, which an executable cannot describe",
                              type.str()));
      }
      break;
    }
    default:
      return absl::InvalidArgumentError(
          absl::StrFormat("has type %s, which an executable cannot describe", type.str()));
  }
  if (fits) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrFormat("of type %s cannot take the value given",
                                                    argument.real_type()->str()));
}

absl::Status CheckImmediateKinds(const OpValue& value) {
  auto known = [](ImmediateScalar::Kind kind) {
    return kind == ImmediateScalar::Kind::kInt64 || kind == ImmediateScalar::Kind::kDouble ||
           kind == ImmediateScalar::Kind::kBool || kind == ImmediateScalar::Kind::kComplexDouble;
  };
  if (const auto* immediate = std::get_if<ImmediateScalar>(&value);
      immediate != nullptr && !known(immediate->kind)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "has an immediate scalar of unknown kind %d", static_cast<int>(immediate->kind)));
  }
  if (const auto* list = std::get_if<ImmediateScalarList>(&value);
      list != nullptr && !known(list->kind)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "has an immediate scalar list of unknown kind %d", static_cast<int>(list->kind)));
  }
  return absl::OkStatus();
}

template <typename T>
absl::StatusOr<T> ReadImmediate(std::span<const uint8_t> immediates, uint32_t offset) {
  if (offset > immediates.size() || immediates.size() - offset < sizeof(T)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "immediate scalar at offset %d is outside the launch's %d scalar bytes", offset,
        immediates.size()));
  }
  T value;
  std::memcpy(&value, immediates.data() + offset, sizeof(T));
  return value;
}

c10::IValue ScalarIValue(ImmediateScalar::Kind kind, const uint8_t* bytes) {
  switch (kind) {
    case ImmediateScalar::Kind::kInt64: {
      int64_t number;
      std::memcpy(&number, bytes, sizeof(number));
      return c10::IValue(number);
    }
    case ImmediateScalar::Kind::kDouble: {
      double number;
      std::memcpy(&number, bytes, sizeof(number));
      return c10::IValue(number);
    }
    case ImmediateScalar::Kind::kBool:
      return c10::IValue(bytes[0] != 0);
    case ImmediateScalar::Kind::kComplexDouble: {
      double parts[2];
      std::memcpy(parts, bytes, sizeof(parts));
      return c10::IValue(c10::complex<double>(parts[0], parts[1]));
    }
  }
  return c10::IValue();
}

absl::StatusOr<at::Tensor> GraphTensor(std::span<const at::Tensor> values, GraphValue value) {
  // Checked at load: a node refers only to values before it.
  if (value.id >= values.size()) {
    return absl::InternalError(absl::StrFormat("graph value %d is not defined yet", value.id));
  }
  return values[value.id];
}

absl::StatusOr<c10::IValue> ToIValue(const OpValue& value, const LaunchInputs& inputs) {
  HbmArena& arena = inputs.arena;
  const std::span<const uint64_t> bindings = inputs.bindings;
  const std::span<const uint8_t> immediates = inputs.immediates;
  if (const auto* graph_value = std::get_if<GraphValue>(&value)) {
    absl::StatusOr<at::Tensor> tensor = GraphTensor(inputs.values, *graph_value);
    if (!tensor.ok()) return tensor.status();
    return c10::IValue(*std::move(tensor));
  }
  if (const auto* graph_values = std::get_if<GraphValues>(&value)) {
    std::vector<at::Tensor> tensors;
    for (GraphValue each : *graph_values) {
      absl::StatusOr<at::Tensor> tensor = GraphTensor(inputs.values, each);
      if (!tensor.ok()) return tensor.status();
      tensors.push_back(*std::move(tensor));
    }
    return c10::IValue(std::move(tensors));
  }
  if (const auto* optional_values = std::get_if<OptionalGraphValues>(&value)) {
    c10::List<std::optional<at::Tensor>> tensors;
    for (const std::optional<GraphValue>& each : *optional_values) {
      if (!each) {
        tensors.push_back(std::nullopt);
        continue;
      }
      absl::StatusOr<at::Tensor> tensor = GraphTensor(inputs.values, *each);
      if (!tensor.ok()) return tensor.status();
      tensors.push_back(*std::move(tensor));
    }
    return c10::IValue(std::move(tensors));
  }
  if (const auto* layout = std::get_if<TensorLayout>(&value)) {
    absl::StatusOr<at::Tensor> tensor = WrapLayout(arena, *layout, bindings);
    if (!tensor.ok()) return tensor.status();
    return c10::IValue(*std::move(tensor));
  }
  if (std::holds_alternative<NoneValue>(value)) return c10::IValue();
  if (const auto* number = std::get_if<int64_t>(&value)) return c10::IValue(*number);
  if (const auto* number = std::get_if<double>(&value)) return c10::IValue(*number);
  if (const auto* flag = std::get_if<bool>(&value)) return c10::IValue(*flag);
  if (const auto* list = std::get_if<std::vector<int64_t>>(&value)) return c10::IValue(*list);
  if (const auto* type = std::get_if<ScalarTypeValue>(&value)) {
    return c10::IValue(static_cast<at::ScalarType>(type->dtype));
  }
  if (const auto* text = std::get_if<std::string>(&value)) return c10::IValue(*text);
  if (const auto* layouts = std::get_if<std::vector<TensorLayout>>(&value)) {
    std::vector<at::Tensor> tensors;
    for (const TensorLayout& layout : *layouts) {
      absl::StatusOr<at::Tensor> tensor = WrapLayout(arena, layout, bindings);
      if (!tensor.ok()) return tensor.status();
      tensors.push_back(*std::move(tensor));
    }
    return c10::IValue(std::move(tensors));
  }
  if (const auto* flags = std::get_if<std::vector<bool>>(&value)) {
    c10::List<bool> list;
    for (bool flag : *flags) list.push_back(flag);
    return c10::IValue(std::move(list));
  }
  if (const auto* numbers = std::get_if<std::vector<double>>(&value)) {
    return c10::IValue(*numbers);
  }
  if (const auto* optional = std::get_if<OptionalTensorLayouts>(&value)) {
    c10::List<std::optional<at::Tensor>> tensors;
    for (const std::optional<TensorLayout>& layout : *optional) {
      if (!layout) {
        tensors.push_back(std::nullopt);
        continue;
      }
      absl::StatusOr<at::Tensor> tensor = WrapLayout(arena, *layout, bindings);
      if (!tensor.ok()) return tensor.status();
      tensors.push_back(*std::move(tensor));
    }
    return c10::IValue(std::move(tensors));
  }
  if (const auto* list = std::get_if<ImmediateScalarList>(&value)) {
    const uint32_t width = ImmediateScalarBytes(list->kind);
    const uint64_t end = uint64_t{list->offset} + uint64_t{list->count} * width;
    if (end > immediates.size()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "immediate scalar list ends at byte %d; the launch has %d scalar bytes", end,
          immediates.size()));
    }
    c10::impl::GenericList items(c10::NumberType::get());
    for (uint32_t i = 0; i < list->count; ++i) {
      items.push_back(ScalarIValue(list->kind, immediates.data() + list->offset + width * i));
    }
    return c10::IValue(std::move(items));
  }
  if (std::holds_alternative<DeviceValue>(value)) return c10::IValue(c10::Device(c10::kCPU));
  if (const auto* generator = std::get_if<GeneratorSeed>(&value)) {
    absl::StatusOr<uint64_t> seed = ReadImmediate<uint64_t>(immediates, generator->offset);
    if (!seed.ok()) return seed.status();
    return c10::IValue(at::detail::createCPUGenerator(*seed));
  }
  const auto& immediate = std::get<ImmediateScalar>(value);
  const size_t width =
      immediate.kind == ImmediateScalar::Kind::kBool ? 1 : ImmediateScalarBytes(immediate.kind);
  if (immediate.offset > immediates.size() || immediates.size() - immediate.offset < width) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "immediate scalar at offset %d is outside the launch's %d scalar bytes", immediate.offset,
        immediates.size()));
  }
  return ScalarIValue(immediate.kind, immediates.data() + immediate.offset);
}

// The Python exception type PyTorch raises for `error`.
const char* PythonTypeOf(const c10::Error& error) {
  if (dynamic_cast<const c10::IndexError*>(&error)) return "IndexError";
  if (dynamic_cast<const c10::ValueError*>(&error)) return "ValueError";
  if (dynamic_cast<const c10::TypeError*>(&error)) return "TypeError";
  if (dynamic_cast<const c10::NotImplementedError*>(&error)) return "NotImplementedError";
  if (dynamic_cast<const c10::LinAlgError*>(&error)) return "LinAlgError";
  if (dynamic_cast<const c10::OutOfMemoryError*>(&error)) return "OutOfMemoryError";
  return "RuntimeError";
}

}  // namespace

absl::StatusOr<at::Tensor> WrapLayout(HbmArena& arena, const TensorLayout& layout,
                                      std::span<const uint64_t> bindings) {
  if (layout.address_index >= bindings.size()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "tensor argument names address %d; the launch has %d", layout.address_index,
        bindings.size()));
  }
  const uint64_t extent = TensorExtentBytes(layout);
  // An empty tensor touches no memory; its address need not be in HBM.
  absl::StatusOr<void*> data =
      extent == 0 ? nullptr : arena.HostPointer(bindings[layout.address_index], extent);
  if (!data.ok()) return data.status();
  return at::from_blob(*data, layout.sizes, layout.strides,
                       at::TensorOptions()
                           .dtype(static_cast<at::ScalarType>(layout.dtype))
                           .device(at::kCPU));
}

absl::StatusOr<uint64_t> ReadSeed(std::span<const uint8_t> immediates, uint32_t offset) {
  return ReadImmediate<uint64_t>(immediates, offset);
}

void WithSeededDefaultGenerator(uint64_t seed, const std::function<void()>& body) {
  // The kernel takes the generator's own mutex while it draws, so seeding
  // and drawing are kept together by a separate one.
  static absl::Mutex default_generator_user(absl::kConstInit);
  absl::MutexLock serialize(&default_generator_user);
  at::Generator generator = at::detail::getDefaultCPUGenerator();
  {
    std::lock_guard<std::mutex> lock(generator.mutex());
    generator.set_current_seed(seed);
  }
  body();
}

absl::StatusOr<PreparedCall> PrepareCall(const std::string& name, const std::string& overload,
                                         const std::vector<OpValue>& arguments,
                                         ArgumentSource source) {
  const std::string qualified =
      overload.empty() ? name : absl::StrFormat("%s.%s", name, overload);
  std::optional<c10::OperatorHandle> op = c10::Dispatcher::singleton().findSchema({name, overload});
  if (!op) return absl::InvalidArgumentError(absl::StrFormat("ATen has no operator %s", qualified));
  const c10::FunctionSchema& schema = op->schema();
  if (schema.is_vararg() || schema.is_varret()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s takes or returns a variable number of values", qualified));
  }
  const std::vector<c10::Argument>& declared = schema.arguments();
  if (arguments.size() > declared.size()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s takes %d arguments; the executable gives %d", qualified, declared.size(),
        arguments.size()));
  }
  PreparedCall call{.op = *op, .qualified = qualified};
  for (size_t i = 0; i < arguments.size(); ++i) {
    const c10::Argument& argument = declared[i];
    const OpValue& value = arguments[i];
    auto refuse = [&](const absl::Status& why) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s argument %d (%s) %s", qualified, i, argument.name(), why.message()));
    };
    if (absl::Status kinds = CheckImmediateKinds(value); !kinds.ok()) return refuse(kinds);
    c10::TypePtr type = argument.real_type();
    bool optional = false;
    if (const auto element = type->cast<c10::OptionalType>()) {
      optional = true;
      type = element->getElementType();
    }
    bool undefined_tensor = false;
    if (std::holds_alternative<NoneValue>(value)) {
      undefined_tensor = !optional && type->kind() == c10::TypeKind::TensorType;
      if (!optional && !undefined_tensor) {
        return refuse(absl::InvalidArgumentError(absl::StrFormat(
            "of type %s cannot be None", argument.real_type()->str())));
      }
    } else if (absl::Status fits = CheckKind(*type, argument, value, source); !fits.ok()) {
      return refuse(fits);
    }
    call.none_is_undefined_tensor.push_back(undefined_tensor);
  }
  for (size_t i = arguments.size(); i < declared.size(); ++i) {
    const c10::Argument& argument = declared[i];
    if (!argument.default_value()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s argument %d (%s) is missing and has no default", qualified, i, argument.name()));
    }
    call.trailing_defaults.push_back(*argument.default_value());
  }
  return call;
}

absl::Status PushArguments(const PreparedCall& call, const std::vector<OpValue>& arguments,
                           const LaunchInputs& inputs, torch::jit::Stack& stack) {
  stack.reserve(stack.size() + arguments.size() + call.trailing_defaults.size());
  for (size_t i = 0; i < arguments.size(); ++i) {
    if (call.none_is_undefined_tensor[i]) {
      stack.emplace_back(at::Tensor());
      continue;
    }
    absl::StatusOr<c10::IValue> value = ToIValue(arguments[i], inputs);
    if (!value.ok()) return value.status();
    stack.push_back(*std::move(value));
  }
  for (const c10::IValue& value : call.trailing_defaults) stack.push_back(value);
  return absl::OkStatus();
}

// The tensors an operator returned, lists flattened; an undefined tensor
// (or a None) stays in its place as an undefined tensor.
std::vector<at::Tensor> FlattenResults(const torch::jit::Stack& stack) {
  std::vector<at::Tensor> results;
  for (const c10::IValue& result : stack) {
    if (result.isTensor()) {
      results.push_back(result.toTensor());
    } else if (result.isTensorList()) {
      for (const at::Tensor& tensor : result.toTensorVector()) results.push_back(tensor);
    } else if (result.isNone()) {
      results.emplace_back();
    }
  }
  return results;
}

absl::Status OperatorError(const c10::Error& error, const std::string& message) {
  const bool out_of_memory = dynamic_cast<const c10::OutOfMemoryError*>(&error) != nullptr;
  absl::Status status(
      out_of_memory ? absl::StatusCode::kResourceExhausted : absl::StatusCode::kInvalidArgument,
      message);
  status.SetPayload(kOperatorErrorTypePayload, absl::Cord(PythonTypeOf(error)));
  return status;
}

absl::Status OperatorError(const std::exception& /*error*/, const std::string& message) {
  absl::Status status(absl::StatusCode::kInternal, message);
  status.SetPayload(kOperatorErrorTypePayload, absl::Cord("RuntimeError"));
  return status;
}

}  // namespace neuron::rtd::hal::sim::internal
