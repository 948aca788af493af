#include "csrc/aten/internal/CpuChecks.h"

#include <ATen/core/Tensor.h>
#include <ATen/ExpandUtils.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/core/enum_tag.h>
#include <ATen/ops/addcdiv_meta_dispatch.h>
#include <ATen/ops/empty.h>
#include <c10/core/CPUAllocator.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/synchronization/mutex.h"

namespace torch_neuronx::internal {

void CheckNumbersAsTheCpuDoes(const c10::OperatorHandle& op, const OpInfo& info,
                              const torch::jit::Stack& arguments) {
  if (!info.checks_numbers_on_cpu) return;
  torch::jit::Stack on_cpu;
  on_cpu.reserve(arguments.size());
  const at::Tensor& self = arguments[0].toTensor();
  on_cpu.emplace_back(at::empty({0}, self.options().device(at::kCPU)));
  for (size_t i = 1; i < arguments.size(); ++i) {
    if (info.kinds[i] == ArgKind::kGenerator) {
      on_cpu.emplace_back();
    } else {
      on_cpu.push_back(arguments[i]);
    }
  }
  op.callBoxed(on_cpu);
}

namespace {

// Whether the per-tensor operator of foreach operator `name` (aten::add of
// aten::_foreach_add_) is pointwise (ATen's tag), so that its tensors
// broadcast: aten::_foreach_mm's multiply matrices.
bool PerTensorOperatorIsPointwise(std::string_view name) {
  std::string base(name.substr(std::string_view("aten::_foreach_").size()));
  if (base.ends_with('_')) base.pop_back();
  for (const char* overload : {"", "Tensor", "Tensor_Tensor", "Scalar"}) {
    std::optional<c10::OperatorHandle> per_tensor =
        c10::Dispatcher::singleton().findOp({"aten::" + base, overload});
    if (per_tensor.has_value() && per_tensor->hasSchema()) {
      return per_tensor->hasTag(at::Tag::pointwise);
    }
  }
  return false;
}

}  // namespace

void CheckForeachAsTheCpuDoes(const c10::OperatorHandle& op,
                              const torch::jit::Stack& arguments) {
  const c10::OperatorName& name = op.operator_name();
  if (!name.name.starts_with("aten::_foreach_")) return;
  std::vector<std::vector<at::Tensor>> lists;
  for (const c10::IValue& value : arguments) {
    if (value.isTensorList()) lists.push_back(value.toTensorVector());
  }
  if (lists.size() < 2 || !PerTensorOperatorIsPointwise(name.name)) return;
  for (const std::vector<at::Tensor>& list : lists) {
    // The meta kernel's own message for lists of different lengths.
    if (list.size() != lists[0].size()) return;
  }
  const bool in_place = name.name.ends_with("_");
  const bool addcdiv = name.name.starts_with("aten::_foreach_addcdiv") && lists.size() == 3;
  for (size_t i = 0; i < lists[0].size(); ++i) {
    const at::Tensor& self = lists[0][i];
    if (addcdiv && at::isIntegralType(lists[1][i].scalar_type(), /*includeBool=*/true) &&
        at::isIntegralType(lists[2][i].scalar_type(), /*includeBool=*/true)) {
      // addcdiv's C++ meta raises the CPU's deprecation of integer division.
      auto on_meta = [](const at::Tensor& tensor) {
        return at::empty({0}, tensor.options().device(at::kMeta));
      };
      at::meta::addcdiv(on_meta(self), on_meta(lists[1][i]), on_meta(lists[2][i]));
    }
    at::DimVector shape(self.sizes());
    for (size_t other = 1; other < lists.size(); ++other) {
      shape = at::infer_size_dimvector(shape, lists[other][i].sizes());
    }
    TORCH_CHECK(!in_place || self.sizes() == at::IntArrayRef(shape), "output with shape ",
                self.sizes(), " doesn't match the broadcast shape ", at::IntArrayRef(shape));
  }
}

namespace {

// The call's neuron tensors, with whether the operator writes them.
struct TensorUse {
  at::Tensor tensor;
  bool written = false;
};

std::vector<TensorUse> NeuronTensorsOf(const OpInfo& info, const torch::jit::Stack& arguments) {
  std::vector<TensorUse> uses;
  auto add = [&](const c10::IValue& value, bool written) {
    if (!value.isTensor()) return;
    const at::Tensor& tensor = value.toTensor();
    if (tensor.defined() && tensor.device().type() == c10::DeviceType::PrivateUse1) {
      uses.push_back({tensor, written});
    }
  };
  for (size_t i = 0; i < arguments.size(); ++i) {
    if (arguments[i].isList()) {
      for (const c10::IValue& item : arguments[i].toListRef()) add(item, info.is_written[i]);
    } else {
      add(arguments[i], info.is_written[i]);
    }
  }
  return uses;
}

bool SameView(const at::Tensor& a, const at::Tensor& b) {
  return a.storage_offset() == b.storage_offset() && a.sizes().equals(b.sizes()) &&
         a.strides().equals(b.strides()) && a.scalar_type() == b.scalar_type();
}

enum class Sharing { kNone, kSameViewsOnly, kOverlaps };

// How a written tensor shares memory: with itself, or with another of the
// call's tensors as the same view (x.add_(x)) or otherwise. Only an overlap
// known for certain counts: the CPU's checks do not refuse what they cannot
// tell cheaply either.
Sharing SharingOf(const std::vector<TensorUse>& uses) {
  std::vector<std::pair<const c10::StorageImpl*, size_t>> by_storage;
  by_storage.reserve(uses.size());
  for (size_t i = 0; i < uses.size(); ++i) {
    if (uses[i].written && at::has_internal_overlap(uses[i].tensor) == at::MemOverlap::Yes) {
      return Sharing::kOverlaps;
    }
    by_storage.emplace_back(uses[i].tensor.storage().unsafeGetStorageImpl(), i);
  }
  std::sort(by_storage.begin(), by_storage.end());
  Sharing sharing = Sharing::kNone;
  for (size_t first = 0; first < by_storage.size();) {
    size_t end = first + 1;
    while (end < by_storage.size() && by_storage[end].first == by_storage[first].first) ++end;
    for (size_t a = first; a < end; ++a) {
      const TensorUse& written = uses[by_storage[a].second];
      if (!written.written) continue;
      for (size_t b = first; b < end; ++b) {
        if (a == b) continue;
        if (!SameView(written.tensor, uses[by_storage[b].second].tensor)) {
          return Sharing::kOverlaps;
        }
        sharing = Sharing::kSameViewsOnly;
      }
    }
    first = end;
  }
  return sharing;
}

// Operators whose CPU kernel accepted a written argument passed again as
// the same view (TensorIterator's do; index_put_ and put_ do not): asked
// once per operator, since x.add_(x) is common.
absl::Mutex same_view_mutex(absl::kConstInit);
absl::flat_hash_set<std::string>& AcceptSameViews() ABSL_EXCLUSIVE_LOCKS_REQUIRED(same_view_mutex) {
  static auto* names = new absl::flat_hash_set<std::string>();
  return *names;
}

constexpr size_t kReplicaBytes = size_t{64} << 20;

// The words every ATen memory-overlap check raises with (MemoryOverlap.cpp).
constexpr std::string_view kOverlapError = "unsupported operation:";

}  // namespace

void CheckOverlapAsTheCpuDoes(const c10::OperatorHandle& op, const OpInfo& info,
                              const torch::jit::Stack& arguments) {
  if (op.hasTag(at::Tag::nondeterministic_seeded)) return;
  if (std::find(info.is_written.begin(), info.is_written.end(), true) == info.is_written.end()) {
    return;
  }
  const std::vector<TensorUse> uses = NeuronTensorsOf(info, arguments);
  const Sharing sharing = SharingOf(uses);
  if (sharing == Sharing::kNone) return;
  if (sharing == Sharing::kSameViewsOnly) {
    absl::MutexLock lock(&same_view_mutex);
    if (AcceptSameViews().contains(info.qualified)) return;
  }
  // One zero-filled host storage per device storage, so that the copies
  // share memory as the originals do.
  absl::flat_hash_map<const c10::StorageImpl*, c10::Storage> replicas;
  size_t bytes = 0;
  for (const TensorUse& use : uses) {
    const c10::StorageImpl* storage = use.tensor.storage().unsafeGetStorageImpl();
    if (replicas.contains(storage)) continue;
    bytes += storage->nbytes();
    if (bytes > kReplicaBytes) return;
    c10::Storage replica(c10::Storage::use_byte_size_t(), storage->nbytes(),
                         c10::GetCPUAllocator(), /*resizable=*/true);
    if (storage->nbytes() > 0) std::memset(replica.mutable_data(), 0, storage->nbytes());
    replicas.emplace(storage, std::move(replica));
  }
  auto on_cpu = [&](const c10::IValue& value) -> c10::IValue {
    if (!value.isTensor()) return value;
    const at::Tensor& tensor = value.toTensor();
    if (!tensor.defined() || tensor.device().type() != c10::DeviceType::PrivateUse1) return value;
    at::Tensor copy = at::empty({0}, tensor.options().device(at::kCPU));
    copy.set_(replicas.at(tensor.storage().unsafeGetStorageImpl()), tensor.storage_offset(),
              tensor.sizes(), tensor.strides());
    return copy;
  };
  torch::jit::Stack cpu;
  cpu.reserve(arguments.size());
  for (size_t i = 0; i < arguments.size(); ++i) {
    const c10::IValue& value = arguments[i];
    if (value.isTensorList()) {
      std::vector<at::Tensor> tensors;
      for (const c10::IValue& item : value.toListRef()) tensors.push_back(on_cpu(item).toTensor());
      cpu.emplace_back(std::move(tensors));
    } else if (value.isList() && info.kinds[i] == ArgKind::kOptionalTensorList) {
      c10::List<std::optional<at::Tensor>> tensors;
      for (const c10::IValue& item : value.toListRef()) {
        tensors.push_back(item.isTensor() ? std::optional(on_cpu(item).toTensor()) : std::nullopt);
      }
      cpu.emplace_back(std::move(tensors));
    } else if (value.isDevice()) {
      cpu.emplace_back(c10::Device(c10::kCPU));
    } else {
      cpu.push_back(on_cpu(value));
    }
  }
  try {
    op.callBoxed(cpu);
  } catch (const std::exception& error) {
    // Only the overlap checks' errors are the call's: others depend on the
    // values, which the copies do not have (an integer division by their
    // zeros), and the daemon's run decides them.
    if (std::string_view(error.what()).find(kOverlapError) != std::string_view::npos) throw;
  }
  if (sharing == Sharing::kSameViewsOnly) {
    absl::MutexLock lock(&same_view_mutex);
    AcceptSameViews().insert(info.qualified);
  }
}

}  // namespace torch_neuronx::internal
