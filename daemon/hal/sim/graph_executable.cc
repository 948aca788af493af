#include "daemon/hal/sim/graph_executable.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/InferenceMode.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "daemon/hal/sim/compiled_package.h"
#include "daemon/hal/sim/internal/aten_call.h"
#include "daemon/hal/sim/internal/index_guards.h"
#include "daemon/hal/sim/internal/nki_graph_call.h"
#include "daemon/hal/sim/launch_host_budget.h"
#include "daemon/hal/sim/launch_parallelism.h"

namespace neuron::rtd::hal::sim {
namespace {

// An expanded output (a stride-0 dimension, as expand() makes it) as the
// graph writes it: size 1 along those dimensions, so that no element is
// written twice (copy_ refuses such writes). The compiler worker compiles
// graphs for destinations of this shape (neuron_compile_worker.py).
at::Tensor CollapseExpandedDims(at::Tensor tensor) {
  for (int64_t d = 0; d < tensor.dim(); ++d) {
    if (tensor.stride(d) == 0 && tensor.size(d) > 1) tensor = tensor.narrow(d, 0, 1);
  }
  return tensor;
}

using internal::ArgumentSource;
using internal::PreparedCall;

struct PreparedNode {
  // An ATen operator, or an NKI kernel (kNkiCallNode).
  std::optional<PreparedCall> call;
  std::optional<internal::NkiGraphCall> nki_call;
  // Its first value's number; it adds `result_count` values.
  uint32_t first_value = 0;
  uint32_t result_count = 0;
  // Values no later node or output reads: dropped once this node has run,
  // so that the graph's temporaries do not all live to its end.
  std::vector<uint32_t> last_used_here;
};

// Which tier a graph runs on; shared with the compiler's callback, which
// may outlive the executable.
struct Tier {
  std::atomic<uint64_t> launches{0};
  std::atomic<bool> requested{false};
  std::atomic<std::shared_ptr<const CompiledPackage>> compiled;
  absl::Mutex mutex;
  std::string failure ABSL_GUARDED_BY(mutex);
  double compile_seconds ABSL_GUARDED_BY(mutex) = 0;
};

class GraphExecutable final : public SimExecutable {
 public:
  GraphExecutable(GraphPlan spec, GraphCompiler* graph_compiler)
      : plan(std::move(spec)), compiler(graph_compiler) {}

  absl::Status Run(HbmArena& arena, std::span<const uint64_t> bindings,
                   std::span<const uint8_t> immediates,
                   const LaunchSettings& settings) const override;
  ExecutableStatus status() const override;

  const GraphPlan plan;
  std::vector<PreparedNode> nodes;
  uint32_t value_count = 0;
  GraphCompiler* const compiler;
  const std::shared_ptr<Tier> tier = std::make_shared<Tier>();
  // Per tier: the compiled code's launches are shorter than the interpreter's.
  mutable LaunchParallelism interpreted_parallelism;
  mutable LaunchParallelism compiled_parallelism;

  // Loads the package into `tier` (the compiler's thread, or preparation).
  static void Adopt(Tier& tier, const absl::StatusOr<GraphCompiler::Package>& package);

 private:
  absl::Status Interpret(HbmArena& arena, std::span<const uint64_t> bindings,
                         std::span<const uint8_t> immediates) const;
  absl::Status RunCompiled(const CompiledPackage& package, HbmArena& arena,
                           std::span<const uint64_t> bindings) const;
  void CountLaunch() const;
  std::string Where(size_t node) const {
    const PreparedNode& prepared = nodes[node];
    return absl::StrFormat(
        "graph '%s' node %d (%s)", plan.name, node,
        prepared.call ? prepared.call->qualified
                      : "NKI kernel '" + plan.nki_kernels[prepared.nki_call->kernel].name + "'");
  }
  absl::Status RunNkiNode(size_t n, std::vector<at::Tensor>& values) const;
};

// The values a node's arguments read.
void ForEachValue(const OpValue& argument, const std::function<void(uint32_t)>& visit) {
  if (const auto* value = std::get_if<GraphValue>(&argument)) {
    visit(value->id);
  } else if (const auto* values = std::get_if<GraphValues>(&argument)) {
    for (GraphValue each : *values) visit(each.id);
  } else if (const auto* optional = std::get_if<OptionalGraphValues>(&argument)) {
    for (const std::optional<GraphValue>& each : *optional) {
      if (each) visit(each->id);
    }
  }
}

absl::Status CheckReturns(const PreparedCall& call, const GraphNode& node) {
  const std::vector<c10::Argument>& returns = call.op.schema().returns();
  if (returns.size() != node.return_lengths.size()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "returns %d values; the node declares %d", returns.size(), node.return_lengths.size()));
  }
  for (size_t r = 0; r < returns.size(); ++r) {
    c10::TypePtr type = returns[r].real_type();
    if (const auto optional = type->cast<c10::OptionalType>()) type = optional->getElementType();
    const bool tensor = type->kind() == c10::TypeKind::TensorType;
    const bool tensor_list =
        type->kind() == c10::TypeKind::ListType &&
        type->castRaw<c10::ListType>()->getElementType()->kind() == c10::TypeKind::TensorType;
    if (!tensor && !tensor_list) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "return %d is a %s; a graph's values are tensors", r, returns[r].type()->str()));
    }
    if (tensor != (node.return_lengths[r] == kTensorReturn)) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "return %d is a %s; the node declares %s", r, returns[r].type()->str(),
          node.return_lengths[r] == kTensorReturn
              ? std::string("a Tensor")
              : absl::StrFormat("a list of %d", node.return_lengths[r])));
    }
  }
  return absl::OkStatus();
}

absl::Status GraphExecutable::Interpret(HbmArena& arena, std::span<const uint64_t> bindings,
                                        std::span<const uint8_t> immediates) const {
  std::vector<at::Tensor> values(value_count);
  for (size_t i = 0; i < plan.inputs.size(); ++i) {
    absl::StatusOr<at::Tensor> input = internal::WrapLayout(arena, plan.inputs[i], bindings);
    if (!input.ok()) return input.status();
    values[i] = *std::move(input);
  }
  const internal::LaunchInputs inputs{
      .arena = arena, .bindings = bindings, .immediates = immediates, .values = values};
  torch::jit::Stack stack;
  for (size_t n = 0; n < nodes.size(); ++n) {
    const PreparedNode& node = nodes[n];
    if (node.nki_call) {
      if (absl::Status ran = RunNkiNode(n, values); !ran.ok()) return ran;
      for (uint32_t id : node.last_used_here) values[id] = at::Tensor();
      continue;
    }
    stack.clear();
    if (absl::Status pushed =
            internal::PushArguments(*node.call, plan.nodes[n].arguments, inputs, stack);
        !pushed.ok()) {
      return absl::Status(pushed.code(), absl::StrFormat("%s: %s", Where(n), pushed.message()));
    }
    try {
      internal::CheckUncheckedIndices(node.call->qualified, stack);
      node.call->op.callBoxed(stack);
    } catch (const c10::Error& error) {
      return internal::OperatorError(
          error, absl::StrFormat("%s: %s", Where(n), error.what_without_backtrace()));
    } catch (const std::exception& error) {
      return internal::OperatorError(error, absl::StrFormat("%s: %s", Where(n), error.what()));
    }
    std::vector<at::Tensor> results = internal::FlattenResults(stack);
    if (results.size() != node.result_count) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s returned %d tensors; the graph expects %d", Where(n), results.size(),
          node.result_count));
    }
    for (uint32_t r = 0; r < node.result_count; ++r) {
      values[node.first_value + r] = std::move(results[r]);
    }
    for (uint32_t id : node.last_used_here) values[id] = at::Tensor();
  }
  for (size_t i = 0; i < plan.outputs.size(); ++i) {
    const GraphOutput& output = plan.outputs[i];
    absl::StatusOr<at::Tensor> destination =
        internal::WrapLayout(arena, output.destination, bindings);
    if (!destination.ok()) return destination.status();
    const at::Tensor& result = values[output.value.id];
    if (!result.defined()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "graph '%s' output %d (value %d) is undefined", plan.name, i, output.value.id));
    }
    if (!destination->sizes().equals(result.sizes())) {
      // A placeholder result that PyTorch's meta kernels (which planned the
      // graph) and ATen's CPU kernels (which run it) size apart, one of
      // them empty: embedding_bag's maximum indices outside max mode, batch
      // norm's saved statistics in inference. It carries nothing either
      // way; eager mode matches the two for single operators.
      if (destination->numel() == 0) continue;
      if (result.numel() == 0) {
        destination->zero_();
        continue;
      }
      return absl::InvalidArgumentError(absl::StrFormat(
          "graph '%s' output %d has sizes %s; the executable expects %s", plan.name, i,
          c10::str(result.sizes()), c10::str(destination->sizes())));
    }
    // An expanded output holds one element along its expanded dimensions:
    // written once, not once per index.
    at::Tensor value = result;
    for (int64_t d = 0; d < destination->dim(); ++d) {
      if (destination->stride(d) == 0 && destination->size(d) > 1) value = value.narrow(d, 0, 1);
    }
    CollapseExpandedDims(*destination).copy_(value);
  }
  return absl::OkStatus();
}

absl::Status GraphExecutable::RunNkiNode(size_t n, std::vector<at::Tensor>& values) const {
  const PreparedNode& node = nodes[n];
  std::vector<at::Tensor> arguments;
  for (GraphValue value : std::get<GraphValues>(plan.nodes[n].arguments[1])) {
    arguments.push_back(values[value.id]);
  }
  absl::StatusOr<std::vector<at::Tensor>> results =
      internal::RunNkiGraphCall(plan, *node.nki_call, arguments);
  if (!results.ok()) {
    absl::Status status(results.status().code(),
                        absl::StrFormat("%s: %s", Where(n), results.status().message()));
    status.SetPayload(kOperatorErrorTypePayload, absl::Cord("ValueError"));
    return status;
  }
  for (uint32_t r = 0; r < node.result_count; ++r) {
    values[node.first_value + r] = std::move((*results)[r]);
  }
  return absl::OkStatus();
}

absl::Status GraphExecutable::RunCompiled(const CompiledPackage& package, HbmArena& arena,
                                          std::span<const uint64_t> bindings) const {
  std::vector<at::Tensor> tensors;
  tensors.reserve(plan.inputs.size() + plan.outputs.size());
  for (const TensorLayout& input : plan.inputs) {
    absl::StatusOr<at::Tensor> tensor = internal::WrapLayout(arena, input, bindings);
    if (!tensor.ok()) return tensor.status();
    tensors.push_back(*std::move(tensor));
  }
  for (const GraphOutput& output : plan.outputs) {
    absl::StatusOr<at::Tensor> tensor = internal::WrapLayout(arena, output.destination, bindings);
    if (!tensor.ok()) return tensor.status();
    tensors.push_back(CollapseExpandedDims(*std::move(tensor)));
  }
  try {
    package.Run(std::move(tensors));
  } catch (const c10::Error& error) {
    return internal::OperatorError(
        error, absl::StrFormat("graph '%s' (compiled): %s", plan.name,
                               error.what_without_backtrace()));
  } catch (const std::exception& error) {
    return internal::OperatorError(
        error, absl::StrFormat("graph '%s' (compiled): %s", plan.name, error.what()));
  }
  return absl::OkStatus();
}

void GraphExecutable::Adopt(Tier& tier,
                            const absl::StatusOr<GraphCompiler::Package>& package) {
  absl::StatusOr<std::unique_ptr<CompiledPackage>> loaded =
      package.ok() ? CompiledPackage::Load(package->path)
                   : absl::StatusOr<std::unique_ptr<CompiledPackage>>(package.status());
  absl::MutexLock lock(&tier.mutex);
  if (!loaded.ok()) {
    tier.failure = std::string(loaded.status().message());
    return;
  }
  tier.compile_seconds = package->compile_seconds;
  tier.compiled.store(std::shared_ptr<const CompiledPackage>(*std::move(loaded)));
}

void GraphExecutable::CountLaunch() const {
  const uint64_t launches = tier->launches.fetch_add(1, std::memory_order_relaxed) + 1;
  // The compiler takes ATen graphs; NKI kernels stay with the interpreter.
  if (compiler == nullptr || !plan.nki_kernels.empty()) return;
  const uint64_t threshold = compiler->compile_after_launches();
  if (threshold == 0 || launches < threshold || tier->requested.exchange(true)) return;
  compiler->Request(plan, [weak = std::weak_ptr<Tier>(tier)](
                              absl::StatusOr<GraphCompiler::Package> package) {
    if (std::shared_ptr<Tier> alive = weak.lock()) Adopt(*alive, package);
  });
}

ExecutableStatus GraphExecutable::status() const {
  ExecutableStatus status{.launches = tier->launches.load(std::memory_order_relaxed)};
  const bool compiled = tier->compiled.load() != nullptr;
  status.tier = compiled ? 1 : 0;
  status.host_threads =
      (compiled ? compiled_parallelism : interpreted_parallelism).host_threads();
  absl::MutexLock lock(&tier->mutex);
  status.compile_seconds = tier->compile_seconds;
  if (compiled) {
    status.compile_state = "compiled";
  } else if (!tier->failure.empty()) {
    status.compile_state = "interpreted (" + tier->failure.substr(0, 200) + ")";
  } else if (tier->requested.load()) {
    status.compile_state = "compiling";
  } else if (!plan.nki_kernels.empty()) {
    status.compile_state = "interpreted (NKI kernels are not compiled)";
  } else {
    status.compile_state = "interpreted";
  }
  return status;
}

absl::Status GraphExecutable::Run(HbmArena& arena, std::span<const uint64_t> bindings,
                                  std::span<const uint8_t> immediates,
                                  const LaunchSettings& settings) const {
  const std::shared_ptr<const CompiledPackage> compiled = tier->compiled.load();
  absl::Status status;
  LaunchParallelism& parallelism =
      compiled != nullptr ? compiled_parallelism : interpreted_parallelism;
  parallelism.Run(
      settings.parallel_min_ns,
      [&] {
        try {
          LaunchHostBudget budget(settings.max_host_bytes);
          // The sim runs the CPU kernels themselves: no autograd, no views kept.
          c10::InferenceMode inference;
          auto run = [&] {
            status = compiled != nullptr ? RunCompiled(*compiled, arena, bindings)
                                         : Interpret(arena, bindings, immediates);
          };
          if (plan.generator) {
            absl::StatusOr<uint64_t> seed =
                internal::ReadSeed(immediates, plan.generator->offset);
            if (!seed.ok()) {
              status = seed.status();
              return;
            }
            internal::WithSeededDefaultGenerator(*seed, run);
          } else {
            run();
          }
        } catch (const c10::Error& error) {
          // Copying an output or freeing a value can still throw (out of memory).
          status = internal::OperatorError(
              error, absl::StrFormat("graph '%s': %s", plan.name, error.what_without_backtrace()));
        }
      });
  if (compiled == nullptr) CountLaunch();
  else tier->launches.fetch_add(1, std::memory_order_relaxed);
  return status;
}

}  // namespace

absl::StatusOr<std::unique_ptr<SimExecutable>> PrepareGraphExecutable(
    const GraphPlan& plan, GraphCompiler* compiler) {
  auto executable = std::make_unique<GraphExecutable>(plan, compiler);
  uint64_t values = plan.inputs.size();
  for (size_t n = 0; n < plan.nodes.size(); ++n) {
    const GraphNode& node = plan.nodes[n];
    auto refuse = [&](const absl::Status& why) {
      return absl::InvalidArgumentError(
          absl::StrFormat("graph '%s' node %d: %s", plan.name, n, why.message()));
    };
    const uint64_t count = NodeResultCount(node);
    if (node.name == kNkiCallNode) {
      absl::StatusOr<internal::NkiGraphCall> nki_call = internal::PrepareNkiGraphCall(plan, node);
      if (!nki_call.ok()) return refuse(nki_call.status());
      executable->nodes.push_back(PreparedNode{.call = std::nullopt,
                                               .nki_call = *std::move(nki_call),
                                               .first_value = static_cast<uint32_t>(values),
                                               .result_count = static_cast<uint32_t>(count)});
      values += count;
      continue;
    }
    absl::StatusOr<PreparedCall> call =
        internal::PrepareCall(node.name, node.overload, node.arguments,
                              ArgumentSource::kGraphValues);
    if (!call.ok()) return refuse(call.status());
    if (absl::Status returns = CheckReturns(*call, node); !returns.ok()) {
      return refuse(absl::InvalidArgumentError(
          absl::StrFormat("%s %s", call->qualified, returns.message())));
    }
    if (call->op.hasTag(at::Tag::nondeterministic_seeded) && !plan.generator) {
      return refuse(absl::InvalidArgumentError(absl::StrFormat(
          "%s is random and the graph has no generator seed", call->qualified)));
    }
    executable->nodes.push_back(PreparedNode{.call = *std::move(call),
                                             .nki_call = std::nullopt,
                                             .first_value = static_cast<uint32_t>(values),
                                             .result_count = static_cast<uint32_t>(count)});
    values += count;
  }
  executable->value_count = static_cast<uint32_t>(values);
  // Each value's last reader: a node, or the outputs (never dropped).
  constexpr int64_t kReadByOutputs = -2;
  constexpr int64_t kNeverRead = -1;
  std::vector<int64_t> last_reader(values, kNeverRead);
  for (size_t n = 0; n < plan.nodes.size(); ++n) {
    for (const OpValue& argument : plan.nodes[n].arguments) {
      ForEachValue(argument, [&](uint32_t id) { last_reader[id] = static_cast<int64_t>(n); });
    }
  }
  for (const GraphOutput& output : plan.outputs) last_reader[output.value.id] = kReadByOutputs;
  for (size_t n = 0; n < executable->nodes.size(); ++n) {
    PreparedNode& node = executable->nodes[n];
    // A result nothing reads goes as soon as its node has run.
    for (uint32_t r = 0; r < node.result_count; ++r) {
      if (last_reader[node.first_value + r] == kNeverRead) node.last_used_here.push_back(node.first_value + r);
    }
  }
  for (uint64_t id = 0; id < values; ++id) {
    if (last_reader[id] >= 0) executable->nodes[last_reader[id]].last_used_here.push_back(id);
  }
  // Compiled before (by this daemon or an earlier one): tier 1 at once.
  if (compiler != nullptr && compiler->compile_after_launches() > 0 && plan.nki_kernels.empty()) {
    if (std::optional<GraphCompiler::Package> cached = compiler->Cached(plan)) {
      executable->tier->requested.store(true);
      GraphExecutable::Adopt(*executable->tier, *cached);
    }
  }
  return executable;
}

}  // namespace neuron::rtd::hal::sim
