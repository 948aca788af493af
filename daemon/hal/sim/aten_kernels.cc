#include "daemon/hal/sim/aten_kernels.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/add.h>
#include <ATen/ops/from_blob.h>
#include <c10/core/InferenceMode.h>

#include <cstring>

#include "absl/strings/str_format.h"
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
  if (const auto* generator = std::get_if<GeneratorSeed>(&value)) {
    absl::StatusOr<uint64_t> seed = ReadImmediate<uint64_t>(scalars, generator->offset);
    if (!seed.ok()) return seed.status();
    return c10::IValue(at::detail::createCPUGenerator(*seed));
  }
  const auto& immediate = std::get<ImmediateScalar>(value);
  switch (immediate.kind) {
    case ImmediateScalar::Kind::kInt64: {
      absl::StatusOr<int64_t> number = ReadImmediate<int64_t>(scalars, immediate.offset);
      if (!number.ok()) return number.status();
      return c10::IValue(*number);
    }
    case ImmediateScalar::Kind::kDouble: {
      absl::StatusOr<double> number = ReadImmediate<double>(scalars, immediate.offset);
      if (!number.ok()) return number.status();
      return c10::IValue(*number);
    }
    case ImmediateScalar::Kind::kBool: {
      absl::StatusOr<uint8_t> flag = ReadImmediate<uint8_t>(scalars, immediate.offset);
      if (!flag.ok()) return flag.status();
      return c10::IValue(*flag != 0);
    }
  }
  return absl::InternalError("unknown immediate scalar kind");
}

}  // namespace

absl::Status RunAtenOp(HbmArena& arena, const EagerOpPlan& plan,
                       std::span<const uint64_t> addresses, std::span<const uint8_t> scalars) {
  const std::string qualified =
      plan.overload.empty() ? plan.name : absl::StrFormat("%s.%s", plan.name, plan.overload);
  try {
    std::optional<c10::OperatorHandle> op =
        c10::Dispatcher::singleton().findSchema({plan.name, plan.overload});
    if (!op) return absl::NotFoundError(absl::StrFormat("no operator %s", qualified));
    torch::jit::Stack stack;
    stack.reserve(plan.arguments.size());
    for (const OpValue& argument : plan.arguments) {
      absl::StatusOr<c10::IValue> value = ToIValue(arena, argument, addresses, scalars);
      if (!value.ok()) return value.status();
      stack.push_back(*std::move(value));
    }
    // The sim runs the CPU kernels themselves: no autograd, no views kept.
    c10::InferenceMode inference;
    op->callBoxed(stack);
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
