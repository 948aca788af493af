#include "daemon/hal/sim/aten_kernels.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/add.h>
#include <ATen/ops/from_blob.h>
#include <c10/core/InferenceMode.h>

#include <cstring>
#include <mutex>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "daemon/hal/sim/aten_memory.h"

namespace neuron::rtd::hal::sim {

absl::Status RunAddF32(HbmArena& arena, std::span<const uint64_t> arguments,
                       std::span<const uint8_t> scalars) {
  if (arguments.size() != 3 || scalars.size() != sizeof(uint64_t)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "builtin add_f32 takes 3 arguments and an 8-byte element count, got %d and %d bytes",
        arguments.size(), scalars.size()));
  }
  uint64_t count = 0;
  std::memcpy(&count, scalars.data(), sizeof(count));
  if (count > static_cast<uint64_t>(INT64_MAX)) {
    return absl::InvalidArgumentError(absl::StrFormat("element count %d is too large", count));
  }
  const int64_t sizes[] = {static_cast<int64_t>(count)};
  absl::StatusOr<at::Tensor> a = WrapHbm(arena, arguments[0], sizes, at::kFloat);
  if (!a.ok()) return a.status();
  absl::StatusOr<at::Tensor> b = WrapHbm(arena, arguments[1], sizes, at::kFloat);
  if (!b.ok()) return b.status();
  absl::StatusOr<at::Tensor> out = WrapHbm(arena, arguments[2], sizes, at::kFloat);
  if (!out.ok()) return out.status();
  try {
    at::add_out(*out, *a, *b);
  } catch (const std::exception& error) {
    return absl::InternalError(absl::StrFormat("add_f32: %s", error.what()));
  }
  return absl::OkStatus();
}

namespace {

absl::StatusOr<at::Tensor> WrapLayout(HbmArena& arena, const TensorLayout& layout,
                                      std::span<const uint64_t> addresses) {
  if (layout.address_index >= addresses.size()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "tensor argument names address %d; the launch has %d", layout.address_index,
        addresses.size()));
  }
  const uint64_t extent = TensorExtentBytes(layout);
  // An empty tensor touches no memory; its address need not be in HBM.
  absl::StatusOr<void*> data =
      extent == 0 ? nullptr : arena.HostPointer(addresses[layout.address_index], extent);
  if (!data.ok()) return data.status();
  return at::from_blob(*data, layout.sizes, layout.strides,
                       at::TensorOptions()
                           .dtype(static_cast<at::ScalarType>(layout.dtype))
                           .device(at::kCPU));
}

template <typename T>
absl::StatusOr<T> ReadImmediate(std::span<const uint8_t> scalars, uint32_t offset) {
  if (offset > scalars.size() || scalars.size() - offset < sizeof(T)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "immediate scalar at offset %d is outside the launch's %d scalar bytes", offset,
        scalars.size()));
  }
  T value;
  std::memcpy(&value, scalars.data() + offset, sizeof(T));
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
                                     std::span<const uint64_t> addresses,
                                     std::span<const uint8_t> scalars) {
  if (const auto* layout = std::get_if<TensorLayout>(&value)) {
    absl::StatusOr<at::Tensor> tensor = WrapLayout(arena, *layout, addresses);
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
      absl::StatusOr<at::Tensor> tensor = WrapLayout(arena, layout, addresses);
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
      absl::StatusOr<at::Tensor> tensor = WrapLayout(arena, *layout, addresses);
      if (!tensor.ok()) return tensor.status();
      tensors.push_back(*std::move(tensor));
    }
    return c10::IValue(std::move(tensors));
  }
  if (const auto* list = std::get_if<ImmediateScalarList>(&value)) {
    const uint64_t end = uint64_t{list->offset} + uint64_t{list->count} * 8;
    if (end > scalars.size()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "immediate scalar list ends at byte %d; the launch has %d scalar bytes", end,
          scalars.size()));
    }
    c10::impl::GenericList items(c10::NumberType::get());
    for (uint32_t i = 0; i < list->count; ++i) {
      items.push_back(ScalarIValue(list->kind, scalars.data() + list->offset + 8 * i));
    }
    return c10::IValue(std::move(items));
  }
  if (std::holds_alternative<DeviceValue>(value)) return c10::IValue(c10::Device(c10::kCPU));
  if (const auto* generator = std::get_if<GeneratorSeed>(&value)) {
    absl::StatusOr<uint64_t> seed = ReadImmediate<uint64_t>(scalars, generator->offset);
    if (!seed.ok()) return seed.status();
    return c10::IValue(at::detail::createCPUGenerator(*seed));
  }
  const auto& immediate = std::get<ImmediateScalar>(value);
  const size_t width = immediate.kind == ImmediateScalar::Kind::kBool ? 1 : 8;
  if (immediate.offset > scalars.size() || scalars.size() - immediate.offset < width) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "immediate scalar at offset %d is outside the launch's %d scalar bytes", immediate.offset,
        scalars.size()));
  }
  c10::IValue scalar = ScalarIValue(immediate.kind, scalars.data() + immediate.offset);
  if (scalar.isNone()) return absl::InvalidArgumentError("unknown immediate scalar kind");
  return scalar;
}

// Operators are looked up once per executable: plans live as long as the
// daemon (executables are never unloaded), so their address is a stable key.
absl::StatusOr<c10::OperatorHandle> FindOperator(const EagerOpPlan& plan,
                                                 const std::string& qualified) {
  static absl::Mutex mutex(absl::kConstInit);
  static auto* handles =
      new absl::flat_hash_map<const EagerOpPlan*, c10::OperatorHandle>();
  absl::MutexLock lock(&mutex);
  if (auto it = handles->find(&plan); it != handles->end()) return it->second;
  std::optional<c10::OperatorHandle> op =
      c10::Dispatcher::singleton().findSchema({plan.name, plan.overload});
  if (!op) return absl::NotFoundError(absl::StrFormat("no operator %s", qualified));
  handles->emplace(&plan, *op);
  return *op;
}

}  // namespace

absl::Status RunAtenOp(HbmArena& arena, const EagerOpPlan& plan,
                       std::span<const uint64_t> addresses, std::span<const uint8_t> scalars) {
  const std::string qualified =
      plan.overload.empty() ? plan.name : absl::StrFormat("%s.%s", plan.name, plan.overload);
  try {
    absl::StatusOr<c10::OperatorHandle> op = FindOperator(plan, qualified);
    if (!op.ok()) return op.status();
    torch::jit::Stack stack;
    stack.reserve(plan.arguments.size());
    for (const OpValue& argument : plan.arguments) {
      absl::StatusOr<c10::IValue> value = ToIValue(arena, argument, addresses, scalars);
      if (!value.ok()) return value.status();
      stack.push_back(*std::move(value));
    }
    // The sim runs the CPU kernels themselves: no autograd, no views kept.
    c10::InferenceMode inference;
    if (plan.default_generator) {
      absl::StatusOr<uint64_t> seed = ReadImmediate<uint64_t>(scalars, plan.default_generator->offset);
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
      op->callBoxed(stack);
    } else {
      op->callBoxed(stack);
    }
    std::vector<at::Tensor> results;
    for (const c10::IValue& result : stack) {
      if (result.isTensor()) {
        results.push_back(result.toTensor());
      } else if (result.isTensorList()) {
        for (const at::Tensor& tensor : result.toTensorVector()) results.push_back(tensor);
      }
    }
    if (results.size() < plan.outputs.size()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s returned %d tensors; the executable expects %d outputs", qualified, results.size(),
          plan.outputs.size()));
    }
    for (size_t i = 0; i < plan.outputs.size(); ++i) {
      absl::StatusOr<at::Tensor> output = WrapLayout(arena, plan.outputs[i], addresses);
      if (!output.ok()) return output.status();
      if (!output->sizes().equals(results[i].sizes())) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "%s output %d has sizes %s; the executable expects %s", qualified, i,
            c10::str(results[i].sizes()), c10::str(output->sizes())));
      }
      output->copy_(results[i]);
    }
  } catch (const c10::Error& error) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: %s", qualified, error.what_without_backtrace()));
  } catch (const std::exception& error) {
    return absl::InternalError(absl::StrFormat("%s: %s", qualified, error.what()));
  }
  return absl::OkStatus();
}

}  // namespace neuron::rtd::hal::sim
