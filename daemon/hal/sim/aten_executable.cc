#include "daemon/hal/sim/aten_executable.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/from_blob.h>
#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/cord.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "daemon/hal/device.h"
#include "daemon/hal/sim/launch_host_budget.h"

namespace neuron::rtd::hal::sim {
namespace {

class AtenExecutable final : public Executable {
 public:
  AtenExecutable(c10::OperatorHandle handle, EagerOpPlan spec, std::string name)
      : op(std::move(handle)), plan(std::move(spec)), qualified(std::move(name)) {}

  BackendKind backend() const override { return BackendKind::kSim; }

  const c10::OperatorHandle op;
  const EagerOpPlan plan;
  const std::string qualified;  // "aten::add.out", for messages
  // Per plan argument: a None that stands for an undefined Tensor (an
  // incoming gradient autograd did not compute), not for an absent optional.
  std::vector<bool> none_is_undefined_tensor;
  // The schema's defaults for arguments after the plan's last one.
  std::vector<c10::IValue> trailing_defaults;
};

// Whether `value` may stand for an argument of (non-optional) `type`; the
// error says what it is instead.
absl::Status CheckKind(const c10::Type& type, const c10::Argument& argument, const OpValue& value) {
  auto immediate_is = [&](std::initializer_list<ImmediateScalar::Kind> kinds) {
    const auto* immediate = std::get_if<ImmediateScalar>(&value);
    return immediate != nullptr &&
           std::find(kinds.begin(), kinds.end(), immediate->kind) != kinds.end();
  };
  bool fits = false;
  switch (type.kind()) {
    case c10::TypeKind::TensorType:
      fits = std::holds_alternative<TensorLayout>(value);
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
    case c10::TypeKind::NumberType:
      fits = std::holds_alternative<int64_t>(value) || std::holds_alternative<double>(value) ||
             std::holds_alternative<bool>(value) ||
             immediate_is({ImmediateScalar::Kind::kInt64, ImmediateScalar::Kind::kDouble,
                           ImmediateScalar::Kind::kBool});
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
               std::holds_alternative<OptionalTensorLayouts>(value);
        break;
      }
      switch (element->kind()) {
        case c10::TypeKind::TensorType:
          fits = std::holds_alternative<std::vector<TensorLayout>>(value);
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
           kind == ImmediateScalar::Kind::kBool;
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
  }
  return c10::IValue();
}

absl::StatusOr<c10::IValue> ToIValue(HbmArena& arena, const OpValue& value,
                                     std::span<const uint64_t> bindings,
                                     std::span<const uint8_t> immediates) {
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
    const uint64_t end = uint64_t{list->offset} + uint64_t{list->count} * 8;
    if (end > immediates.size()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "immediate scalar list ends at byte %d; the launch has %d scalar bytes", end,
          immediates.size()));
    }
    c10::impl::GenericList items(c10::NumberType::get());
    for (uint32_t i = 0; i < list->count; ++i) {
      items.push_back(ScalarIValue(list->kind, immediates.data() + list->offset + 8 * i));
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
  const size_t width = immediate.kind == ImmediateScalar::Kind::kBool ? 1 : 8;
  if (immediate.offset > immediates.size() || immediates.size() - immediate.offset < width) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "immediate scalar at offset %d is outside the launch's %d scalar bytes", immediate.offset,
        immediates.size()));
  }
  return ScalarIValue(immediate.kind, immediates.data() + immediate.offset);
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

absl::Status OperatorError(absl::StatusCode code, const char* python_type,
                           const std::string& message) {
  absl::Status status(code, message);
  status.SetPayload(kOperatorErrorTypePayload, absl::Cord(python_type));
  return status;
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

absl::Status Run(HbmArena& arena, const AtenExecutable& executable,
                 std::span<const uint64_t> bindings, std::span<const uint8_t> immediates) {
  const EagerOpPlan& plan = executable.plan;
  torch::jit::Stack stack;
  stack.reserve(plan.arguments.size() + executable.trailing_defaults.size());
  for (size_t i = 0; i < plan.arguments.size(); ++i) {
    if (executable.none_is_undefined_tensor[i]) {
      stack.emplace_back(at::Tensor());
      continue;
    }
    absl::StatusOr<c10::IValue> value = ToIValue(arena, plan.arguments[i], bindings, immediates);
    if (!value.ok()) return value.status();
    stack.push_back(*std::move(value));
  }
  for (const c10::IValue& value : executable.trailing_defaults) stack.push_back(value);
  // The sim runs the CPU kernels themselves: no autograd, no views kept.
  c10::InferenceMode inference;
  if (plan.default_generator) {
    absl::StatusOr<uint64_t> seed =
        ReadImmediate<uint64_t>(immediates, plan.default_generator->offset);
    if (!seed.ok()) return seed.status();
    // One generator serves every core's worker: seeding and drawing must
    // not interleave with another random operator. The kernel takes the
    // generator's own mutex while it draws, so this is a separate one.
    static absl::Mutex default_generator_user(absl::kConstInit);
    absl::MutexLock serialize(&default_generator_user);
    at::Generator generator = at::detail::getDefaultCPUGenerator();
    {
      std::lock_guard<std::mutex> lock(generator.mutex());
      generator.set_current_seed(*seed);
    }
    executable.op.callBoxed(stack);
  } else {
    executable.op.callBoxed(stack);
  }
  const std::vector<at::Tensor> results = FlattenResults(stack);
  const size_t expected = plan.outputs.size() + plan.undefined_results.size();
  if (!plan.outputs.empty() && results.size() < expected) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s returned %d tensors; the executable expects %d", executable.qualified,
        results.size(), expected));
  }
  size_t next_output = 0;
  for (size_t r = 0; r < results.size() && next_output < plan.outputs.size(); ++r) {
    if (std::binary_search(plan.undefined_results.begin(), plan.undefined_results.end(), r)) {
      continue;
    }
    const TensorLayout& layout = plan.outputs[next_output];
    absl::StatusOr<at::Tensor> output = WrapLayout(arena, layout, bindings);
    if (!output.ok()) return output.status();
    const at::Tensor& result = results[r];
    if (!result.defined() || (result.numel() == 0 && output->numel() != 0)) {
      ++next_output;
      continue;
    }
    if (!output->sizes().equals(result.sizes())) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s output %d has sizes %s; the executable expects %s", executable.qualified,
          next_output, c10::str(result.sizes()), c10::str(output->sizes())));
    }
    output->copy_(result);
    ++next_output;
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<Executable>> PrepareAtenExecutable(const ExecutableSpec& spec) {
  const EagerOpPlan& plan = spec.eager_op;
  const std::string qualified =
      plan.overload.empty() ? plan.name : absl::StrFormat("%s.%s", plan.name, plan.overload);
  std::optional<c10::OperatorHandle> op =
      c10::Dispatcher::singleton().findSchema({plan.name, plan.overload});
  if (!op) return absl::InvalidArgumentError(absl::StrFormat("ATen has no operator %s", qualified));
  const c10::FunctionSchema& schema = op->schema();
  if (schema.is_vararg() || schema.is_varret()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s takes or returns a variable number of values", qualified));
  }
  const std::vector<c10::Argument>& declared = schema.arguments();
  if (plan.arguments.size() > declared.size()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s takes %d arguments; the executable gives %d", qualified, declared.size(),
        plan.arguments.size()));
  }
  auto executable = std::make_unique<AtenExecutable>(*op, plan, qualified);
  for (size_t i = 0; i < plan.arguments.size(); ++i) {
    const c10::Argument& argument = declared[i];
    const OpValue& value = plan.arguments[i];
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
    } else if (absl::Status fits = CheckKind(*type, argument, value); !fits.ok()) {
      return refuse(fits);
    }
    executable->none_is_undefined_tensor.push_back(undefined_tensor);
  }
  for (size_t i = plan.arguments.size(); i < declared.size(); ++i) {
    const c10::Argument& argument = declared[i];
    if (!argument.default_value()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s argument %d (%s) is missing and has no default", qualified, i, argument.name()));
    }
    executable->trailing_defaults.push_back(*argument.default_value());
  }
  size_t tensor_returns = 0;
  bool returns_list = false;
  for (const c10::Argument& result : schema.returns()) {
    if (result.type()->kind() == c10::TypeKind::TensorType) ++tensor_returns;
    returns_list |= result.type()->kind() == c10::TypeKind::ListType;
  }
  const size_t outputs = plan.outputs.size() + plan.undefined_results.size();
  if (!returns_list && outputs > tensor_returns) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s returns %d tensors; the executable has %d outputs", qualified, tensor_returns,
        outputs));
  }
  if (!std::is_sorted(plan.undefined_results.begin(), plan.undefined_results.end())) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: undefined results are not in ascending order", qualified));
  }
  return executable;
}

absl::Status DispatchAtenExecutable(HbmArena& arena, const Executable& executable,
                                    std::span<const uint64_t> bindings,
                                    std::span<const uint8_t> immediates,
                                    uint64_t max_host_bytes) {
  const auto* aten = dynamic_cast<const AtenExecutable*>(&executable);
  if (aten == nullptr) {
    return absl::InvalidArgumentError("the executable was not prepared by the sim backend");
  }
  const std::string& qualified = aten->qualified;
  try {
    LaunchHostBudget budget(max_host_bytes);
    return Run(arena, *aten, bindings, immediates);
  } catch (const c10::Error& error) {
    const bool out_of_memory = dynamic_cast<const c10::OutOfMemoryError*>(&error) != nullptr;
    return OperatorError(
        out_of_memory ? absl::StatusCode::kResourceExhausted : absl::StatusCode::kInvalidArgument,
        PythonTypeOf(error), absl::StrFormat("%s: %s", qualified, error.what_without_backtrace()));
  } catch (const std::exception& error) {
    return OperatorError(absl::StatusCode::kInternal, "RuntimeError",
                         absl::StrFormat("%s: %s", qualified, error.what()));
  }
}

}  // namespace neuron::rtd::hal::sim
