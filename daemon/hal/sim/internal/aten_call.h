// Calling one ATen operator on the sim from a plain-data description: the
// operator resolved and its arguments checked against its schema (at load),
// then the call's stack built from HBM tensors, graph values and immediates
// (per launch). Shared by eager-op executables and the graph interpreter.
// PyTorch headers: include only from the sim's own .cc files.
#ifndef NEURON_RTD_DAEMON_HAL_SIM_INTERNAL_ATEN_CALL_H_
#define NEURON_RTD_DAEMON_HAL_SIM_INTERNAL_ATEN_CALL_H_

#include <ATen/core/Tensor.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "daemon/hal/eager_op.h"
#include "daemon/hal/graph.h"
#include "daemon/hal/sim/hbm_arena.h"

namespace neuron::rtd::hal::sim::internal {

// Where the call's tensor arguments live: an eager op's are at launch
// addresses (`bindings`), a graph node's are the graph's `values`.
enum class ArgumentSource { kLaunchAddresses, kGraphValues };

// An operator checked against a given argument list. Immutable after
// preparation; shared by every launch.
struct PreparedCall {
  c10::OperatorHandle op;
  std::string qualified;  // "aten::add.out", for messages
  // Per argument: a None that stands for an undefined Tensor (an incoming
  // gradient autograd did not compute), not for an absent optional.
  std::vector<bool> none_is_undefined_tensor;
  // The schema's defaults for arguments after the last one given.
  std::vector<c10::IValue> trailing_defaults;
};

// Resolves "name.overload" and checks `arguments` against its schema: the
// count (missing trailing arguments need defaults), each value's kind
// against the declared type (tensors as `source` provides them), each
// immediate's kind. INVALID_ARGUMENT naming the operator and argument.
absl::StatusOr<PreparedCall> PrepareCall(const std::string& name, const std::string& overload,
                                         const std::vector<OpValue>& arguments,
                                         ArgumentSource source);

// What a launch provides for building a call's stack.
struct LaunchInputs {
  HbmArena& arena;
  std::span<const uint64_t> bindings;
  std::span<const uint8_t> immediates;
  // The graph's values so far (ArgumentSource::kGraphValues).
  std::span<const at::Tensor> values;
};

// Pushes the call's arguments (then the trailing defaults) onto `stack`.
absl::Status PushArguments(const PreparedCall& call, const std::vector<OpValue>& arguments,
                           const LaunchInputs& inputs, torch::jit::Stack& stack);

// A CPU tensor over the HBM at `bindings[layout.address_index]`.
absl::StatusOr<at::Tensor> WrapLayout(HbmArena& arena, const TensorLayout& layout,
                                      std::span<const uint64_t> bindings);

// The uint64 at `offset` of the launch's immediates.
absl::StatusOr<uint64_t> ReadSeed(std::span<const uint8_t> immediates, uint32_t offset);

// Runs `body` with the default CPU generator (which random operators
// without a Generator argument draw from) seeded with `seed`, serialized
// with every other seeded run: one generator serves every core's worker.
void WithSeededDefaultGenerator(uint64_t seed, const std::function<void()>& body);

// The tensors an operator returned, lists flattened; an undefined tensor
// (or a None) stays in its place as an undefined tensor.
std::vector<at::Tensor> FlattenResults(const torch::jit::Stack& stack);

// An operator's own error: `message` with kOperatorErrorTypePayload set to
// the Python exception type PyTorch raises for `error`; RESOURCE_EXHAUSTED
// for an allocation past the launch's host budget, else INVALID_ARGUMENT.
absl::Status OperatorError(const c10::Error& error, const std::string& message);
// An exception that is not a c10::Error, as a RuntimeError.
absl::Status OperatorError(const std::exception& error, const std::string& message);

}  // namespace neuron::rtd::hal::sim::internal

#endif  // NEURON_RTD_DAEMON_HAL_SIM_INTERNAL_ATEN_CALL_H_
