#include "csrc/aten/GenericOp.h"

#include <ATen/core/Tensor.h>
#include <ATen/native/CPUFallback.h>
#include <ATen/ops/as_strided_native.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>
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
#include "csrc/runtime/NeuronFunctions.h"
#include "csrc/runtime/NeuronGenerator.h"
#include "neuron/rtd/eager_op.h"

namespace torch_neuronx {
namespace {

namespace rtd = neuron::rtd;
using torch::jit::Stack;

// Room below NEURON_RTD_MAX_LAUNCH_ARGS and the 4 KiB record bound; larger
// foreach calls are split.
constexpr size_t kMaxLaunchAddresses = 192;
constexpr size_t kMaxScalarBytes = 1024;

enum class ArgKind {
  kTensor,
  kTensorList,
  kOptionalTensorList,
  kInt,
  kIntList,
  kFloat,
  kFloatList,
  kBool,
  kBoolList,
  kScalar,
  kScalarList,
  kScalarType,
  kIntLike,  // Layout, MemoryFormat: enums ATen passes as ints
  kDevice,
  kString,
  kGenerator,
  kUnsupported,
};

ArgKind KindOf(const c10::TypePtr& declared) {
  c10::TypePtr type = declared;
  if (auto optional = type->cast<c10::OptionalType>()) type = optional->getElementType();
  switch (type->kind()) {
    case c10::TypeKind::TensorType:
      return ArgKind::kTensor;
    case c10::TypeKind::IntType:
    case c10::TypeKind::SymIntType:
      return ArgKind::kInt;
    case c10::TypeKind::FloatType:
      return ArgKind::kFloat;
    case c10::TypeKind::BoolType:
      return ArgKind::kBool;
    case c10::TypeKind::NumberType:
      return ArgKind::kScalar;
    case c10::TypeKind::ScalarTypeType:
      return ArgKind::kScalarType;
    case c10::TypeKind::LayoutType:
    case c10::TypeKind::MemoryFormatType:
      return ArgKind::kIntLike;
    case c10::TypeKind::DeviceObjType:
      return ArgKind::kDevice;
    case c10::TypeKind::StringType:
      return ArgKind::kString;
    case c10::TypeKind::GeneratorType:
      return ArgKind::kGenerator;
    case c10::TypeKind::ListType: {
      c10::TypePtr element = type->castRaw<c10::ListType>()->getElementType();
      if (auto optional = element->cast<c10::OptionalType>()) {
        return optional->getElementType()->kind() == c10::TypeKind::TensorType
                   ? ArgKind::kOptionalTensorList
                   : ArgKind::kUnsupported;
      }
      switch (element->kind()) {
        case c10::TypeKind::TensorType:
          return ArgKind::kTensorList;
        case c10::TypeKind::IntType:
        case c10::TypeKind::SymIntType:
          return ArgKind::kIntList;
        case c10::TypeKind::FloatType:
          return ArgKind::kFloatList;
        case c10::TypeKind::BoolType:
          return ArgKind::kBoolList;
        case c10::TypeKind::NumberType:
          return ArgKind::kScalarList;
        default:
          return ArgKind::kUnsupported;
      }
    }
    default:
      return ArgKind::kUnsupported;
  }
}

bool IsTensorListType(const c10::TypePtr& type) {
  return type->kind() == c10::TypeKind::ListType &&
         type->castRaw<c10::ListType>()->getElementType()->kind() == c10::TypeKind::TensorType;
}

// What the generic path knows about one operator, from its schema.
struct OpInfo {
  std::string qualified;  // "aten::add.Tensor"
  std::vector<ArgKind> kinds;
  // Why the daemon cannot run it; empty when it can.
  std::string unsupported;
  // Returns alias inputs without writing them (view, transpose, ...).
  bool is_view = false;
  // Per return: the argument it is (in-place and out= overloads), or -1 for
  // a new tensor.
  std::vector<int> return_argument;
  bool returns_new = false;
  // Every tensor argument is written (out=, factories): scalar values may
  // decide output shapes (arange.out), so they are part of the signature.
  bool scalars_in_signature = false;
  // Random without a Generator argument (native_dropout).
  bool seeds_default_generator = false;
  bool has_list_arguments = false;
  // The out= overload a functional operator runs as, when there is one.
  std::optional<c10::OperatorHandle> out_variant;
  // A non-structured out= overload runs as its functional overload, the
  // results copied into the out= tensors at these argument positions: such
  // CPU out= kernels may resize their outputs (mse_loss.out), which daemon
  // memory cannot do.
  std::optional<c10::OperatorHandle> functional_variant;
  std::vector<size_t> out_positions;
};

bool SameAliasSet(const c10::AliasInfo& a, const c10::AliasInfo& b) {
  return a.beforeSets() == b.beforeSets();
}

// Name -> overload names, from every registered operator (built once).
const absl::flat_hash_map<std::string, std::vector<std::string>>& OverloadsByName() {
  static const auto* overloads = [] {
    auto* map = new absl::flat_hash_map<std::string, std::vector<std::string>>();
    for (const c10::OperatorName& name : c10::Dispatcher::singleton().getAllOpNames()) {
      (*map)[name.name].push_back(name.overload_name);
    }
    return map;
  }();
  return *overloads;
}

// The other overloads of `schema`'s operator, "out" first (the
// conventional name of an out= overload).
std::vector<c10::OperatorHandle> OtherOverloads(const c10::FunctionSchema& schema) {
  std::vector<c10::OperatorHandle> handles;
  const auto& overloads = OverloadsByName();
  auto it = overloads.find(schema.name());
  if (it == overloads.end()) return handles;
  for (const std::string& overload : it->second) {
    if (overload == schema.overload_name()) continue;
    std::optional<c10::OperatorHandle> handle =
        c10::Dispatcher::singleton().findOp({schema.name(), overload});
    if (handle && handle->hasSchema()) handles.push_back(*handle);
  }
  std::stable_partition(handles.begin(), handles.end(), [](const c10::OperatorHandle& handle) {
    return handle.schema().overload_name() == "out";
  });
  return handles;
}

void FindOutVariant(const c10::FunctionSchema& schema, OpInfo& info) {
  const size_t argument_count = schema.arguments().size();
  const size_t return_count = schema.returns().size();
  for (const c10::OperatorHandle& handle : OtherOverloads(schema)) {
    const c10::FunctionSchema& candidate = handle.schema();
    if (candidate.arguments().size() != argument_count + return_count) continue;
    bool matches = true;
    for (size_t i = 0; i < argument_count && matches; ++i) {
      const c10::Argument& ours = schema.arguments()[i];
      const c10::Argument& theirs = candidate.arguments()[i];
      matches = ours.name() == theirs.name() && *ours.type() == *theirs.type();
    }
    for (size_t i = argument_count; i < argument_count + return_count && matches; ++i) {
      const c10::Argument& out = candidate.arguments()[i];
      const c10::TypePtr& result = schema.returns()[i - argument_count].type();
      const bool same_kind = result->kind() == c10::TypeKind::TensorType
                                 ? out.type()->kind() == c10::TypeKind::TensorType
                                 : IsTensorListType(out.type());
      matches = out.alias_info() != nullptr && out.alias_info()->isWrite() && same_kind;
    }
    if (!matches) continue;
    info.out_variant = handle;
    return;
  }
}

// Structured kernels share one meta function between their functional and
// out= overloads, and their out= kernels only resize an output whose shape
// is wrong. ATen registers a CompositeExplicitAutogradNonFunctional kernel
// for exactly those (it computes the meta, allocates, and calls out=).
bool IsStructured(const c10::OperatorHandle& functional) {
  return functional.hasKernelForDispatchKey(
      c10::DispatchKey::CompositeExplicitAutogradNonFunctional);
}

void FindFunctionalVariant(const c10::FunctionSchema& schema, OpInfo& info) {
  std::vector<size_t> inputs;
  for (size_t i = 0; i < schema.arguments().size(); ++i) {
    const c10::Argument& argument = schema.arguments()[i];
    const bool out = argument.kwarg_only() && argument.alias_info() != nullptr &&
                     argument.alias_info()->isWrite();
    (out ? info.out_positions : inputs).push_back(i);
  }
  if (info.out_positions.empty() || info.out_positions.size() != schema.returns().size()) {
    info.out_positions.clear();
    return;
  }
  for (const c10::OperatorHandle& handle : OtherOverloads(schema)) {
    const c10::FunctionSchema& candidate = handle.schema();
    if (candidate.arguments().size() != inputs.size() ||
        candidate.returns().size() != info.out_positions.size()) {
      continue;
    }
    bool matches = true;
    for (size_t i = 0; i < inputs.size() && matches; ++i) {
      const c10::Argument& ours = schema.arguments()[inputs[i]];
      const c10::Argument& theirs = candidate.arguments()[i];
      matches = ours.name() == theirs.name() && *ours.type() == *theirs.type() &&
                theirs.alias_info() == nullptr;
    }
    for (const c10::Argument& result : candidate.returns()) {
      matches &= result.alias_info() == nullptr &&
                 result.type()->kind() == c10::TypeKind::TensorType;
    }
    if (matches) {
      // A structured out= kernel writes the given outputs as its functional
      // overload would: it runs as it is. Losses with a `reduction` reduce
      // into their output through a resize even when structured.
      const bool reduces = schema.argumentIndexWithName("reduction").has_value();
      if (!IsStructured(handle) || reduces) info.functional_variant = handle;
      if (!info.functional_variant) info.out_positions.clear();
      return;
    }
  }
  info.out_positions.clear();
}

std::unique_ptr<OpInfo> Describe(const c10::OperatorHandle& op) {
  const c10::FunctionSchema& schema = op.schema();
  auto info = std::make_unique<OpInfo>();
  info->qualified = schema.overload_name().empty()
                        ? schema.name()
                        : absl::StrFormat("%s.%s", schema.name(), schema.overload_name());
  bool has_tensor_input = false;
  bool has_generator = false;
  for (const c10::Argument& argument : schema.arguments()) {
    const ArgKind kind = KindOf(argument.real_type());
    info->kinds.push_back(kind);
    if (kind == ArgKind::kUnsupported && info->unsupported.empty()) {
      info->unsupported = absl::StrFormat("argument %s of type %s", argument.name(),
                                          argument.real_type()->str());
    }
    const bool written = argument.alias_info() != nullptr && argument.alias_info()->isWrite();
    if ((kind == ArgKind::kTensor || kind == ArgKind::kTensorList ||
         kind == ArgKind::kOptionalTensorList) &&
        !written) {
      has_tensor_input = true;
    }
    if (kind == ArgKind::kTensorList || kind == ArgKind::kOptionalTensorList ||
        kind == ArgKind::kScalarList) {
      info->has_list_arguments = true;
    }
    has_generator |= kind == ArgKind::kGenerator;
  }
  for (const c10::Argument& result : schema.returns()) {
    const bool tensor = result.type()->kind() == c10::TypeKind::TensorType;
    if (!tensor && !IsTensorListType(result.type()) && info->unsupported.empty()) {
      info->unsupported = absl::StrFormat("it returns %s", result.type()->str());
    }
    int aliased = -1;
    if (const c10::AliasInfo* alias = result.alias_info()) {
      if (!alias->isWrite()) info->is_view = true;
      for (size_t i = 0; i < schema.arguments().size(); ++i) {
        const c10::AliasInfo* argument_alias = schema.arguments()[i].alias_info();
        if (argument_alias != nullptr && SameAliasSet(*argument_alias, *alias)) {
          aliased = static_cast<int>(i);
        }
      }
    }
    info->return_argument.push_back(aliased);
    info->returns_new |= aliased < 0;
  }
  info->scalars_in_signature = !has_tensor_input;
  info->seeds_default_generator =
      !has_generator && op.hasTag(at::Tag::nondeterministic_seeded);
  bool all_new_tensors = !info->is_view && !schema.returns().empty();
  for (size_t i = 0; i < schema.returns().size(); ++i) {
    all_new_tensors &= info->return_argument[i] < 0 &&
                       schema.returns()[i].type()->kind() == c10::TypeKind::TensorType;
  }
  // Only where the out= overload is known to compute exactly what the
  // functional one does into the given tensor: structured and pointwise
  // operators. Others' out= kernels may resize their outputs
  // (mse_loss.out) or expect other result dtypes (native_batch_norm.out);
  // they run functionally and the daemon copies the results into place.
  const bool reduces = schema.argumentIndexWithName("reduction").has_value();
  // Functional foreach operators (_foreach_sqrt) return a list their
  // .out overload writes.
  const bool foreach_list = schema.name().rfind("aten::_foreach_", 0) == 0 &&
                            schema.returns().size() == 1 &&
                            IsTensorListType(schema.returns()[0].type()) &&
                            info->return_argument[0] < 0;
  const bool out_is_equivalent = (op.hasTag(at::Tag::pointwise) && !reduces) || IsStructured(op);
  if (((all_new_tensors && out_is_equivalent) || foreach_list) &&
      schema.returns().size() == 1 && info->unsupported.empty()) {
    FindOutVariant(schema, *info);
  }
  if (!info->returns_new && !info->is_view && info->unsupported.empty()) {
    FindFunctionalVariant(schema, *info);
  }
  return info;
}

absl::Mutex registry_mutex(absl::kConstInit);

const OpInfo& InfoFor(const c10::OperatorHandle& op) {
  static auto* infos = new absl::flat_hash_map<const void*, std::unique_ptr<OpInfo>>();
  const void* key = &op.schema();
  {
    absl::ReaderMutexLock lock(&registry_mutex);
    if (auto it = infos->find(key); it != infos->end()) return *it->second;
  }
  std::unique_ptr<OpInfo> described = Describe(op);
  absl::MutexLock lock(&registry_mutex);
  auto [it, inserted] = infos->try_emplace(key, std::move(described));
  return *it->second;
}

std::set<std::string>& FallbackSet() ABSL_EXCLUSIVE_LOCKS_REQUIRED(registry_mutex) {
  static auto* names = new std::set<std::string>();
  return *names;
}

std::atomic<uint64_t> executables_loaded{0};
std::atomic<uint64_t> launches{0};
std::atomic<uint64_t> plan_hits{0};

// float64 follows TorchNeuron: it runs as float32; complex128 likewise as
// complex64.
at::ScalarType DeviceDtype(at::ScalarType type) {
  if (type == at::kDouble) return at::kFloat;
  if (type == at::kComplexDouble) return at::kComplexFloat;
  return type;
}

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
};

absl::Mutex plan_mutex(absl::kConstInit);
absl::flat_hash_map<std::string, std::shared_ptr<const Plan>>& Plans()
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(plan_mutex) {
  static auto* plans = new absl::flat_hash_map<std::string, std::shared_ptr<const Plan>>();
  return *plans;
}

template <typename T>
void AppendRaw(std::string& key, const T& value) {
  key.append(reinterpret_cast<const char*>(&value), sizeof(value));
}

void AppendInts(std::string& key, c10::IntArrayRef values) {
  AppendRaw(key, static_cast<uint32_t>(values.size()));
  key.append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(int64_t));
}

rtd::ImmediateScalar::Kind ScalarKind(const c10::IValue& value) {
  if (value.isBool()) return rtd::ImmediateScalar::Kind::kBool;
  if (value.isInt()) return rtd::ImmediateScalar::Kind::kInt64;
  return rtd::ImmediateScalar::Kind::kDouble;
}

// One pass over a call's arguments: the signature key, the LAUNCH addresses
// and scalars, and (when `plan_arguments` is set, on a cache miss) the
// executable's argument descriptions. The same walk serves both, so the
// addresses and scalar offsets always match what the executable expects.
class CallWalker {
 public:
  CallWalker(const OpInfo& info, c10::DeviceIndex device, std::vector<rtd::OpValue>* plan)
      : info_(info), device_(device), plan_(plan) {}

  void Walk(Stack& arguments) {
    for (size_t i = 0; i < arguments.size(); ++i) Argument(info_.kinds[i], arguments[i]);
  }

  rtd::TensorLayout Tensor(const at::Tensor& tensor) {
    TORCH_CHECK(tensor.device().type() == c10::DeviceType::PrivateUse1 &&
                    tensor.device().index() == device_,
                info_.qualified, ": expected every tensor on neuron:", static_cast<int>(device_),
                ", got one on ", tensor.device().str());
    const uint32_t index = static_cast<uint32_t>(addresses.size());
    addresses.push_back(reinterpret_cast<uint64_t>(tensor.data_ptr()));
    AppendRaw(key, static_cast<int8_t>(tensor.scalar_type()));
    AppendInts(key, tensor.sizes());
    AppendInts(key, tensor.strides());
    if (plan_ == nullptr) return {};
    return rtd::TensorLayout{.dtype = static_cast<int32_t>(tensor.scalar_type()),
                             .sizes = tensor.sizes().vec(),
                             .strides = tensor.strides().vec(),
                             .address_index = index};
  }

  std::string key;
  std::vector<uint64_t> addresses;
  std::vector<uint8_t> scalars;

 private:
  void Add(rtd::OpValue value) {
    if (plan_ != nullptr) plan_->push_back(std::move(value));
  }

  uint32_t PushScalar(const c10::IValue& value) {
    const auto offset = static_cast<uint32_t>(scalars.size());
    uint8_t bytes[8] = {};
    if (value.isBool()) {
      bytes[0] = value.toBool() ? 1 : 0;
    } else if (value.isInt()) {
      const int64_t number = value.toInt();
      std::memcpy(bytes, &number, 8);
    } else {
      const double number = value.toDouble();
      std::memcpy(bytes, &number, 8);
    }
    scalars.insert(scalars.end(), bytes, bytes + 8);
    return offset;
  }

  void Immediate(const c10::IValue& value) {
    const rtd::ImmediateScalar::Kind kind = ScalarKind(value);
    AppendRaw(key, static_cast<uint8_t>(kind));
    if (info_.scalars_in_signature) {
      const size_t before = scalars.size();
      PushScalar(value);
      key.append(reinterpret_cast<const char*>(scalars.data() + before), 8);
      scalars.resize(before);
    }
    const uint32_t offset = PushScalar(value);
    Add(rtd::ImmediateScalar{.kind = kind, .offset = offset});
  }

  void Argument(ArgKind kind, const c10::IValue& value) {
    if (kind == ArgKind::kGenerator) {
      // No generator given: the device's default one, so that
      // torch.manual_seed makes the call reproducible.
      at::Generator generator =
          value.isNone() ? DefaultGenerator(device_) : value.toGenerator();
      key.push_back('G');
      // The planning walk only needs the offset: drawing a seed there would
      // advance the generator twice on a plan-cache miss.
      const uint64_t seed =
          plan_ != nullptr ? 0 : generator.get<NeuronGenerator>()->NextCallSeed();
      const auto offset = static_cast<uint32_t>(scalars.size());
      PushScalar(c10::IValue(static_cast<int64_t>(seed)));
      Add(rtd::GeneratorSeed{.offset = offset});
      return;
    }
    if (value.isNone()) {
      key.push_back('N');
      Add(rtd::NoneValue{});
      return;
    }
    key.push_back(static_cast<char>('a' + static_cast<int>(kind)));
    switch (kind) {
      case ArgKind::kTensor: {
        const at::Tensor& tensor = value.toTensor();
        if (!tensor.defined()) {
          Add(rtd::NoneValue{});
          return;
        }
        rtd::TensorLayout layout = Tensor(tensor);
        Add(std::move(layout));
        return;
      }
      case ArgKind::kTensorList: {
        std::vector<rtd::TensorLayout> layouts;
        const c10::List<at::Tensor> list = value.toTensorList();
        for (size_t i = 0; i < list.size(); ++i) layouts.push_back(Tensor(list.get(i)));
        Add(std::move(layouts));
        return;
      }
      case ArgKind::kOptionalTensorList: {
        rtd::OptionalTensorLayouts layouts;
        for (const c10::IValue& item : value.toListRef()) {
          if (item.isNone() || !item.toTensor().defined()) {
            key.push_back('N');
            layouts.emplace_back(std::nullopt);
          } else {
            layouts.emplace_back(Tensor(item.toTensor()));
          }
        }
        Add(std::move(layouts));
        return;
      }
      case ArgKind::kInt:
      case ArgKind::kIntLike: {
        const int64_t number = value.toInt();
        AppendRaw(key, number);
        Add(number);
        return;
      }
      case ArgKind::kIntList: {
        const std::vector<int64_t> numbers = value.toIntVector();
        AppendInts(key, numbers);
        Add(numbers);
        return;
      }
      case ArgKind::kBool: {
        const bool flag = value.toBool();
        key.push_back(flag ? '1' : '0');
        Add(flag);
        return;
      }
      case ArgKind::kBoolList: {
        std::vector<bool> flags;
        for (const c10::IValue& item : value.toListRef()) {
          flags.push_back(item.toBool());
          key.push_back(flags.back() ? '1' : '0');
        }
        Add(std::move(flags));
        return;
      }
      case ArgKind::kFloatList: {
        std::vector<double> numbers = value.toDoubleVector();
        for (double number : numbers) AppendRaw(key, number);
        Add(std::move(numbers));
        return;
      }
      case ArgKind::kFloat:
      case ArgKind::kScalar:
        Immediate(value);
        return;
      case ArgKind::kScalarList: {
        const auto& items = value.toListRef();
        const rtd::ImmediateScalar::Kind list_kind =
            items.empty() ? rtd::ImmediateScalar::Kind::kDouble : ScalarKind(items[0]);
        AppendRaw(key, static_cast<uint8_t>(list_kind));
        AppendRaw(key, static_cast<uint32_t>(items.size()));
        const auto offset = static_cast<uint32_t>(scalars.size());
        for (const c10::IValue& item : items) {
          TORCH_CHECK(ScalarKind(item) == list_kind, info_.qualified,
                      ": a scalar list mixes ints, floats and bools");
          PushScalar(item);
        }
        Add(rtd::ImmediateScalarList{
            .kind = list_kind, .offset = offset, .count = static_cast<uint32_t>(items.size())});
        return;
      }
      case ArgKind::kScalarType: {
        const at::ScalarType type = DeviceDtype(value.toScalarType());
        AppendRaw(key, static_cast<int8_t>(type));
        Add(rtd::ScalarTypeValue{.dtype = static_cast<int32_t>(type)});
        return;
      }
      case ArgKind::kDevice:
        Add(rtd::DeviceValue{});
        return;
      case ArgKind::kString: {
        const std::string text = value.toStringRef();
        AppendRaw(key, static_cast<uint32_t>(text.size()));
        key.append(text);
        Add(text);
        return;
      }
      case ArgKind::kGenerator:
        return;  // handled above
      case ArgKind::kUnsupported:
        TORCH_CHECK(false, info_.qualified, ": internal error: unsupported argument reached ",
                    "the device path");
    }
  }

  const OpInfo& info_;
  const c10::DeviceIndex device_;
  std::vector<rtd::OpValue>* const plan_;
};

// The device a call runs on: that of its first neuron tensor, else its
// `device=` argument.
std::optional<c10::DeviceIndex> CallDevice(const OpInfo& info, const Stack& arguments) {
  auto neuron_index = [](const at::Tensor& tensor) -> std::optional<c10::DeviceIndex> {
    if (tensor.defined() && tensor.device().type() == c10::DeviceType::PrivateUse1) {
      return tensor.device().index();
    }
    return std::nullopt;
  };
  std::optional<c10::DeviceIndex> from_device_argument;
  for (size_t i = 0; i < arguments.size(); ++i) {
    const c10::IValue& value = arguments[i];
    if (value.isTensor()) {
      if (auto index = neuron_index(value.toTensor())) return index;
    } else if (value.isTensorList() || (value.isList() && info.kinds[i] == ArgKind::kOptionalTensorList)) {
      for (const c10::IValue& item : value.toListRef()) {
        if (item.isTensor()) {
          if (auto index = neuron_index(item.toTensor())) return index;
        }
      }
    } else if (value.isDevice() && value.toDevice().type() == c10::DeviceType::PrivateUse1) {
      from_device_argument = value.toDevice().has_index() ? value.toDevice().index()
                                                          : CurrentDevice();
    }
  }
  return from_device_argument;
}

// CPU tensors of zero dimensions (a Python number wrapped by ATen, a
// torch.tensor(1.0)) are accepted next to device tensors, as CUDA does: they
// are copied to the device.
void MoveCpuScalars(const OpInfo& info, c10::DeviceIndex device, Stack& arguments) {
  const c10::Device target(c10::DeviceType::PrivateUse1, device);
  auto move = [&](const at::Tensor& tensor) -> std::optional<at::Tensor> {
    if (tensor.defined() && tensor.device().is_cpu() && tensor.dim() == 0) {
      return tensor.to(target, DeviceDtype(tensor.scalar_type()));
    }
    return std::nullopt;
  };
  for (size_t i = 0; i < arguments.size(); ++i) {
    c10::IValue& value = arguments[i];
    if (info.kinds[i] == ArgKind::kTensor && value.isTensor()) {
      if (auto moved = move(value.toTensor())) value = *moved;
    } else if (info.kinds[i] == ArgKind::kTensorList) {
      c10::List<at::Tensor> list = value.toTensorList();
      for (size_t j = 0; j < list.size(); ++j) {
        if (auto moved = move(list.get(j))) list.set(j, *moved);
      }
      value = list;
    }
  }
}

at::Tensor ToMeta(const at::Tensor& tensor, bool keep_offset) {
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

enum class MetaOutcome { kOk, kNoMetaKernel };

// Runs `op` on meta tensors. Errors of the operator's own checks (shapes,
// dtypes) propagate to the caller: they are the user's errors, raised at the
// call as on the CPU.
MetaOutcome RunMeta(const c10::OperatorHandle& op, Stack& meta) {
  try {
    op.callBoxed(meta);
  } catch (const c10::NotImplementedError&) {
    return MetaOutcome::kNoMetaKernel;
  }
  return MetaOutcome::kOk;
}

void RunOnCpu(const c10::OperatorHandle& op, const OpInfo& info, Stack* stack,
              const std::string& reason) {
  bool first = false;
  {
    absl::MutexLock lock(&registry_mutex);
    first = FallbackSet().insert(info.qualified).second;
  }
  if (first) {
    TORCH_WARN(info.qualified, " runs on the CPU, not on the neuron device (", reason,
               "); every call copies its tensors to the host and back. "
               "torch_neuronx.get_fallback_ops() lists such operators.");
  }
  at::native::cpu_fallback(op, stack);
}

// Metadata only: the view's sizes, strides and offset from the meta kernel,
// applied to the real tensor's storage.
void RunView(const c10::OperatorHandle& op, const OpInfo& info, Stack* stack) {
  const size_t argument_count = op.schema().arguments().size();
  Stack arguments(stack->end() - argument_count, stack->end());
  Stack meta = ToMetaStack(arguments, /*keep_offset=*/true);
  if (RunMeta(op, meta) != MetaOutcome::kOk) {
    RunOnCpu(op, info, stack, "no meta kernel for this view");
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
// nullptr when the operator has no meta kernel.
std::shared_ptr<const Plan> BuildPlan(const c10::OperatorHandle& op, const OpInfo& info,
                                      c10::DeviceIndex device, Stack& arguments, bool run_meta,
                                      bool* resized) {
  auto plan = std::make_shared<Plan>();
  const c10::FunctionSchema& schema = op.schema();
  Stack meta;
  if (run_meta) {
    meta = ToMetaStack(arguments, /*keep_offset=*/false);
    if (RunMeta(op, meta) == MetaOutcome::kNoMetaKernel) return nullptr;
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
    if (!real.sizes().equals(shaped.sizes())) {
      real.resize_(shaped.sizes());
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
                                         .dtype = DeviceDtype(shaped.scalar_type())});
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

// Splits a call whose lists are too long for one LAUNCH into calls over
// slices of every list argument; list results are concatenated.
bool LaunchInChunks(const c10::OperatorHandle& op, const OpInfo& info, Stack* stack,
                    size_t argument_count, size_t addresses) {
  size_t list_length = 0;
  Stack arguments(stack->end() - argument_count, stack->end());
  for (size_t i = 0; i < argument_count; ++i) {
    if (info.kinds[i] == ArgKind::kTensorList || info.kinds[i] == ArgKind::kScalarList) {
      list_length = std::max(list_length, arguments[i].toListRef().size());
    }
  }
  if (list_length < 2) return false;
  const size_t per_element = (addresses + list_length - 1) / list_length;
  const size_t chunk = std::max<size_t>(1, kMaxLaunchAddresses / std::max<size_t>(per_element, 1));
  torch::jit::drop(*stack, argument_count);
  std::vector<std::vector<at::Tensor>> results(op.schema().returns().size());
  for (size_t begin = 0; begin < list_length; begin += chunk) {
    const size_t end = std::min(list_length, begin + chunk);
    Stack part;
    for (size_t i = 0; i < argument_count; ++i) {
      const ArgKind kind = info.kinds[i];
      if ((kind == ArgKind::kTensorList || kind == ArgKind::kScalarList) &&
          arguments[i].toListRef().size() == list_length) {
        const auto& items = arguments[i].toListRef();
        if (kind == ArgKind::kTensorList) {
          std::vector<at::Tensor> slice;
          for (size_t j = begin; j < end; ++j) slice.push_back(items[j].toTensor());
          part.emplace_back(std::move(slice));
        } else {
          c10::impl::GenericList slice(c10::NumberType::get());
          for (size_t j = begin; j < end; ++j) slice.push_back(items[j]);
          part.emplace_back(std::move(slice));
        }
      } else {
        part.push_back(arguments[i]);
      }
    }
    LaunchOnDevice(op, &part);
    for (size_t r = 0; r < part.size(); ++r) {
      if (part[r].isTensorList()) {
        for (const at::Tensor& tensor : part[r].toTensorVector()) results[r].push_back(tensor);
      }
    }
  }
  for (size_t r = 0; r < op.schema().returns().size(); ++r) {
    if (IsTensorListType(op.schema().returns()[r].type())) {
      stack->emplace_back(results[r]);
    } else {
      stack->push_back(arguments[info.return_argument[r] >= 0 ? info.return_argument[r] : 0]);
    }
  }
  return true;
}

void Launch(const c10::OperatorHandle& op, const OpInfo& info, Stack* stack,
            bool run_meta = true) {
  const size_t argument_count = op.schema().arguments().size();
  Stack arguments(stack->end() - argument_count, stack->end());
  std::optional<c10::DeviceIndex> device = CallDevice(info, arguments);
  TORCH_CHECK(device.has_value(), info.qualified, ": no neuron tensor among its arguments");
  MoveCpuScalars(info, *device, arguments);
  c10::DeviceGuard guard(c10::Device(c10::DeviceType::PrivateUse1, *device));

  CallWalker walker(info, *device, nullptr);
  walker.Walk(arguments);
  if (walker.addresses.size() > kMaxLaunchAddresses || walker.scalars.size() > kMaxScalarBytes) {
    TORCH_CHECK(info.has_list_arguments && LaunchInChunks(op, info, stack, argument_count,
                                                          walker.addresses.size()),
                info.qualified, " takes ", walker.addresses.size(),
                " tensors in one call; a neuron launch takes at most ", kMaxLaunchAddresses);
    return;
  }
  std::string key = std::move(walker.key);
  AppendRaw(key, &info);
  std::shared_ptr<const Plan> plan;
  {
    absl::MutexLock lock(&plan_mutex);
    if (auto it = Plans().find(key); it != Plans().end()) plan = it->second;
  }
  const bool new_signature = plan == nullptr;
  if (!new_signature) {
    plan_hits.fetch_add(1, std::memory_order_relaxed);
  } else {
    bool resized = false;
    plan = BuildPlan(op, info, *device, arguments, run_meta, &resized);
    if (resized) {
      // Outputs took new shapes: their layouts are part of the signature.
      torch::jit::drop(*stack, argument_count);
      for (c10::IValue& value : arguments) stack->push_back(std::move(value));
      Launch(op, info, stack, run_meta);
      return;
    }
    if (plan == nullptr) {
      torch::jit::drop(*stack, argument_count);
      for (c10::IValue& value : arguments) stack->push_back(std::move(value));
      RunOnCpu(op, info, stack, "it has no meta kernel to infer its outputs");
      return;
    }
    absl::MutexLock lock(&plan_mutex);
    Plans().emplace(key, plan);
  }

  std::vector<at::Tensor> outputs;
  outputs.reserve(plan->outputs.size());
  const at::TensorOptions options =
      at::TensorOptions().device(c10::Device(c10::DeviceType::PrivateUse1, *device));
  std::vector<uint64_t>& addresses = walker.addresses;
  for (const OutputSpec& spec : plan->outputs) {
    if (!spec.defined) {
      outputs.emplace_back();
      continue;
    }
    outputs.push_back(at::empty_strided(spec.sizes, spec.strides, options.dtype(spec.dtype)));
    addresses.push_back(reinterpret_cast<uint64_t>(outputs.back().data_ptr()));
  }
  if (info.seeds_default_generator) {
    const uint64_t seed =
        DefaultGenerator(*device).get<NeuronGenerator>()->NextCallSeed();
    const auto* bytes = reinterpret_cast<const uint8_t*>(&seed);
    walker.scalars.insert(walker.scalars.end(), bytes, bytes + 8);
  }
  neuronrt::Stream& stream = RuntimeStream(CurrentStream(*device));
  ThrowIfError(stream.Launch(plan->executable_id, addresses, walker.scalars, info.qualified)
                   .status(),
               info.qualified);
  launches.fetch_add(1, std::memory_order_relaxed);
  // A signature's first launch is waited for, so that the errors its kernel
  // raises where meta inference did not (a dtype the kernel lacks) come at
  // the call, with the CPU's exception type, as on the CPU and CUDA. Later
  // launches stay asynchronous; their errors come at the next sync.
  if (new_signature) ThrowIfError(stream.Synchronize(), info.qualified);

  torch::jit::drop(*stack, argument_count);
  size_t next_output = 0;
  for (size_t r = 0; r < info.return_argument.size(); ++r) {
    const int aliased = info.return_argument[r];
    if (aliased >= 0) {
      stack->push_back(arguments[aliased]);
    } else if (plan->list_lengths[r] == 0 &&
               op.schema().returns()[r].type()->kind() == c10::TypeKind::TensorType) {
      stack->emplace_back(outputs[next_output++]);
    } else {
      std::vector<at::Tensor> list(outputs.begin() + next_output,
                                   outputs.begin() + next_output + plan->list_lengths[r]);
      next_output += plan->list_lengths[r];
      stack->emplace_back(std::move(list));
    }
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

std::vector<std::string> FallbackOps() {
  absl::MutexLock lock(&registry_mutex);
  return std::vector<std::string>(FallbackSet().begin(), FallbackSet().end());
}

GenericOpStats GetGenericOpStats() {
  return GenericOpStats{.executables = executables_loaded.load(),
                        .launches = launches.load(),
                        .plan_cache_hits = plan_hits.load()};
}

}  // namespace torch_neuronx
