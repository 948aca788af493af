#include "csrc/aten/internal/MetaTensors.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>
#include <ATen/ops/scalar_tensor.h>

#include <functional>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"

namespace torch_neuronx::internal {
namespace {

using torch::jit::Stack;

absl::Mutex cpp_meta_mutex(absl::kConstInit);

using CppMetaMap =
    absl::flat_hash_map<c10::OperatorName, c10::KernelFunction, std::hash<c10::OperatorName>>;
CppMetaMap& CppMetaKernels() ABSL_EXCLUSIVE_LOCKS_REQUIRED(cpp_meta_mutex) {
  static auto* kernels = new CppMetaMap();
  return *kernels;
}

std::optional<c10::KernelFunction> CppMetaFor(const c10::OperatorHandle& op) {
  absl::ReaderMutexLock lock(&cpp_meta_mutex);
  auto it = CppMetaKernels().find(op.operator_name());
  if (it == CppMetaKernels().end()) return std::nullopt;
  return it->second;
}

at::Tensor ToMeta(const at::Tensor& tensor, bool keep_offset) {
  if (tensor.unsafeGetTensorImpl()->is_wrapped_number()) {
    // A Python number passed where a tensor goes (x // 2): as PyTorch hands
    // it to meta kernels, a wrapped 0-d CPU tensor, which takes no part in
    // type promotion. Its value is not the call's (the device holds that);
    // 1 fails no check a meta kernel makes of a number (a division by it).
    at::Tensor number = at::scalar_tensor(1, tensor.options().device(c10::kCPU));
    number.unsafeGetTensorImpl()->set_wrapped_number(true);
    return number;
  }
  const at::TensorOptions options = tensor.options().device(c10::kMeta);
  if (!keep_offset) return at::empty_strided(tensor.sizes(), tensor.strides(), options);
  int64_t extent = 1;
  for (int64_t d = 0; d < tensor.dim(); ++d) {
    if (tensor.size(d) == 0) {
      extent = 0;
      break;
    }
    extent += (tensor.size(d) - 1) * tensor.stride(d);
  }
  at::Tensor storage = at::empty({tensor.storage_offset() + extent}, options);
  return storage.as_strided(tensor.sizes(), tensor.strides(), tensor.storage_offset());
}

// Past this many bytes of arguments, a call the meta kernel refused keeps
// the meta kernel's error rather than zero-filling host memory to ask the CPU.
constexpr int64_t kCpuRetryBytes = int64_t{64} << 20;

// `meta`'s arguments as zero-filled CPU tensors of the same shapes, strides
// and dtypes (zeros: a valid index into any non-empty dimension), or nullopt
// past kCpuRetryBytes.
std::optional<Stack> ToCpuZeros(const Stack& meta) {
  int64_t bytes = 0;
  auto to_cpu = [&](const at::Tensor& tensor) {
    if (!tensor.defined() || !tensor.is_meta()) return tensor;
    bytes += static_cast<int64_t>(tensor.storage().nbytes());
    at::Tensor cpu = at::empty_strided(tensor.sizes(), tensor.strides(),
                                       tensor.options().device(c10::kCPU));
    cpu.zero_();
    return cpu;
  };
  Stack cpu;
  cpu.reserve(meta.size());
  for (const c10::IValue& value : meta) {
    if (value.isTensor()) {
      cpu.emplace_back(to_cpu(value.toTensor()));
    } else if (value.isTensorList()) {
      std::vector<at::Tensor> tensors;
      for (const at::Tensor& tensor : value.toTensorVector()) tensors.push_back(to_cpu(tensor));
      cpu.emplace_back(std::move(tensors));
    } else if (value.isOptionalTensorList()) {
      c10::List<std::optional<at::Tensor>> tensors;
      for (const std::optional<at::Tensor>& tensor : value.toOptionalTensorList().vec()) {
        tensors.push_back(tensor ? std::optional(to_cpu(*tensor)) : std::nullopt);
      }
      cpu.emplace_back(std::move(tensors));
    } else if (value.isDevice()) {
      cpu.emplace_back(c10::Device(c10::kCPU));
    } else {
      cpu.push_back(value);
    }
    if (bytes > kCpuRetryBytes) return std::nullopt;
  }
  return cpu;
}

// Called with the arguments of a call whose meta kernel raised: runs the
// CPU's kernel on them, so that where the CPU refuses the call too, the user
// sees the CPU's exception (its type and words, which programs and PyTorch's
// tests match on; PyTorch's Python meta kernels word many checks as its
// reference implementations do, and check some in another order). Returns
// whether the CPU accepts the call: false when it cannot be asked without
// drawing random numbers or filling too much memory.
bool CpuAcceptsOrThrowsItsError(const c10::OperatorHandle& op, const Stack& meta) {
  if (op.hasTag(at::Tag::nondeterministic_seeded)) return false;
  std::optional<Stack> cpu = ToCpuZeros(meta);
  if (!cpu) return false;
  op.callBoxed(*cpu);
  return true;
}

}  // namespace

Stack ToMetaStack(const Stack& arguments, bool keep_offset) {
  Stack meta;
  meta.reserve(arguments.size());
  for (const c10::IValue& value : arguments) {
    if (value.isTensor()) {
      const at::Tensor& tensor = value.toTensor();
      meta.emplace_back(tensor.defined() ? ToMeta(tensor, keep_offset) : tensor);
    } else if (value.isTensorList()) {
      std::vector<at::Tensor> tensors;
      for (const at::Tensor& tensor : value.toTensorVector()) {
        tensors.push_back(ToMeta(tensor, keep_offset));
      }
      meta.emplace_back(std::move(tensors));
    } else if (value.isList() && !value.toListRef().empty() &&
               (value.toListRef()[0].isTensor() || value.toListRef()[0].isNone()) &&
               !value.isIntList() && !value.isDoubleList() && !value.isBoolList()) {
      c10::List<std::optional<at::Tensor>> tensors;
      for (const c10::IValue& item : value.toListRef()) {
        // Python indexing passes a slice's place as an undefined tensor.
        if (item.isNone() || !item.toTensor().defined()) {
          tensors.push_back(std::nullopt);
        } else {
          tensors.push_back(ToMeta(item.toTensor(), keep_offset));
        }
      }
      meta.emplace_back(std::move(tensors));
    } else if (value.isDevice()) {
      meta.emplace_back(c10::Device(c10::kMeta));
    } else if (value.isGenerator()) {
      meta.emplace_back();
    } else {
      meta.push_back(value);
    }
  }
  return meta;
}

void UseCppMeta(const c10::OperatorHandle& op, c10::KernelFunction meta) {
  absl::MutexLock lock(&cpp_meta_mutex);
  CppMetaKernels().insert_or_assign(op.operator_name(), std::move(meta));
}

MetaOutcome RunMeta(const c10::OperatorHandle& op, Stack& meta) {
  if (std::optional<c10::KernelFunction> kernel = CppMetaFor(op)) {
    kernel->callBoxed(op, c10::DispatchKeySet(c10::DispatchKey::Meta), &meta);
    return MetaOutcome::kOk;
  }
  const Stack arguments = meta;  // callBoxed consumes them
  try {
    op.callBoxed(meta);
  } catch (const c10::NotImplementedError&) {
    return MetaOutcome::kNoMetaKernel;
  } catch (...) {
    if (CpuAcceptsOrThrowsItsError(op, arguments)) {
      return MetaOutcome::kMetaKernelRefusesWhatTheCpuAccepts;
    }
    throw;
  }
  return MetaOutcome::kOk;
}

}  // namespace torch_neuronx::internal
