#include "daemon/hal/sim/aten_executable.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "daemon/hal/device.h"
#include "daemon/hal/sim/internal/aten_call.h"
#include "daemon/hal/sim/internal/index_guards.h"
#include "daemon/hal/sim/launch_host_budget.h"
#include "daemon/hal/sim/launch_parallelism.h"

namespace neuron::rtd::hal::sim {
namespace {

using internal::ArgumentSource;
using internal::PreparedCall;

class AtenExecutable final : public SimExecutable {
 public:
  AtenExecutable(PreparedCall prepared, EagerOpPlan spec)
      : call(std::move(prepared)), plan(std::move(spec)) {}

  absl::Status Run(HbmArena& arena, std::span<const uint64_t> bindings,
                   std::span<const uint8_t> immediates,
                   const LaunchSettings& settings) const override;
  ExecutableStatus status() const override {
    return ExecutableStatus{.host_threads = parallelism.host_threads()};
  }

  const PreparedCall call;
  const EagerOpPlan plan;
  mutable LaunchParallelism parallelism;
};

// A tensor argument the operator writes (in-place, out=), as the stack
// holds it, with the layout the client planned for its memory.
struct WrittenArgument {
  at::Tensor tensor;
  const TensorLayout* layout;
};

std::vector<WrittenArgument> WrittenArguments(const internal::PreparedCall& call,
                                              const EagerOpPlan& plan,
                                              const torch::jit::Stack& stack) {
  std::vector<WrittenArgument> written;
  const std::vector<c10::Argument>& schema = call.op.schema().arguments();
  for (size_t i = 0; i < plan.arguments.size() && i < schema.size() && i < stack.size(); ++i) {
    const c10::AliasInfo* alias = schema[i].alias_info();
    const auto* layout = std::get_if<TensorLayout>(&plan.arguments[i]);
    if (alias == nullptr || !alias->isWrite() || layout == nullptr || !stack[i].isTensor()) {
      continue;
    }
    written.push_back({stack[i].toTensor(), layout});
  }
  return written;
}

// Some CPU kernels restride an out= tensor of the right size in place to
// the layout they pick from their input (replication_pad2d of a
// channels-last input makes its output channels-last), then write it so:
// the bytes in device memory are then laid out otherwise than the client
// reads them. Rewrites such a tensor's values in the planned layout.
absl::Status KeepPlannedLayouts(HbmArena& arena, std::span<const uint64_t> bindings,
                                const std::vector<WrittenArgument>& written) {
  for (const WrittenArgument& argument : written) {
    const TensorLayout& layout = *argument.layout;
    const at::Tensor& tensor = argument.tensor;
    if (tensor.sizes().equals(layout.sizes) && tensor.strides().equals(layout.strides)) continue;
    absl::StatusOr<at::Tensor> planned = internal::WrapLayout(arena, layout, bindings);
    if (!planned.ok()) return planned.status();
    if (!planned->sizes().equals(tensor.sizes())) continue;  // resized: the client's check
    planned->copy_(tensor.clone());
  }
  return absl::OkStatus();
}

absl::Status RunCall(HbmArena& arena, const AtenExecutable& executable,
                     std::span<const uint64_t> bindings, std::span<const uint8_t> immediates) {
  const EagerOpPlan& plan = executable.plan;
  const std::string& qualified = executable.call.qualified;
  torch::jit::Stack stack;
  if (absl::Status pushed = internal::PushArguments(
          executable.call, plan.arguments,
          internal::LaunchInputs{.arena = arena, .bindings = bindings, .immediates = immediates},
          stack);
      !pushed.ok()) {
    return pushed;
  }
  // The sim runs the CPU kernels themselves: no autograd, no views kept.
  c10::InferenceMode inference;
  internal::CheckUncheckedIndices(qualified, stack);
  const std::vector<WrittenArgument> written = WrittenArguments(executable.call, plan, stack);
  if (plan.default_generator) {
    absl::StatusOr<uint64_t> seed = internal::ReadSeed(immediates, plan.default_generator->offset);
    if (!seed.ok()) return seed.status();
    internal::WithSeededDefaultGenerator(*seed, [&] { executable.call.op.callBoxed(stack); });
  } else {
    executable.call.op.callBoxed(stack);
  }
  if (absl::Status kept = KeepPlannedLayouts(arena, bindings, written); !kept.ok()) return kept;
  const std::vector<at::Tensor> results = internal::FlattenResults(stack);
  const size_t expected = plan.outputs.size() + plan.undefined_results.size();
  if (!plan.outputs.empty() && results.size() < expected) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s returned %d tensors; the executable expects %d", qualified, results.size(),
        expected));
  }
  size_t next_output = 0;
  for (size_t r = 0; r < results.size() && next_output < plan.outputs.size(); ++r) {
    if (std::binary_search(plan.undefined_results.begin(), plan.undefined_results.end(), r)) {
      continue;
    }
    const TensorLayout& layout = plan.outputs[next_output];
    absl::StatusOr<at::Tensor> output = internal::WrapLayout(arena, layout, bindings);
    if (!output.ok()) return output.status();
    const at::Tensor& result = results[r];
    // Auxiliary outputs where the CPU kernel and the meta kernel (CUDA's
    // rule) disagree about being empty (batch norm's saved statistics in
    // eval mode, embedding_bag's max_indices outside max mode): what is
    // empty on one side carries nothing the other side needs.
    if (!result.defined() || (result.numel() == 0) != (output->numel() == 0)) {
      ++next_output;
      continue;
    }
    if (!output->sizes().equals(result.sizes())) {
      // Device memory is intact (nothing was written past this output's
      // own buffer): an error of this call, not of the stream.
      return internal::OperatorError(
          std::runtime_error(""),
          absl::StrFormat("%s output %d has sizes %s where meta inference predicted %s", qualified,
                          next_output, c10::str(result.sizes()), c10::str(output->sizes())));
    }
    output->copy_(result);
    ++next_output;
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<SimExecutable>> PrepareAtenExecutable(const EagerOpPlan& plan) {
  absl::StatusOr<PreparedCall> call = internal::PrepareCall(
      plan.name, plan.overload, plan.arguments, ArgumentSource::kLaunchAddresses);
  if (!call.ok()) return call.status();
  const c10::FunctionSchema& schema = call->op.schema();
  size_t tensor_returns = 0;
  bool returns_list = false;
  for (const c10::Argument& result : schema.returns()) {
    if (result.type()->kind() == c10::TypeKind::TensorType) ++tensor_returns;
    returns_list |= result.type()->kind() == c10::TypeKind::ListType;
  }
  const size_t outputs = plan.outputs.size() + plan.undefined_results.size();
  if (!returns_list && outputs > tensor_returns) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s returns %d tensors; the executable has %d outputs", call->qualified, tensor_returns,
        outputs));
  }
  if (!std::is_sorted(plan.undefined_results.begin(), plan.undefined_results.end())) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: undefined results are not in ascending order", call->qualified));
  }
  return std::make_unique<AtenExecutable>(*std::move(call), plan);
}

absl::Status AtenExecutable::Run(HbmArena& arena, std::span<const uint64_t> bindings,
                                 std::span<const uint8_t> immediates,
                                 const LaunchSettings& settings) const {
  absl::Status status;
  parallelism.Run(
      settings.parallel_min_ns,
      [&] {
        try {
          LaunchHostBudget budget(settings.max_host_bytes);
          status = RunCall(arena, *this, bindings, immediates);
        } catch (const c10::Error& error) {
          status = internal::OperatorError(
              error, absl::StrFormat("%s: %s", call.qualified, error.what_without_backtrace()));
        } catch (const std::exception& error) {
          status = internal::OperatorError(
              error, absl::StrFormat("%s: %s", call.qualified, error.what()));
        }
      });
  return status;
}

}  // namespace neuron::rtd::hal::sim
