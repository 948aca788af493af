#include "csrc/aten/GenericOp.h"

#include <ATen/core/Tensor.h>
#include <ATen/native/CPUFallback.h>
#include <ATen/ops/as_strided_native.h>
#include <ATen/ops/empty.h>
#include <ATen/EmptyTensor.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <optional>
#include <set>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "csrc/aten/DeviceResultDtypes.h"
#include "csrc/aten/internal/CallWalker.h"
#include "csrc/aten/internal/CpuChecks.h"
#include "csrc/aten/internal/DefaultDtype.h"
#include "csrc/aten/internal/LongLists.h"
#include "csrc/aten/internal/MetaTensors.h"
#include "csrc/aten/internal/OpInfo.h"
#include "csrc/runtime/NeuronAllocator.h"
#include "csrc/runtime/NeuronFunctions.h"
#include "csrc/runtime/NeuronGenerator.h"
#include "neuron/rtd/eager_op.h"

namespace torch_neuronx {
namespace {

namespace rtd = neuron::rtd;
using torch::jit::Stack;

// Room below NEURON_RTD_MAX_LAUNCH_ARGS and the 4 KiB record bound; larger
// calls are split (LongLists.h) or run on the CPU.
constexpr internal::LaunchSize kLaunchLimit{.addresses = 192, .scalar_bytes = 1024};

using internal::AppendRaw;
using internal::CallDevice;
using internal::CallWalker;
using internal::CheckForeachAsTheCpuDoes;
using internal::CheckNumbersAsTheCpuDoes;
using internal::CheckOverlapAsTheCpuDoes;
using internal::DefaultDtypeIsNotDaemons;
using internal::InfoFor;
using internal::LaunchInSlices;
using internal::MetaOutcome;
using internal::MoveCpuScalarsAndIndices;
using internal::OpInfo;
using internal::PromoteIntegerInputsToDefaultDtype;
using internal::RunMeta;
using internal::ToMetaStack;

absl::Mutex registry_mutex(absl::kConstInit);

std::set<std::string>& FallbackSet() ABSL_EXCLUSIVE_LOCKS_REQUIRED(registry_mutex) {
  static auto* names = new std::set<std::string>();
  return *names;
}

std::atomic<uint64_t> executables_loaded{0};
std::atomic<uint64_t> launches{0};
std::atomic<uint64_t> plan_hits{0};
std::atomic<uint64_t> cpu_fallbacks{0};

struct OutputSpec {
  // False for a result the operator leaves undefined (a backward whose
  // output_mask skips it): nothing is allocated for it.
  bool defined = true;
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
  at::ScalarType dtype = at::kFloat;
};

// What one signature compiles to.
struct Plan {
  uint64_t executable_id = 0;
  // Outputs to allocate, in return order (new tensors only).
  std::vector<OutputSpec> outputs;
  // Per return of a functional operator returning Tensor[]: how many of the
  // outputs it takes.
  std::vector<size_t> list_lengths;
  bool uses_out_variant = false;
  // How many of the signature's next launches are waited for, because one
  // of its waited launches failed (see LaunchArguments). The only mutable
  // part of a plan.
  mutable std::atomic<uint32_t> launches_to_wait{0};
};

// After a waited launch of a signature fails (an index out of range, ...),
// its next launches are waited for too, so that a program that caught the
// error and goes on gets the next one at its call as well, not at a later
// unrelated sync. Bounded, so that a loop that keeps going after one error
// is not slowed for good.
constexpr uint32_t kWaitedLaunchesAfterAnError = 32;

absl::Mutex plan_mutex(absl::kConstInit);
absl::flat_hash_map<std::string, std::shared_ptr<const Plan>>& Plans()
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(plan_mutex) {
  static auto* plans = new absl::flat_hash_map<std::string, std::shared_ptr<const Plan>>();
  return *plans;
}


void RunOnCpu(const c10::OperatorHandle& op, const OpInfo& info, Stack* stack,
              const std::string& reason) {
  NoteCpuFallback(info.qualified, reason);
  at::native::cpu_fallback(op, stack);
}

// Why a call's arguments cannot be an executable's, or nullopt: a tensor with
// more dimensions than an executable's tensors may have (PyTorch's tensors
// may; its reductions refuse them, which the CPU's kernels then say), or a
// scalar list that mixes kinds of numbers (an executable's lists have one
// kind, and converting them would change the result dtypes of some tensors),
// or an unsigned integer past int64's range (an executable's integers are
// int64).
std::optional<std::string> WhyNotAnExecutable(c10::ArrayRef<c10::IValue> arguments) {
  auto past_rank = [](const at::Tensor& tensor) {
    return tensor.defined() && tensor.dim() > neuron::rtd::kMaxTensorDims;
  };
  for (const c10::IValue& value : arguments) {
    if (value.isUnsigned() && !value.isInt()) {  // an int64 holds the others
      return std::string("an unsigned integer argument is past int64's range, the integers an "
                         "executable takes");
    }
    bool too_many_dims = value.isTensor() && past_rank(value.toTensor());
    if (value.isTensorList()) {
      const c10::List<at::Tensor> list = value.toTensorList();
      for (size_t i = 0; i < list.size(); ++i) too_many_dims |= past_rank(list.get(i));
    }
    if (too_many_dims) {
      return absl::StrFormat("a tensor has more than %d dimensions, the most an executable's take",
                             neuron::rtd::kMaxTensorDims);
    }
    if (value.isList() && !value.toListRef().empty() && value.toListRef()[0].isScalar()) {
      auto kind = [](const c10::IValue& item) {
        return item.isInt() ? 0 : item.isDouble() ? 1 : item.isComplexDouble() ? 2 : 3;
      };
      const auto& items = value.toListRef();
      const bool mixed = std::any_of(items.begin(), items.end(), [&](const c10::IValue& item) {
        return kind(item) != kind(items[0]);
      });
      if (mixed) {
        return std::string("a scalar list mixes kinds of numbers (ints, floats, complex, bools)");
      }
    }
  }
  return std::nullopt;
}

// Metadata only: the view's sizes, strides and offset from the meta kernel,
// applied to the real tensor's storage.
void RunView(const c10::OperatorHandle& op, const OpInfo& info, Stack* stack) {
  const size_t argument_count = op.schema().arguments().size();
  Stack arguments(stack->end() - argument_count, stack->end());
  Stack meta = ToMetaStack(arguments, /*keep_offset=*/true);
  if (RunMeta(op, meta) != MetaOutcome::kOk) {
    RunOnCpu(op, info, stack, "no meta kernel infers this view");
    return;
  }
  const at::Tensor& base = arguments[0].toTensor();
  torch::jit::drop(*stack, argument_count);
  auto view_of = [&](const at::Tensor& shape) {
    if (shape.scalar_type() == base.scalar_type()) {
      return at::native::as_strided_tensorimpl(base, shape.sizes(), shape.strides(),
                                               shape.storage_offset());
    }
    // A view that reads its base's bytes as another dtype (view_as_real,
    // view_as_complex, view(dtype)): its sizes, strides and offset count
    // elements of that dtype.
    at::Tensor view = at::detail::make_tensor<c10::TensorImpl>(
        c10::TensorImpl::VIEW, c10::Storage(base.storage()), base.key_set(), shape.dtype());
    view.unsafeGetTensorImpl()->set_sizes_and_strides(shape.sizes(), shape.strides(),
                                                      shape.storage_offset());
    return view;
  };
  for (const c10::IValue& result : meta) {
    if (result.isTensor()) {
      stack->emplace_back(view_of(result.toTensor()));
    } else {
      std::vector<at::Tensor> views;
      for (const at::Tensor& shape : result.toTensorVector()) views.push_back(view_of(shape));
      stack->emplace_back(std::move(views));
    }
  }
}

// Builds the plan of a signature: meta inference, then the executable.
// nullptr when meta inference fails (`*meta_outcome` says how).
std::shared_ptr<const Plan> BuildPlan(const c10::OperatorHandle& op, const OpInfo& info,
                                      c10::DeviceIndex device, Stack& arguments, bool run_meta,
                                      bool* resized, MetaOutcome* meta_outcome) {
  auto plan = std::make_shared<Plan>();
  const c10::FunctionSchema& schema = op.schema();
  Stack meta;
  if (run_meta) {
    CheckForeachAsTheCpuDoes(op, arguments);
    meta = ToMetaStack(arguments, /*keep_offset=*/false);
    if (info.out_keeps_shape_of_right_count) {
      // An empty out= tensor: the meta kernel resizes it silently, to the
      // count compared below.
      for (int argument : info.return_argument) {
        if (argument >= 0) meta[argument] = at::empty({0}, meta[argument].toTensor().options());
      }
    }
    *meta_outcome = RunMeta(op, meta);
    if (*meta_outcome != MetaOutcome::kOk) return nullptr;
    MatchDeviceResultDtypes(op, arguments, meta);
  } else {
    TORCH_CHECK(!info.returns_new, info.qualified,
                ": only operators that write their arguments run without meta inference");
    for (size_t r = 0; r < schema.returns().size(); ++r) {
      meta.push_back(arguments[info.return_argument[r]]);
    }
  }
  // out= arguments the operator resized: resize the real ones, and the
  // caller walks again (layouts changed).
  for (size_t r = 0; r < schema.returns().size(); ++r) {
    const int argument = info.return_argument[r];
    if (argument < 0 || !arguments[argument].isTensor()) continue;
    at::Tensor real = arguments[argument].toTensor();
    const at::Tensor& shaped = meta[r].toTensor();
    if (info.out_keeps_shape_of_right_count && real.numel() == shaped.numel()) continue;
    if (info.out_keeps_shape_of_right_count && real.numel() > 0 &&
        schema.name() == "aten::arange") {
      // The CPU's and CUDA's arange say so (a step that does not divide the
      // range exactly); linspace and logspace resize silently.
      TORCH_WARN("The number of elements in the out tensor of shape ", real.sizes(), " is ",
                 real.numel(), " which does not match the computed number of elements ",
                 shaped.numel(), ". Note that this may occur as a result of rounding error. "
                 "The out tensor will be resized to a tensor of shape (", shaped.numel(), ",).");
    }
    if (!real.sizes().equals(shaped.sizes())) {
      real.resize_(shaped.sizes());
      // Strided as the operator made it (a TensorIterator's output follows
      // its inputs' memory layout), as the CPU's kernels restride the out=
      // tensors they resize.
      if (!real.strides().equals(shaped.strides())) {
        real.as_strided_(shaped.sizes(), shaped.strides());
      }
      *resized = true;
    }
  }
  if (*resized) return nullptr;
  for (size_t r = 0; r < schema.returns().size(); ++r) {
    if (info.return_argument[r] >= 0) continue;
    auto add_output = [&](const at::Tensor& shaped) {
      if (!shaped.defined()) {
        plan->outputs.push_back(OutputSpec{.defined = false});
        return;
      }
      plan->outputs.push_back(OutputSpec{.sizes = shaped.sizes().vec(),
                                         .strides = shaped.strides().vec(),
                                         .dtype = shaped.scalar_type()});
    };
    if (meta[r].isNone()) {
      add_output(at::Tensor());
      plan->list_lengths.push_back(0);
    } else if (meta[r].isTensor()) {
      add_output(meta[r].toTensor());
      plan->list_lengths.push_back(0);
    } else {
      const std::vector<at::Tensor> shaped = meta[r].toTensorVector();
      for (const at::Tensor& each : shaped) add_output(each);
      plan->list_lengths.push_back(shaped.size());
    }
  }
  rtd::EagerOpPlan executable;
  CallWalker walker(info, device, &executable.arguments);
  walker.Walk(arguments);
  uint32_t next_address = static_cast<uint32_t>(walker.addresses.size());
  auto output_layout = [&](const OutputSpec& spec) {
    return rtd::TensorLayout{.dtype = static_cast<int32_t>(spec.dtype),
                             .sizes = spec.sizes,
                             .strides = spec.strides,
                             .address_index = next_address++};
  };
  const c10::OperatorHandle* launched = &op;
  if (info.functional_variant) {
    launched = &*info.functional_variant;
    std::vector<rtd::OpValue> inputs;
    for (size_t i = 0; i < executable.arguments.size(); ++i) {
      if (std::find(info.out_positions.begin(), info.out_positions.end(), i) !=
          info.out_positions.end()) {
        executable.outputs.push_back(std::get<rtd::TensorLayout>(executable.arguments[i]));
      } else {
        inputs.push_back(std::move(executable.arguments[i]));
      }
    }
    executable.arguments = std::move(inputs);
  } else if (info.out_variant && !plan->outputs.empty() &&
             std::all_of(plan->outputs.begin(), plan->outputs.end(),
                         [](const OutputSpec& spec) { return spec.defined; })) {
    plan->uses_out_variant = true;
    launched = &*info.out_variant;
    size_t next = 0;
    for (size_t r = 0; r < schema.returns().size(); ++r) {
      if (schema.returns()[r].type()->kind() == c10::TypeKind::TensorType) {
        executable.arguments.emplace_back(output_layout(plan->outputs[next++]));
        continue;
      }
      std::vector<rtd::TensorLayout> list;
      for (size_t k = 0; k < plan->list_lengths[r]; ++k) {
        list.push_back(output_layout(plan->outputs[next++]));
      }
      executable.arguments.emplace_back(std::move(list));
    }
  } else {
    for (size_t i = 0; i < plan->outputs.size(); ++i) {
      if (plan->outputs[i].defined) {
        executable.outputs.push_back(output_layout(plan->outputs[i]));
      } else {
        executable.undefined_results.push_back(static_cast<uint32_t>(i));
      }
    }
  }
  executable.name = launched->schema().name();
  executable.overload = launched->schema().overload_name();
  if (info.seeds_default_generator) {
    executable.default_generator = rtd::GeneratorSeed{.offset = static_cast<uint32_t>(walker.scalars.size())};
  }
  absl::StatusOr<uint64_t> id = GetRuntime().session().LoadEagerOp(executable, info.qualified);
  // A full executable cache is not device memory: no OutOfMemoryError.
  TORCH_CHECK(id.status().code() != absl::StatusCode::kResourceExhausted, "loading ",
              info.qualified, " into neuron-rtd: ", std::string(id.status().message()),
              ". Every distinct operator signature (dtypes, shapes, strides) is an executable "
              "this process holds until it exits; programs whose shapes change on every step "
              "fill the cache or the user's quota (pad or bucket them)");
  ThrowIfError(id.status(), absl::StrFormat("loading %s into neuron-rtd", info.qualified));
  plan->executable_id = *id;
  executables_loaded.fetch_add(1, std::memory_order_relaxed);
  return plan;
}

// How LaunchArguments ended: launched, or the call needs what only the boxed
// path does (split into several launches; run on the CPU).
enum class LaunchOutcome { kLaunched, kTooManyTensors, kNoMetaInference };

struct LaunchedCall {
  LaunchOutcome outcome = LaunchOutcome::kLaunched;
  std::shared_ptr<const Plan> plan;
  // The new outputs, in the plan's order (undefined where the operator
  // leaves a result undefined).
  std::vector<at::Tensor> outputs;
  // What the call takes of a LAUNCH.
  internal::LaunchSize size;
  // Why meta inference failed (kNoMetaInference).
  MetaOutcome meta_outcome = MetaOutcome::kOk;
};

// Launches a call whose tensors are all on `device` (the current device).
// `arguments` is read, never copied: its tensors may be borrowed from the
// caller (UnboxedOps.cc), and a C++ copy of a tensor Python holds costs a GIL
// round trip. Only out= arguments the operator resizes are changed.
LaunchedCall LaunchArguments(const c10::OperatorHandle& op, const OpInfo& info,
                             c10::DeviceIndex device, Stack& arguments, bool run_meta) {
  LaunchedCall call;
  std::vector<uint64_t> seeds;
  for (;;) {
    CallWalker walker(info, device, nullptr, &seeds);
    walker.Walk(arguments);
    call.size = {.addresses = walker.addresses.size(), .scalar_bytes = walker.scalars.size()};
    if (call.size.addresses > kLaunchLimit.addresses ||
        call.size.scalar_bytes > kLaunchLimit.scalar_bytes) {
      call.outcome = LaunchOutcome::kTooManyTensors;
      return call;
    }
    AppendRaw(walker.key, &info);
    {
      absl::MutexLock lock(&plan_mutex);
      if (auto it = Plans().find(walker.key); it != Plans().end()) call.plan = it->second;
    }
    const bool new_signature = call.plan == nullptr;
    if (!new_signature) {
      plan_hits.fetch_add(1, std::memory_order_relaxed);
    } else {
      bool resized = false;
      call.plan = BuildPlan(op, info, device, arguments, run_meta, &resized, &call.meta_outcome);
      // Outputs took new shapes: their layouts are part of the signature.
      if (resized) continue;
      if (call.plan == nullptr) {
        call.outcome = LaunchOutcome::kNoMetaInference;
        return call;
      }
      absl::MutexLock lock(&plan_mutex);
      Plans().emplace(walker.key, call.plan);
    }
    const Plan& plan = *call.plan;
    call.outputs.reserve(plan.outputs.size());
    for (const OutputSpec& spec : plan.outputs) {
      if (!spec.defined) {
        call.outputs.emplace_back();
        continue;
      }
      // Straight from the allocator: the current device is `device`.
      call.outputs.push_back(at::detail::empty_strided_generic(
          spec.sizes, spec.strides, &NeuronAllocator(),
          c10::DispatchKeySet(c10::DispatchKey::PrivateUse1), spec.dtype));
      walker.addresses.push_back(reinterpret_cast<uint64_t>(call.outputs.back().data_ptr()));
    }
    if (info.seeds_default_generator) {
      const uint64_t seed = DefaultGenerator(device).get<NeuronGenerator>()->NextCallSeed();
      const auto* bytes = reinterpret_cast<const uint8_t*>(&seed);
      walker.scalars.insert(walker.scalars.end(), bytes, bytes + 8);
    }
    neuronrt::Stream& stream = RuntimeStream(CurrentStream(device));
    ThrowIfError(
        stream.Launch(plan.executable_id, walker.addresses, walker.scalars, info.qualified)
            .status(),
        info.qualified);
    launches.fetch_add(1, std::memory_order_relaxed);
    // A signature's first launch is waited for, so that the errors its
    // kernel raises where meta inference did not (a dtype the kernel lacks)
    // come at the call, with the CPU's exception type, as on the CPU and
    // CUDA. Later launches stay asynchronous; their errors come at the next
    // sync, unless one of the signature's waited launches failed.
    uint32_t to_wait = plan.launches_to_wait.load(std::memory_order_relaxed);
    while (to_wait > 0 && !plan.launches_to_wait.compare_exchange_weak(
                              to_wait, to_wait - 1, std::memory_order_relaxed)) {
    }
    if (new_signature || to_wait > 0) {
      const absl::Status status = stream.Synchronize();
      if (!status.ok()) {
        plan.launches_to_wait.store(kWaitedLaunchesAfterAnError, std::memory_order_relaxed);
      }
      ThrowIfError(status, info.qualified);
    }
    return call;
  }
}

// Replaces a call's arguments on `stack` by its results.
void PushResults(const c10::OperatorHandle& op, const OpInfo& info, const LaunchedCall& call,
                 Stack& arguments, Stack* stack) {
  torch::jit::drop(*stack, arguments.size());
  size_t next_output = 0;
  for (size_t r = 0; r < info.return_argument.size(); ++r) {
    const int aliased = info.return_argument[r];
    if (aliased >= 0) {
      stack->push_back(std::move(arguments[aliased]));
    } else if (call.plan->list_lengths[r] == 0 &&
               op.schema().returns()[r].type()->kind() == c10::TypeKind::TensorType) {
      stack->emplace_back(call.outputs[next_output++]);
    } else {
      const size_t length = call.plan->list_lengths[r];
      std::vector<at::Tensor> list(call.outputs.begin() + next_output,
                                   call.outputs.begin() + next_output + length);
      next_output += length;
      stack->emplace_back(std::move(list));
    }
  }
}

void Launch(const c10::OperatorHandle& op, const OpInfo& info, Stack* stack,
            bool run_meta = true) {
  const size_t argument_count = op.schema().arguments().size();
  if (std::optional<std::string> reason =
          WhyNotAnExecutable(torch::jit::last(*stack, argument_count))) {
    RunOnCpu(op, info, stack, *reason);
    return;
  }
  Stack arguments(stack->end() - argument_count, stack->end());
  std::optional<c10::DeviceIndex> device = CallDevice(info, arguments);
  TORCH_CHECK(device.has_value(), info.qualified, ": no neuron tensor among its arguments");
  MoveCpuScalarsAndIndices(info, *device, arguments);
  CheckNumbersAsTheCpuDoes(op, info, arguments);
  CheckOverlapAsTheCpuDoes(op, info, arguments);
  c10::DeviceGuard guard(c10::Device(c10::DeviceType::PrivateUse1, *device));
  PromoteIntegerInputsToDefaultDtype(op, info, arguments);
  LaunchedCall call = LaunchArguments(op, info, *device, arguments, run_meta);
  switch (call.outcome) {
    case LaunchOutcome::kTooManyTensors:
      if (info.has_list_arguments &&
          LaunchInSlices(op, info, stack, call.size, kLaunchLimit)) {
        return;
      }
      RunOnCpu(op, info, stack,
               absl::StrFormat("a call of %d tensors and %d scalar bytes exceeds one launch's "
                               "%d and %d, and its list elements depend on each other",
                               call.size.addresses, call.size.scalar_bytes,
                               kLaunchLimit.addresses, kLaunchLimit.scalar_bytes));
      return;
    case LaunchOutcome::kNoMetaInference:
      torch::jit::drop(*stack, argument_count);
      for (c10::IValue& value : arguments) stack->push_back(std::move(value));
      RunOnCpu(op, info, stack,
               call.meta_outcome == MetaOutcome::kNoMetaKernel
                   ? "it has no meta kernel to infer its outputs"
                   : "its meta kernel refuses a call of these shapes, which the CPU's kernel "
                     "accepts");
      return;
    case LaunchOutcome::kLaunched:
      PushResults(op, info, call, arguments, stack);
      return;
  }
}

}  // namespace

void LaunchOnDevice(const c10::OperatorHandle& op, Stack* stack) {
  Launch(op, InfoFor(op), stack);
}

void LaunchOnDeviceWithoutMeta(const c10::OperatorHandle& op, Stack* stack) {
  Launch(op, InfoFor(op), stack, /*run_meta=*/false);
}

void NeuronFallback(const c10::OperatorHandle& op, c10::DispatchKeySet /*keys*/, Stack* stack) {
  const OpInfo& info = InfoFor(op);
  // A library's own operators (torchvision::nms, a user's torch.library
  // ops) exist only in this process: neuron-rtd runs ATen's, and never
  // loads a client's code.
  const std::string& name = op.schema().name();
  if (name.rfind("aten::", 0) != 0 && name.rfind("prims::", 0) != 0) {
    RunOnCpu(op, info, stack, "neuron-rtd runs ATen operators only; this is a library's own");
    return;
  }
  if (!info.unsupported.empty()) {
    RunOnCpu(op, info, stack, absl::StrFormat("an executable cannot take %s", info.unsupported));
    return;
  }
  if (info.is_view) {
    RunView(op, info, stack);
    return;
  }
  Launch(op, info, stack);
}

std::optional<std::vector<at::Tensor>> TryLaunchBorrowed(const c10::OperatorHandle& op,
                                                         const OpInfo& info, Stack& arguments) {
  if (!info.unsupported.empty() || info.is_view) return std::nullopt;
  if (WhyNotAnExecutable(arguments)) return std::nullopt;
  // The boxed path converts integer inputs to a default dtype not float32.
  if (DefaultDtypeIsNotDaemons()) return std::nullopt;
  std::optional<c10::DeviceIndex> device;
  for (const c10::IValue& value : arguments) {
    if (!value.isTensor()) continue;
    const at::Tensor& tensor = value.toTensor();
    if (!tensor.defined()) continue;
    // CPU scalars are moved to the device by the boxed path.
    if (!tensor.is_privateuseone()) return std::nullopt;
    if (!device) device = tensor.device().index();
  }
  if (!device) return std::nullopt;
  CheckOverlapAsTheCpuDoes(op, info, arguments);
  c10::DeviceGuard guard(c10::Device(c10::DeviceType::PrivateUse1, *device));
  LaunchedCall call = LaunchArguments(op, info, *device, arguments, /*run_meta=*/true);
  if (call.outcome != LaunchOutcome::kLaunched) return std::nullopt;
  return std::move(call.outputs);
}

void NoteCpuFallback(const std::string& qualified_name, std::string_view reason) {
  bool first = false;
  {
    absl::MutexLock lock(&registry_mutex);
    first = FallbackSet().insert(qualified_name).second;
  }
  if (first) {
    TORCH_WARN(qualified_name, " runs on the CPU, not on the neuron device (", reason,
               "); every call copies its tensors to the host and back. "
               "torch_neuronx.get_fallback_ops() lists such operators.");
  }
  cpu_fallbacks.fetch_add(1, std::memory_order_relaxed);
}

std::vector<std::string> FallbackOps() {
  absl::MutexLock lock(&registry_mutex);
  return std::vector<std::string>(FallbackSet().begin(), FallbackSet().end());
}

GenericOpStats GetGenericOpStats() {
  return GenericOpStats{.executables = executables_loaded.load(),
                        .launches = launches.load(),
                        .plan_cache_hits = plan_hits.load(),
                        .cpu_fallbacks = cpu_fallbacks.load()};
}

}  // namespace torch_neuronx
